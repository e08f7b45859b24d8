package sqlengine_test

import (
	"testing"

	"github.com/northpole-workshop/northpole/internal/contract"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
	"github.com/northpole-workshop/northpole/internal/sqlengine"
	"github.com/northpole-workshop/northpole/internal/testsupport/plans"
)

// TestRandomizedPlansEqualReference: randomized inputs (disorder, late,
// duplicate and bad records, several partition counts, windows and
// lateness, runs across the Unix epoch, runs cut short) on which every
// engine must equal the reference on all five sets, dead reasons included.
func TestRandomizedPlansEqualReference(t *testing.T) {
	const runs = 40
	eachEngine(t, func(t *testing.T, e *sqlengine.Engine) {
		var total, late, dup, dead, open, lateCopies, reused int
		for i := range runs {
			r := plans.Random(int64(i + 1))
			in := r.Inputs(t)
			got := runAndCompare(t, e, in, r.Window, r.Lateness)
			c := got.Counts()
			literal := contract.Compute(in, contract.Params{Window: r.Window, Lateness: r.Lateness}, contract.Literal)
			if lc := literal.Counts(); lc.Unpacked+lc.Spare > c.Unpacked+c.Spare {
				open++
			}
			if c.Packed == 0 {
				t.Errorf("%v: nothing packed: the run tests little", r)
			}
			total += len(in)
			late += c.Late
			dead += c.Dead
			for _, d := range got.Dead {
				if d.Reason == string(record.ReasonDuplicate) {
					dup++
				}
			}
			lc, ru := idReuse(got)
			lateCopies += lc
			reused += ru
			if t.Failed() {
				t.Fatalf("%v: stopping at the first run that differs", r)
			}
		}
		// The runs must exercise what they claim to, late copies of one id
		// included (the elves re-send records; under the contract's second
		// version a copy sent after its window closed is late, not a
		// duplicate). The elves never reuse an id in another window: the
		// clock runs (TestRandomizedClocksEqualReference) do.
		if late == 0 || dup == 0 || dead == dup || open == 0 || lateCopies == 0 {
			t.Errorf("the runs had %d late, %d duplicate, %d other dead rows, %d runs with open windows, %d late rows sharing an id: some case is not exercised",
				late, dup, dead-dup, open, lateCopies)
		}
		t.Logf("%d runs, %d input records: %d late, %d duplicates, %d other dead letters, %d runs with windows left open, %d late rows sharing their id with another late row, %d ids items in several windows",
			runs, total, late, dup, dead-dup, open, lateCopies, reused)
	})
}

// idReuse counts, in s, the late rows whose (stream, size, id) has another
// late row, and the (stream, size, id)s that are items (packed, unpacked or
// spare) in more than one window: outcomes of the contract's second version,
// where ids are unique within a window only and late comes before duplicate.
func idReuse(s results.Set) (lateCopies, reused int) {
	type sid struct{ stream, size, id string }
	lates := map[sid]int{}
	for _, l := range s.Late {
		lates[sid{l.Stream, l.Size, l.ID}]++
	}
	for _, n := range lates {
		if n > 1 {
			lateCopies += n
		}
	}
	windows := map[sid]map[string]bool{}
	item := func(k sid, w string) {
		if windows[k] == nil {
			windows[k] = map[string]bool{}
		}
		windows[k][w] = true
	}
	for _, p := range s.Packed {
		item(sid{string(record.Toys), p.Size, p.ToyID}, p.WindowStart)
		item(sid{string(record.Boxes), p.Size, p.BoxID}, p.WindowStart)
	}
	for _, u := range s.Unpacked {
		item(sid{string(record.Toys), u.Size, u.ToyID}, u.WindowStart)
	}
	for _, b := range s.Spare {
		item(sid{string(record.Boxes), b.Size, b.BoxID}, b.WindowStart)
	}
	for _, ws := range windows {
		if len(ws) > 1 {
			reused++
		}
	}
	return lateCopies, reused
}

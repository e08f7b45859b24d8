package compare_test

import (
	"testing"

	"github.com/northpole-workshop/northpole/internal/contract"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/sqlengine"
	"github.com/northpole-workshop/northpole/internal/testsupport/sqltest"
)

// TestRandomizedPlansEqualReference: randomized inputs (disorder, late,
// duplicate and bad records, several partition counts, windows and
// lateness, runs across the Unix epoch, runs cut short) on which every
// engine must equal the reference on all five sets, dead reasons included.
func TestRandomizedPlansEqualReference(t *testing.T) {
	const runs = 40
	sqltest.EachEngine(t, func(t *testing.T, e *sqlengine.Engine) {
		var total, late, dup, dead, open, lateCopies, reused int
		for i := range runs {
			r := randomPlan(int64(i + 1))
			in := r.inputs(t)
			got := sqltest.RunAndCompare(t, e, in, r.Window, r.Lateness)
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
			lc, ru := sqltest.IDReuse(got)
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

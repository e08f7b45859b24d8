package sqlengine_test

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/contract"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
	"github.com/northpole-workshop/northpole/internal/sqlengine"
	"github.com/northpole-workshop/northpole/producers"
)

// planRun is one randomized input without Kafka: the elves' deterministic
// plan, interleaved between elves and placed in partitions as Kafka would.
type planRun struct {
	seed                   int64
	toys, boxes, elves     int
	partitions             int32
	start                  time.Time
	window, lateness       time.Duration
	spacing, disorder      time.Duration
	lateRate, dupRate, bad float64
	// cut drops this fraction of each stream's tail, final heartbeats
	// included: a run that stopped early, whose windows are not all closed.
	cut float64
}

func (r planRun) String() string {
	return fmt.Sprintf("seed=%d toys=%d boxes=%d elves=%d p=%d start=%s W=%v L=%v spacing=%v disorder=%v late=%.2f dup=%.2f bad=%.2f cut=%.2f",
		r.seed, r.toys, r.boxes, r.elves, r.partitions, r.start.Format(time.RFC3339), r.window, r.lateness, r.spacing, r.disorder, r.lateRate, r.dupRate, r.bad, r.cut)
}

func randomPlanRun(seed int64) planRun {
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	pick := func(ds ...time.Duration) time.Duration { return ds[rng.IntN(len(ds))] }
	r := planRun{
		seed:       seed,
		toys:       50 + rng.IntN(400),
		boxes:      50 + rng.IntN(400),
		elves:      1 + rng.IntN(4),
		partitions: []int32{1, 2, 3, 4, 8}[rng.IntN(5)],
		start:      producers.DefaultStart,
		window:     pick(time.Second, 2*time.Second, 10*time.Second, 1500*time.Millisecond, 333*time.Microsecond*3000),
		lateness:   pick(0, 500*time.Millisecond, time.Second, 5*time.Second, 1234*time.Microsecond),
		spacing:    pick(time.Millisecond, 10*time.Millisecond, 50*time.Millisecond, 200*time.Millisecond),
		lateRate:   []float64{0, 0.02, 0.1}[rng.IntN(3)],
		dupRate:    []float64{0, 0.03, 0.15}[rng.IntN(3)],
		bad:        []float64{0, 0.03, 0.1, 0.3}[rng.IntN(4)],
	}
	// A third of the runs cross the Unix epoch, where floor and truncation
	// differ.
	if rng.IntN(3) == 0 {
		r.start = time.Unix(0, 0).UTC().Add(-time.Duration(rng.IntN(20)) * time.Second)
	}
	// Disorder up to twice the lateness plus a window, so that some records
	// are late by accident, not only the deliberate ones.
	r.disorder = time.Duration(rng.Int64N(int64(2*r.lateness + r.window)))
	if rng.IntN(3) == 0 {
		r.cut = 0.05 + rng.Float64()*0.4
	}
	return r
}

// inputs makes the run's records: each stream's plan, its elves' messages
// interleaved at random (each elf keeps its own order, as producers.Run
// does), the final heartbeats last, partitions by FNV-1a of the key as sarama
// and goka place them, offsets in order.
func (r planRun) inputs(t testing.TB) []record.Input {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(r.seed), 11))
	var out []record.Input
	elves := func(st record.Stream, count int) producers.Config {
		c := producers.DefaultConfig(st)
		c.Count = count
		c.Elves, c.Seed, c.Start, c.Spacing, c.Disorder = r.elves, r.seed, r.start, r.spacing, r.disorder
		c.LateRate, c.DupRate, c.BadRate = r.lateRate, r.dupRate, r.bad
		c.Window, c.Lateness = r.window, r.lateness
		c.HeartbeatEvery = r.window / 2
		return c
	}
	toys, boxes := elves(record.Toys, r.toys), elves(record.Boxes, r.boxes)
	horizon := producers.Horizon(toys, boxes)
	for _, c := range []producers.Config{toys, boxes} {
		st := c.Stream
		c.FinalHeartbeatAt = horizon
		plan, err := producers.Plan(c)
		if err != nil {
			t.Fatalf("%v: plan: %v", r, err)
		}
		perElf := map[int][]producers.Message{}
		var final []producers.Message
		for _, m := range plan {
			if m.Elf < 0 {
				final = append(final, m)
				continue
			}
			perElf[m.Elf] = append(perElf[m.Elf], m)
		}
		var order []producers.Message
		for {
			var ready []int
			for e := range r.elves {
				if len(perElf[e]) > 0 {
					ready = append(ready, e)
				}
			}
			if len(ready) == 0 {
				break
			}
			e := ready[rng.IntN(len(ready))]
			order = append(order, perElf[e][0])
			perElf[e] = perElf[e][1:]
		}
		order = append(order, final...)
		if r.cut > 0 {
			order = order[:len(order)-int(float64(len(order))*r.cut)]
		}
		offsets := map[int32]int64{}
		for _, m := range order {
			p := partitionOf(m.Key, r.partitions)
			out = append(out, record.Input{Stream: st, Topic: string(st), Partition: p, Offset: offsets[p], Key: m.Key, Value: m.Value})
			offsets[p]++
		}
	}
	return out
}

// partitionOf is sarama's hash partitioner with FNV-1a (goka's default).
func partitionOf(key []byte, n int32) int32 {
	h := fnv.New32a()
	h.Write(key)
	p := int32(h.Sum32()) % n
	if p < 0 {
		p = -p
	}
	return p
}

// TestRandomizedPlansEqualReference: randomized inputs (disorder, late,
// duplicate and bad records, several partition counts, windows and
// lateness, runs across the Unix epoch, runs cut short) on which every
// engine must equal the reference on all five sets, dead reasons included.
func TestRandomizedPlansEqualReference(t *testing.T) {
	const runs = 40
	eachEngine(t, func(t *testing.T, e *sqlengine.Engine) {
		var total, late, dup, dead, open, lateCopies, reused int
		for i := range runs {
			r := randomPlanRun(int64(i + 1))
			in := r.inputs(t)
			got := runAndCompare(t, e, in, r.window, r.lateness)
			c := got.Counts()
			literal := contract.Compute(in, contract.Params{Window: r.window, Lateness: r.lateness}, contract.Literal)
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

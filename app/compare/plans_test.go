package compare_test

// Randomized inputs without Kafka, for the tests that hold the engines
// against the reference: the elves' deterministic plan (producers.Plan),
// interleaved between elves and placed in partitions as Kafka would place
// them.

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/producers"
)

// planRun is one randomized input without Kafka: the elves' deterministic
// plan, interleaved between elves and placed in partitions as Kafka would.
type planRun struct {
	Seed                   int64
	Toys, Boxes, Elves     int
	Partitions             int32
	Start                  time.Time
	Window, Lateness       time.Duration
	Spacing, Disorder      time.Duration
	LateRate, DupRate, Bad float64
	// Cut drops this fraction of each stream's tail, final heartbeats
	// included: a run that stopped early, whose windows are not all closed.
	Cut float64
}

func (r planRun) String() string {
	return fmt.Sprintf("seed=%d toys=%d boxes=%d elves=%d p=%d start=%s W=%v L=%v spacing=%v disorder=%v late=%.2f dup=%.2f bad=%.2f cut=%.2f",
		r.Seed, r.Toys, r.Boxes, r.Elves, r.Partitions, r.Start.Format(time.RFC3339), r.Window, r.Lateness, r.Spacing, r.Disorder, r.LateRate, r.DupRate, r.Bad, r.Cut)
}

// randomPlan is the run of seed: counts, partitions, W and L, spacing,
// disorder and rates drawn at random, a third of the runs across the Unix
// epoch and a third cut short.
func randomPlan(seed int64) planRun {
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	pick := func(ds ...time.Duration) time.Duration { return ds[rng.IntN(len(ds))] }
	r := planRun{
		Seed:       seed,
		Toys:       50 + rng.IntN(400),
		Boxes:      50 + rng.IntN(400),
		Elves:      1 + rng.IntN(4),
		Partitions: []int32{1, 2, 3, 4, 8}[rng.IntN(5)],
		Start:      producers.DefaultStart,
		Window:     pick(time.Second, 2*time.Second, 10*time.Second, 1500*time.Millisecond, 333*time.Microsecond*3000),
		Lateness:   pick(0, 500*time.Millisecond, time.Second, 5*time.Second, 1234*time.Microsecond),
		Spacing:    pick(time.Millisecond, 10*time.Millisecond, 50*time.Millisecond, 200*time.Millisecond),
		LateRate:   []float64{0, 0.02, 0.1}[rng.IntN(3)],
		DupRate:    []float64{0, 0.03, 0.15}[rng.IntN(3)],
		Bad:        []float64{0, 0.03, 0.1, 0.3}[rng.IntN(4)],
	}
	// A third of the runs cross the Unix epoch, where floor and truncation
	// differ.
	if rng.IntN(3) == 0 {
		r.Start = time.Unix(0, 0).UTC().Add(-time.Duration(rng.IntN(20)) * time.Second)
	}
	// Disorder up to twice the lateness plus a window, so that some records
	// are late by accident, not only the deliberate ones.
	r.Disorder = time.Duration(rng.Int64N(int64(2*r.Lateness + r.Window)))
	if rng.IntN(3) == 0 {
		r.Cut = 0.05 + rng.Float64()*0.4
	}
	return r
}

// inputs makes the run's records: each stream's plan, its elves' messages
// interleaved at random (each elf keeps its own order, as producers.Run
// does), the final heartbeats last, partitions by FNV-1a of the key as sarama
// and goka place them, offsets in order.
func (r planRun) inputs(t testing.TB) []record.Input {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(r.Seed), 11))
	var out []record.Input
	elves := func(st record.Stream, count int) producers.Config {
		c := producers.DefaultConfig(st)
		c.Count = count
		c.Elves, c.Seed, c.Start, c.Spacing, c.Disorder = r.Elves, r.Seed, r.Start, r.Spacing, r.Disorder
		c.LateRate, c.DupRate, c.BadRate = r.LateRate, r.DupRate, r.Bad
		c.Window, c.Lateness = r.Window, r.Lateness
		c.HeartbeatEvery = r.Window / 2
		return c
	}
	toys, boxes := elves(record.Toys, r.Toys), elves(record.Boxes, r.Boxes)
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
			for e := range r.Elves {
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
		if r.Cut > 0 {
			order = order[:len(order)-int(float64(len(order))*r.Cut)]
		}
		offsets := map[int32]int64{}
		for _, m := range order {
			p := partitionOf(m.Key, r.Partitions)
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

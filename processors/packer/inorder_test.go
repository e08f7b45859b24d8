package packer

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
)

// TestSequencerReleasesInIssueOrder completes items in random order, with
// barriers and emits interleaved and items added while others are pending,
// and checks that they are released in the order they were added, each once,
// with its own message and error; and that once one write failed, every item
// released after it fails too (no later commit may pass the failed record).
func TestSequencerReleasesInIssueOrder(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 1))
		s := newSequencer()
		var released []int
		var pending []uint64 // sequence numbers not completed yet
		ids := map[uint64]int{}
		msgs := map[int]*sarama.ProducerMessage{}
		errBoom := errors.New("boom")
		barrier := map[int]bool{}
		failAt := -1 // the one emit that fails; none in the even seeds
		if seed%2 == 1 {
			failAt = rng.IntN(1000)
		}
		errFor := func(id int) error {
			if id == failAt && !barrier[id] {
				return errBoom
			}
			return nil
		}
		failed := false // an item that failed was released
		check := func(id int, err error) {
			switch {
			case errFor(id) != nil:
				if !errors.Is(err, errBoom) {
					t.Errorf("seed %d: item %d released with error %v, want its own", seed, id, err)
				}
				failed = true
			case failed:
				if !errors.Is(err, errBoom) {
					t.Errorf("seed %d: item %d released after a failed write with error %v, want one that wraps it", seed, id, err)
				}
			case err != nil:
				t.Errorf("seed %d: item %d released with error %v", seed, id, err)
			}
			released = append(released, id)
		}
		n := 0
		for step := 0; step < 2000; step++ {
			if len(pending) == 0 || rng.IntN(3) > 0 && n < 1000 {
				id := n
				n++
				var seq uint64
				switch rng.IntN(8) {
				case 0:
					// A barrier as the packer adds it: released at once
					// unless an earlier item is pending.
					barrier[id] = true
					s.addDone(seqItem{commit: func(err error) { check(id, err) }})
					continue
				case 1:
					barrier[id] = true
					seq = s.add(seqItem{commit: func(err error) { check(id, err) }})
				default:
					seq = s.add(seqItem{finish: func(m *sarama.ProducerMessage, err error) *goka.Promise {
						if m != msgs[id] {
							t.Errorf("item %d released with another item's message", id)
						}
						check(id, err)
						return nil
					}})
				}
				ids[seq] = id
				pending = append(pending, seq)
				continue
			}
			i := rng.IntN(len(pending))
			seq := pending[i]
			pending = append(pending[:i], pending[i+1:]...)
			id := ids[seq]
			m := &sarama.ProducerMessage{Topic: "t"}
			msgs[id] = m
			s.complete(seq, m, errFor(id))
		}
		for len(pending) > 0 {
			seq := pending[len(pending)-1]
			pending = pending[:len(pending)-1]
			id := ids[seq]
			m := &sarama.ProducerMessage{Topic: "t"}
			msgs[id] = m
			s.complete(seq, m, errFor(id))
		}
		if len(released) != n {
			t.Fatalf("seed %d: %d of %d items released", seed, len(released), n)
		}
		if failAt >= 0 && failAt < n && !failed && !barrier[failAt] {
			t.Fatalf("seed %d: the failing item %d was never released", seed, failAt)
		}
		for i, id := range released {
			if id != i {
				t.Fatalf("seed %d: release %d is item %d, want %d (order %v...)", seed, i, id, i, released[:min(len(released), 20)])
			}
		}
	}
}

// TestCommitInOrder: a message whose callback writes nothing commits only
// once every write issued before it is released; one that writes through
// any of goka.Context's writing methods gets no barrier (its writes, which
// the sequencer orders, hold its commit).
func TestCommitInOrder(t *testing.T) {
	writes := map[string]func(goka.Context){
		"nothing":  func(goka.Context) {},
		"emit":     func(ctx goka.Context) { ctx.Emit("out", "k", []byte("v")) },
		"loopback": func(ctx goka.Context) { ctx.Loopback("k", []byte("v")) },
		"setvalue": func(ctx goka.Context) { ctx.SetValue([]byte("v")) },
		"delete":   func(ctx goka.Context) { ctx.Delete() },
	}
	for name, write := range writes {
		t.Run(name, func(t *testing.T) {
			s := newSequencer()
			// An earlier message's write, still in flight.
			var earlier bool
			seq := s.add(seqItem{finish: func(*sarama.ProducerMessage, error) *goka.Promise { earlier = true; return nil }})
			fc := &countingContext{}
			commitInOrder(func(ctx goka.Context, _ any) { write(ctx) })(s.wrap(fc), nil)
			wantBarrier := name == "nothing"
			if got := len(fc.deferred) == 1; got != wantBarrier || len(fc.deferred) > 1 {
				t.Fatalf("%d commits deferred, want a barrier: %v", len(fc.deferred), wantBarrier)
			}
			if wantBarrier && fc.committed {
				t.Fatal("committed while an earlier write is in flight")
			}
			s.complete(seq, &sarama.ProducerMessage{}, nil)
			if !earlier || wantBarrier && !fc.committed {
				t.Fatalf("after the earlier write's answer: released %v, committed %v", earlier, fc.committed)
			}
		})
	}
	t.Run("outside the group's wrapper", func(t *testing.T) {
		fc := &countingContext{}
		commitInOrder(func(goka.Context, any) {})(fc, nil)
		if len(fc.deferred) != 0 {
			t.Fatal("a barrier without a sequencer")
		}
	})
}

// countingContext is a goka.Context whose writes do nothing and whose
// DeferCommit notes the commit; any other method panics (nil interface).
type countingContext struct {
	gokaContext
	deferred  []func(error)
	committed bool
}

func (c *countingContext) Emit(goka.Stream, string, any, ...goka.ContextOption) {}
func (c *countingContext) Loopback(string, any, ...goka.ContextOption)          {}
func (c *countingContext) SetValue(any, ...goka.ContextOption)                  {}
func (c *countingContext) Delete(...goka.ContextOption)                         {}
func (c *countingContext) DeferCommit() func(error) {
	f := func(err error) { c.committed = err == nil }
	c.deferred = append(c.deferred, f)
	return f
}

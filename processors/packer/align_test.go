package packer

import (
	"math"
	"testing"

	"github.com/northpole-workshop/northpole/internal/record"
)

// TestAlignmentPause: the input ahead in event time by more than the bound
// is paused while the other has records waiting, stays paused until it is
// less than half the bound ahead, and is never paused while the other has
// nothing to give (a stream that went quiet must not stop the other).
func TestAlignmentPause(t *testing.T) {
	const bound = 15
	none := int64(math.MinInt64)
	for _, c := range []struct {
		name string
		al   alignment
		want [2]bool
	}{
		{"together", alignment{made: [2]int64{100, 95}, waiting: [2]bool{true, true}}, [2]bool{false, false}},
		{"toys ahead, boxes waiting", alignment{made: [2]int64{200, 100}, waiting: [2]bool{true, true}}, [2]bool{true, false}},
		{"boxes ahead, toys have nothing waiting", alignment{made: [2]int64{100, 200}, waiting: [2]bool{false, true}}, [2]bool{false, false}},
		{"boxes ahead, toys waiting, boxes not", alignment{made: [2]int64{100, 200}, waiting: [2]bool{true, false}}, [2]bool{false, true}},
		{"toys ahead, boxes have nothing", alignment{made: [2]int64{200, 100}, waiting: [2]bool{true, false}}, [2]bool{false, false}},
		{"just at the bound", alignment{made: [2]int64{115, 100}, waiting: [2]bool{true, true}}, [2]bool{false, false}},
		{"paused, still more than half ahead", alignment{made: [2]int64{110, 100}, waiting: [2]bool{true, true}, paused: [2]bool{true, false}}, [2]bool{true, false}},
		{"paused, caught up to half", alignment{made: [2]int64{107, 100}, waiting: [2]bool{true, true}, paused: [2]bool{true, false}}, [2]bool{false, false}},
		{"one stream not seen yet", alignment{made: [2]int64{200, none}, waiting: [2]bool{true, true}}, [2]bool{false, false}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.al.pause(bound); got != c.want {
				t.Errorf("pause %v, want %v", got, c.want)
			}
		})
	}
}

// TestAlignerProcessed: the aligner keeps the greatest made_at of the valid
// records of each stream and partition and the offset after the last
// record, valid or not.
func TestAlignerProcessed(t *testing.T) {
	a := newAligner(2)
	a.processed(record.Toys, 1, 7, 500, true)
	a.processed(record.Toys, 1, 8, 300, true)  // disorder: the greatest stays
	a.processed(record.Toys, 1, 9, 900, false) // invalid: its made_at does not count
	a.processed(record.Boxes, 0, 3, 100, true)
	a.processed(record.Boxes, 5, 3, 100, true) // a partition beyond the configured ones
	if got := a.made[0][1].Load(); got != 500 {
		t.Errorf("toys/1 made %d, want 500", got)
	}
	if got := a.next[0][1].Load(); got != 10 {
		t.Errorf("toys/1 next %d, want 10", got)
	}
	if got := a.made[0][0].Load(); got != math.MinInt64 {
		t.Errorf("toys/0 made %d, want none", got)
	}
	if got := a.made[1][0].Load(); got != 100 {
		t.Errorf("boxes/0 made %d, want 100", got)
	}
}

// TestAlignerAdvanced: the aligner sees whether any input partition
// processed a record since its last look, and only then.
func TestAlignerAdvanced(t *testing.T) {
	a := newAligner(2)
	var seen [2][]int64
	if a.advanced(&seen) {
		t.Error("advanced before any record")
	}
	a.processed(record.Boxes, 1, 4, 100, false) // an invalid record moves the offset too
	if !a.advanced(&seen) {
		t.Error("not advanced after boxes/1 processed a record")
	}
	if a.advanced(&seen) {
		t.Error("advanced again with nothing processed since")
	}
	a.processed(record.Toys, 0, 9, 100, true)
	a.processed(record.Toys, 0, 10, 100, true)
	if !a.advanced(&seen) || seen[0][0] != 11 || seen[1][1] != 5 {
		t.Errorf("after toys/0 processed two records: seen %v, want toys/0 at 11 and boxes/1 at 5", seen)
	}
}

// TestAlignerWakes: an aligner asleep on idle inputs is woken by the next
// record processed, once; a record processed just before it fell asleep
// keeps it awake.
func TestAlignerWakes(t *testing.T) {
	a := newAligner(2)
	var seen [2][]int64
	if woke := a.sleep(&seen); woke {
		t.Fatal("awake with nothing processed")
	}
	select {
	case <-a.wake:
		t.Fatal("woken with nothing processed")
	default:
	}
	a.processed(record.Toys, 1, 3, 100, true)
	a.processed(record.Toys, 1, 4, 100, true)
	select {
	case <-a.wake:
	default:
		t.Fatal("not woken by a record processed while asleep")
	}
	select {
	case <-a.wake:
		t.Fatal("woken twice")
	default:
	}
	if a.idle.Load() {
		t.Error("still idle after a record")
	}
	if !a.advanced(&seen) {
		t.Error("the records that woke it are not seen as advanced")
	}

	a.processed(record.Boxes, 0, 8, 100, true) // processed while awake: no wake
	if woke := a.sleep(&seen); !woke || a.idle.Load() {
		t.Errorf("sleep after a record processed since the last look: woke %v, idle %v; want awake", woke, a.idle.Load())
	}
	select {
	case <-a.wake:
		t.Error("woken by a record processed while awake")
	default:
	}
}

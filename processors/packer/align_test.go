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

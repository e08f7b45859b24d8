package packer

import (
	"math"
	"slices"

	"github.com/northpole-workshop/northpole/internal/record"
)

// Params are the contract's two durations, in µs.
type Params struct {
	WindowUS   int64
	LatenessUS int64
}

// windowStart is floor(t / W) * W, a true floor also before 1970.
func (p Params) windowStart(t int64) int64 {
	q := t / p.WindowUS
	if t%p.WindowUS != 0 && t < 0 {
		q--
	}
	return q * p.WindowUS
}

// watermark of one stream: max made_at - L, or minus infinity before its first
// record.
func (p Params) watermark(c StreamClock) int64 {
	if !c.Seen {
		return math.MinInt64
	}
	return c.Max - p.LatenessUS
}

// Apply applies one dedupe event to the clock of its size. It returns false
// when the event was already applied (a redelivery after a crash or
// rebalance): then the state is unchanged and nothing must be written.
//
// Events of one (stream, size) arrive in offset order per source partition,
// redeliveries being repeats of earlier ones, so "offset <= last applied in
// its partition" identifies them.
func (s *ClockState) Apply(p Params, rec Observed) bool {
	c := s.clock(rec.Stream)
	if c.applied(rec.Partition, rec.Offset) {
		return false
	}
	ev := ClockEvent{Rec: rec, Window: p.windowStart(rec.MadeUS)}
	switch {
	case rec.Heartbeat:
		ev.Class = ClassHeartbeat
	case rec.Dup:
		ev.Class = ClassDuplicate
	case c.Seen && c.Max-p.LatenessUS >= ev.Window+p.WindowUS:
		ev.Class = ClassLate
	default:
		ev.Class = ClassItem
		ev.Rank = s.rank(rec.Stream, ev.Window)
	}
	if !c.Seen || rec.MadeUS > c.Max {
		c.Max = rec.MadeUS
	}
	ev.NewPartition = c.markApplied(rec.Partition, rec.Offset)
	c.Seen = true
	ev.Closed = s.closeWindows(p)
	s.Ev = ev
	return true
}

// rank counts the item into its open window and returns its rank there.
func (s *ClockState) rank(x record.Stream, start int64) int {
	i, found := slices.BinarySearchFunc(s.Open, start, func(w OpenWindow, t int64) int {
		switch {
		case w.Start < t:
			return -1
		case w.Start > t:
			return 1
		}
		return 0
	})
	if !found {
		s.Open = slices.Insert(s.Open, i, OpenWindow{Start: start})
	}
	w := &s.Open[i]
	if x == record.Boxes {
		w.Boxes++
		return w.Boxes
	}
	w.Toys++
	return w.Toys
}

// closeWindows removes and returns the open windows whose end both watermarks
// have reached. An item can never enter such a window afterwards: it would be
// late, since its stream's watermark is already past the window's end.
func (s *ClockState) closeWindows(p Params) []Closed {
	wm := min(p.watermark(s.Toys), p.watermark(s.Boxes))
	n := 0
	for n < len(s.Open) && s.Open[n].Start+p.WindowUS <= wm {
		n++
	}
	if n == 0 {
		return nil
	}
	out := make([]Closed, n)
	for i, w := range s.Open[:n] {
		out[i] = Closed{Start: w.Start, Toys: w.Toys, Boxes: w.Boxes}
	}
	s.Open = slices.Delete(s.Open, 0, n)
	return out
}

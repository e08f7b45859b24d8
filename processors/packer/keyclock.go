package packer

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/northpole-workshop/northpole/internal/record"
)

// The clock stage's state machine, one per key of the clock table (a packing
// line): keyClock applies a key's records in offset order (apply), decides
// each one's lateness and rank, closes windows, and is restored from its
// decisions (restore). Pure: it knows nothing of goka nor of storage
// (clock.go is its goka side, binlayout.go its decisions' encoding).

// class is what the contract made of a valid record.
type class string

const (
	classItem      class = "item"
	classLate      class = "late"
	classDuplicate class = "dup"
	classHeartbeat class = "hb"
)

// closedWindow reports that window Start of the clock's key is closed, with
// the final number of items of each stream.
type closedWindow struct {
	Start int64 `json:"w"`
	Toys  int   `json:"t"`
	Boxes int   `json:"b"`
}

// decision is what the clock stage decided for one record.
type decision struct {
	Rec    validRecord    `json:"r"`
	Class  class          `json:"c"`
	Window int64          `json:"w"` // window start, µs
	Rank   int            `json:"k,omitempty"`
	Closed []closedWindow `json:"closed,omitempty"`
	// Max is the greatest made_at of the record's (stream, line) once the
	// record is applied, µs: with the record's own position, what a restore
	// from a suffix of the table needs to know of the stream (restore).
	Max int64 `json:"max"`
	// Snapshot, on one decision in snapshotEvery of a partition, holds the
	// partition's stream clocks after it.
	Snapshot *snapshot `json:"snapshot,omitempty"`
	// NewPartition: the first record of its (stream, line) from a second
	// source partition, which the contract rules out (see streamClock). The
	// clock stage logs it; it is not encoded and changes no result.
	NewPartition bool `json:"-"`
}

// streamClock is the clock of one (stream, line).
type streamClock struct {
	Seen bool `json:"seen,omitempty"`
	// Lasts is the greatest source offset applied, per source partition. The
	// contract has every record of a (stream, line) in one partition, so it
	// holds one entry; a producer that breaks that (another partitioner, a
	// changed partition count) adds one per partition, and its records are
	// then applied in arrival order instead of being mistaken for replays.
	Lasts []partOffset `json:"lasts,omitempty"`
	Max   int64        `json:"max"` // greatest made_at seen, µs
}

func (c streamClock) clone() streamClock {
	c.Lasts = slices.Clone(c.Lasts)
	return c
}

// merge takes what o knows beyond c: a greater made_at, later offsets.
func (c *streamClock) merge(o streamClock) {
	if !o.Seen {
		return
	}
	if !c.Seen || o.Max > c.Max {
		c.Max = o.Max
	}
	c.Seen = true
	for _, l := range o.Lasts {
		if !c.applied(l.Partition, l.Offset) {
			c.markApplied(l.Partition, l.Offset)
		}
	}
}

// partOffset is an offset in one source partition.
type partOffset struct {
	Partition int32 `json:"p"`
	Offset    int64 `json:"o"`
}

// applied reports whether the record at (part, off) was already applied.
func (c *streamClock) applied(part int32, off int64) bool {
	if !c.Seen {
		return false
	}
	for _, l := range c.Lasts {
		if l.Partition == part {
			return off <= l.Offset
		}
	}
	return false
}

// markApplied records (part, off) as the last record applied from part. It
// reports whether part is a partition this (stream, line) had not come from.
func (c *streamClock) markApplied(part int32, off int64) (newPartition bool) {
	for i := range c.Lasts {
		if l := &c.Lasts[i]; l.Partition == part {
			l.Offset = off
			return false
		}
	}
	c.Lasts = append(c.Lasts, partOffset{Partition: part, Offset: off})
	return len(c.Lasts) > 1
}

// openWindow counts the items ranked so far in a window that is not closed.
type openWindow struct {
	Start int64 `json:"w"`
	Toys  int   `json:"t"`
	Boxes int   `json:"b"`
}

// keyClock is the clock stage's state for one key. Open holds only windows
// that have items and are not yet closed, sorted by start: in steady state
// about (W+L)/W of them, more while one stream runs ahead of the other in
// event time. Ev is where apply puts the decision of the record it applied,
// which the table gets: the clocks of a partition share one (tablePart.ev),
// cleared once written, so that a line costs no decision's memory. ids lists the dedupe entries of each stream per window (dedupe.go).
type keyClock struct {
	Toys  streamClock  `json:"toys"`
	Boxes streamClock  `json:"boxes"`
	Open  []openWindow `json:"open,omitempty"`
	Ev    *decision    `json:"ev"`
	ids   [2]windowIDs
	size  int // sizeIndex of the key's size, for the metrics
	// lastPlaces is how many slots the line's last forgotten window had:
	// the first piece of its next window starts that large (slots.go).
	lastPlaces int
}

// stream is the clock of stream x.
func (kc *keyClock) stream(x record.Stream) *streamClock {
	if x == record.Boxes {
		return &kc.Boxes
	}
	return &kc.Toys
}

// paramsUS are the contract's two durations, in µs.
type paramsUS struct {
	WindowUS   int64
	LatenessUS int64
}

// windowStart is floor(t / W) * W, a true floor also before 1970.
func (p paramsUS) windowStart(t int64) int64 {
	q := t / p.WindowUS
	if t%p.WindowUS != 0 && t < 0 {
		q--
	}
	return q * p.WindowUS
}

// watermark of one stream: max made_at - L, or minus infinity before its first
// record.
func (p paramsUS) watermark(c streamClock) int64 {
	if !c.Seen {
		return math.MinInt64
	}
	return c.Max - p.LatenessUS
}

// late reports whether a toy or box of stream x in window start is late:
// its stream's watermark (prior_max - L) has reached the window's end.
func (kc *keyClock) late(p paramsUS, x record.Stream, start int64) bool {
	return p.watermark(*kc.stream(x)) >= start+p.WindowUS
}

// apply applies one record, its duplicate decided (admit), to the clock of
// its size. It returns false when the record was already applied (a
// redelivery after a crash or rebalance): then the state is unchanged and
// nothing must be written.
//
// Records of one (stream, line) arrive in offset order per source
// partition, redeliveries being repeats of earlier ones, so "offset <= last
// applied in its partition" identifies them.
func (kc *keyClock) apply(p paramsUS, rec validRecord) bool {
	c := kc.stream(rec.Stream)
	if c.applied(rec.Partition, rec.Offset) {
		return false
	}
	ev := decision{Rec: rec, Window: p.windowStart(rec.MadeUS)}
	switch {
	case rec.Heartbeat:
		ev.Class = classHeartbeat
	case kc.late(p, rec.Stream, ev.Window):
		ev.Class = classLate
	case rec.Dup:
		ev.Class = classDuplicate
	default:
		ev.Class = classItem
		ev.Rank = kc.rank(rec.Stream, ev.Window)
	}
	ev.Rec.Dup = ev.Class == classDuplicate
	if !c.Seen || rec.MadeUS > c.Max {
		c.Max = rec.MadeUS
	}
	ev.Max = c.Max
	ev.NewPartition = c.markApplied(rec.Partition, rec.Offset)
	c.Seen = true
	ev.Closed = kc.closeWindows(p)
	if kc.Ev == nil {
		kc.Ev = new(decision)
	}
	*kc.Ev = ev
	return true
}

// restore applies a decision of the table to the clock as recovery finds
// it, in table order, without deciding anything again. It returns false for
// a record the clock has applied already.
//
// The table may have lost its oldest records (horizon.go), but it always
// holds every item of every window still open, and the last decision of
// every (stream, partition) or a snapshot after it (restoreSnapshot), and so
// the state that restoring what it holds gives is the one the callbacks
// left: the greatest made_at of a stream is the Max of its last decision,
// the last offset of each partition that decision's own, and the item counts
// of an open window the ranks of its items. A window whose first items went with the lost records closes in the
// records kept (only open windows keep theirs), so its partial counts are
// removed by the closing that follows them.
func (kc *keyClock) restore(p paramsUS, ev *decision) (bool, error) {
	rec := &ev.Rec
	c := kc.stream(rec.Stream)
	if c.applied(rec.Partition, rec.Offset) {
		return false, nil
	}
	if w := p.windowStart(rec.MadeUS); w != ev.Window {
		return false, fmt.Errorf("the decision for %s/%d offset %d has window %d, and window %d with this packer's window width: "+
			"the table was written with another window width; run with that one, or under a new group", rec.Stream, rec.Partition, rec.Offset, ev.Window, w)
	}
	c.Max = max(c.Max, ev.Max)
	if !c.Seen {
		c.Max = ev.Max
	}
	c.Seen = true
	ev.NewPartition = c.markApplied(rec.Partition, rec.Offset)
	if ev.Class == classItem {
		w := kc.window(ev.Window)
		if rec.Stream == record.Boxes {
			w.Boxes = max(w.Boxes, ev.Rank)
		} else {
			w.Toys = max(w.Toys, ev.Rank)
		}
	}
	for _, cw := range ev.Closed {
		if i, found := kc.find(cw.Start); found {
			kc.Open = slices.Delete(kc.Open, i, i+1)
			if len(kc.Open) == 0 {
				kc.Open = nil
			}
		}
	}
	return true, nil
}

// find is where window start is in Open, or would be.
func (kc *keyClock) find(start int64) (int, bool) {
	return slices.BinarySearchFunc(kc.Open, start, func(w openWindow, t int64) int {
		return cmp.Compare(w.Start, t)
	})
}

// window is the open window that starts at start, added when it has no
// items yet.
func (kc *keyClock) window(start int64) *openWindow {
	i, found := kc.find(start)
	if !found {
		kc.Open = slices.Insert(kc.Open, i, openWindow{Start: start})
	}
	return &kc.Open[i]
}

// rank counts the item into its open window and returns its rank there.
func (kc *keyClock) rank(x record.Stream, start int64) int {
	w := kc.window(start)
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
func (kc *keyClock) closeWindows(p paramsUS) []closedWindow {
	wm := min(p.watermark(kc.Toys), p.watermark(kc.Boxes))
	n := 0
	for n < len(kc.Open) && kc.Open[n].Start+p.WindowUS <= wm {
		n++
	}
	if n == 0 {
		return nil
	}
	out := make([]closedWindow, n)
	for i, w := range kc.Open[:n] {
		out[i] = closedWindow(w)
	}
	kc.Open = slices.Delete(kc.Open, 0, n)
	if len(kc.Open) == 0 {
		kc.Open = nil // a quiet line keeps no array for windows it no longer has
	}
	return out
}

// snapshot is one piece of a walk over a partition's key clocks: what a
// restore needs of some of its keys beyond their open windows (each
// stream's greatest made_at and last offsets), and the window width and
// lateness they were decided with. A decision carries one now and then
// (clock.go); a walk's pieces, in table order, cover every key the
// partition had when the walk began, so that once a walk is complete the
// records before its first piece are needed for no key's clock, however
// long ago a key went quiet (horizon.go). A piece holds a bounded number of
// keys: what a decision writes does not grow with the lines of its
// partition.
type snapshot struct {
	WindowUS, LatenessUS int64
	// Walk tells the pieces of one walk from another's: a walk cut short
	// (a restart, a rebalance) is never completed, and its pieces must not
	// complete another.
	Walk        uint64
	First, Last bool // the piece begins, ends the walk (a walk of one piece: both)
	Keys        []keyStreams
}

// keyStreams are the two stream clocks of one key.
type keyStreams struct {
	Key         string
	Toys, Boxes streamClock
}

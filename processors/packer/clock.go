package packer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/storage"

	"github.com/northpole-workshop/northpole/internal/record"
)

// The clock stage: one state per size (sizeClock) applies the records of
// that size in offset order, decides lateness and ranks, and closes windows.
// It writes only its table, one record per event: the decision, which holds
// the record it was made for. The table's changelog is the slots stage's
// input, and the states are never written at all: goka's recovery of the
// table applies the records of its decisions again, in order (recoverClock),
// which gives the state they made. So an event's decision and the state it
// leaves are one Kafka record, and what an event writes does not grow with
// the state (a size's open windows, thousands while one input is consumed
// far ahead of the other).

// clock applies one record, its duplicate decided, to the clock of its size
// (lateness, ranks, window closing), the key of ctx, kept in part, and
// records the decision in its table.
func (p *Packer) clock(ctx goka.Context, part *tablePart, obs *validRecord) {
	st := part.clock(ctx.Key())
	if !st.apply(p.params, *obs) {
		return
	}
	if st.Ev.NewPartition {
		p.log.Warn("records of one stream and size arrive from more than one partition; they are processed in arrival order, "+
			"and the reference orders them by (partition, offset), so results may differ from it: partition producers' keys with FNV-1a "+
			"(see README) and do not change the partition count of the input topics",
			"stream", obs.Stream, "size", obs.Size, "partition", obs.Partition, "offset", obs.Offset)
	}
	ctx.SetValue(&st.Ev)
}

// recoverClock is the clock group's update callback: goka calls it for each
// record of the clock table, in order, while it recovers a partition, before
// the partition's callbacks run. It applies the decision's record to the
// clock of its size, as the callback did, and sets the dedupe entry that the
// decision made (a record that was not a heartbeat or a duplicate was the
// first with its id); goka's default keeps the record at the size's key,
// where nothing reads it.
func (p *Packer) recoverClock(ctx goka.UpdateContext, s storage.Storage, key string, value []byte) error {
	if err := goka.DefaultUpdate(ctx, s, key, value); err != nil || value == nil {
		return err
	}
	v, err := binCodec[decision, *decision]{}.Decode(value)
	if err != nil {
		return recoverError(ctx, err)
	}
	ev := v.(*decision)
	sh, err := p.clocks.shard(ctx.Partition())
	if err != nil {
		return recoverError(ctx, err)
	}
	st := sh.clock(key)
	if !st.apply(p.params, ev.Rec) {
		return nil // a record whose decision the table holds twice
	}
	if !st.Ev.sameAs(ev) {
		return recoverError(ctx, fmt.Errorf("the clock's decision for %s/%d offset %d is %s, window %d, rank %d, closing %v here, and %s, window %d, rank %d, closing %v in the table: "+
			"the table was written with another window width or lateness; run with those, or under a new group",
			ev.Rec.Stream, ev.Rec.Partition, ev.Rec.Offset, st.Ev.Class, st.Ev.Window, st.Ev.Rank, st.Ev.Closed, ev.Class, ev.Window, ev.Rank, ev.Closed))
	}
	if rec := &ev.Rec; !rec.Heartbeat && !rec.Dup {
		enc, _ := firstSeenCodec.Encode(&firstSeen{First: rec.Offset, FirstPart: rec.Partition})
		return s.Set(dedupeKey(rec), enc)
	}
	return nil
}

// class is what the contract made of a valid record.
type class string

const (
	classItem      class = "item"
	classLate      class = "late"
	classDuplicate class = "dup"
	classHeartbeat class = "hb"
)

// closedWindow reports that window Start of the clock's size is closed, with the
// final number of items of each stream.
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
	// NewPartition: the first record of its (stream, size) from a second
	// source partition, which the contract rules out (see streamClock). The
	// clock stage logs it; it is not encoded and changes no result.
	NewPartition bool `json:"-"`
}

// streamClock is the clock of one (stream, size).
type streamClock struct {
	Seen bool `json:"seen,omitempty"`
	// Lasts is the greatest source offset applied, per source partition. The
	// contract has every record of a (stream, size) in one partition, so it
	// holds one entry; a producer that breaks that (another partitioner, a
	// changed partition count) adds one per partition, and its records are
	// then applied in arrival order instead of being mistaken for replays.
	Lasts []partOffset `json:"lasts,omitempty"`
	Max   int64        `json:"max"` // greatest made_at seen, µs
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
// reports whether part is a partition this (stream, size) had not come from.
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

// sizeClock is the clock stage's state for one size. Open holds only windows
// that have items and are not yet closed, sorted by start: in steady state
// about (W+L)/W of them, more while one stream runs ahead of the other in
// event time. Ev is the decision of the last record applied, which the table
// gets.
type sizeClock struct {
	Toys  streamClock  `json:"toys"`
	Boxes streamClock  `json:"boxes"`
	Open  []openWindow `json:"open,omitempty"`
	Ev    decision     `json:"ev"`
}

func (s *sizeClock) clock(x record.Stream) *streamClock {
	if x == record.Boxes {
		return &s.Boxes
	}
	return &s.Toys
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

// apply applies one dedupe event to the clock of its size. It returns false
// when the event was already applied (a redelivery after a crash or
// rebalance): then the state is unchanged and nothing must be written.
//
// Events of one (stream, size) arrive in offset order per source partition,
// redeliveries being repeats of earlier ones, so "offset <= last applied in
// its partition" identifies them.
func (s *sizeClock) apply(p paramsUS, rec validRecord) bool {
	c := s.clock(rec.Stream)
	if c.applied(rec.Partition, rec.Offset) {
		return false
	}
	ev := decision{Rec: rec, Window: p.windowStart(rec.MadeUS)}
	switch {
	case rec.Heartbeat:
		ev.Class = classHeartbeat
	case rec.Dup:
		ev.Class = classDuplicate
	case c.Seen && c.Max-p.LatenessUS >= ev.Window+p.WindowUS:
		ev.Class = classLate
	default:
		ev.Class = classItem
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
func (s *sizeClock) rank(x record.Stream, start int64) int {
	i, found := slices.BinarySearchFunc(s.Open, start, func(w openWindow, t int64) int {
		switch {
		case w.Start < t:
			return -1
		case w.Start > t:
			return 1
		}
		return 0
	})
	if !found {
		s.Open = slices.Insert(s.Open, i, openWindow{Start: start})
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
func (s *sizeClock) closeWindows(p paramsUS) []closedWindow {
	wm := min(p.watermark(s.Toys), p.watermark(s.Boxes))
	n := 0
	for n < len(s.Open) && s.Open[n].Start+p.WindowUS <= wm {
		n++
	}
	if n == 0 {
		return nil
	}
	out := make([]closedWindow, n)
	for i, w := range s.Open[:n] {
		out[i] = closedWindow(w)
	}
	s.Open = slices.Delete(s.Open, 0, n)
	return out
}

// sameAs reports whether e decides as o: the same class, window, rank and
// closings.
func (e *decision) sameAs(o *decision) bool {
	return e.Class == o.Class && e.Window == o.Window && e.Rank == o.Rank && slices.Equal(e.Closed, o.Closed)
}

// sizeHint: a decision is mostly its record and the windows it closed.
func (e *decision) sizeHint() int {
	return 64 + len(e.Rec.ID) + len(e.Rec.Raw) + len(e.Rec.Trace.TraceState) + 4*len(e.Closed)
}

// appendBin writes the closed windows, which closeWindows returns in order
// of their starts, as the first start, then each next one as its step from
// the one before in units of the steps' greatest common divisor (W, as every
// start is a multiple of it), with the two counts: about three bytes a
// window, not the eleven of a start and two counts. A record that ends a long
// silence of one stream closes every window the other stream opened
// meanwhile, and must still fit in one Kafka record.
func (e *decision) appendBin(b []byte) []byte {
	b = e.Rec.appendBin(b)
	b = appendStr(b, string(e.Class))
	b = binary.AppendVarint(b, e.Window)
	b = binary.AppendVarint(b, int64(e.Rank))
	b = binary.AppendUvarint(b, uint64(len(e.Closed)))
	if len(e.Closed) == 0 {
		return b
	}
	var unit uint64
	for i := 1; i < len(e.Closed); i++ {
		unit = gcd(unit, uint64(e.Closed[i].Start-e.Closed[i-1].Start))
	}
	b = binary.AppendVarint(b, e.Closed[0].Start)
	b = binary.AppendUvarint(b, max(unit, 1))
	for i, c := range e.Closed {
		if i > 0 {
			b = binary.AppendUvarint(b, uint64(c.Start-e.Closed[i-1].Start)/unit)
		}
		b = binary.AppendVarint(b, int64(c.Toys))
		b = binary.AppendVarint(b, int64(c.Boxes))
	}
	return b
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func (e *decision) readBin(r *binReader) {
	e.Rec.readBin(r)
	e.Class = class(r.str())
	e.Window = r.varint()
	e.Rank = int(r.varint())
	n := r.uvarint()
	if n == 0 || r.err != nil {
		return
	}
	if n > uint64(len(r.b)-r.off) { // each window takes at least 2 bytes
		r.err = errShort
		return
	}
	start, unit := r.varint(), r.uvarint()
	if r.err == nil && unit == 0 {
		r.err = errors.New("closed windows in units of 0 µs")
	}
	e.Closed = make([]closedWindow, 0, n)
	for i := uint64(0); i < n && r.err == nil; i++ {
		if i > 0 {
			d := r.uvarint()
			// The headroom to MaxInt64 is in uint64 arithmetic so that a
			// negative start cannot overflow it.
			hi, dist := bits.Mul64(d, unit)
			if d == 0 || hi != 0 || dist > uint64(math.MaxInt64)-uint64(start) {
				r.err = fmt.Errorf("closed window %d is %d units of %d µs after one at %d", i, d, unit, start)
				return
			}
			start += int64(dist)
		}
		e.Closed = append(e.Closed, closedWindow{Start: start, Toys: int(r.varint()), Boxes: int(r.varint())})
	}
}

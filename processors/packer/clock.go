package packer

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
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
// the record it was made for and its stream's greatest made_at after it. The
// table's changelog is the slots stage's input, and the states are never
// written at all: goka's recovery of the table restores them from the
// decisions (recoverClock). So an event's decision and the state it leaves
// are one Kafka record, and what an event writes does not grow with the
// state (a size's open windows, thousands while one input is consumed far
// ahead of the other).
//
// The table keeps only what a restart needs: the slots group deletes the
// records before the oldest one that a window still open, or the last
// decision of a (size, stream, partition), needs (horizon.go). A restore
// from such a suffix gives the same open windows, watermarks, offsets and
// dedupe entries as one from the first record (see restore).

// clock applies one record, its lateness and duplicate decided, to st, the
// clock of its size (the key of ctx) kept in part, and records the decision
// in its table. key is the record's dedupe entry, "" for a heartbeat or a late record.
func (p *Packer) clock(ctx goka.Context, part *tablePart, st *sizeClock, obs *validRecord, key string) {
	if !st.apply(p.params, *obs) {
		return
	}
	st.Ev.Snapshot = nil
	if obs.Offset%snapshotEvery == 0 {
		// Chosen by the record, so that a replay writes the same decision.
		st.Ev.Snapshot = part.snapshot(p.params)
	}
	if st.Ev.NewPartition {
		p.log.Warn("records of one stream and size arrive from more than one partition; they are processed in arrival order, "+
			"and the reference orders them by (partition, offset), so results may differ from it: partition producers' keys with FNV-1a "+
			"(see README) and do not change the partition count of the input topics",
			"stream", obs.Stream, "size", obs.Size, "partition", obs.Partition, "offset", obs.Offset)
	}
	if st.Ev.Class == classDuplicate {
		// Up to 30 bytes for each window it closes (decision.appendBin).
		p.fitRaw(&st.Ev.Rec, 30*len(st.Ev.Closed))
	}
	if err := part.remember(st, p.params, &st.Ev, key); err != nil {
		ctx.Fail(fmt.Errorf("dedupe entries of size %s in partition %d of %s: %w", obs.Size, ctx.Partition(), part.topic, err))
	}
	ctx.SetValue(&st.Ev)
}

// recoverClock is the clock group's update callback: goka calls it for each
// record of the clock table, in order, while it recovers a partition, before
// the partition's callbacks run. It restores the clock of the decision's
// size from it and sets the dedupe entry that the decision made; goka's
// default keeps the record at the size's key, where nothing reads it.
func (p *Packer) recoverClock(ctx goka.UpdateContext, s storage.Storage, key string, value []byte) error {
	if err := goka.DefaultUpdate(ctx, s, key, value); err != nil || value == nil {
		return err
	}
	v, err := binCodec[decision, *decision]{}.Decode(value)
	if err != nil {
		return recoverError(ctx, err)
	}
	ev := v.(*decision)
	sh, err := p.clocks.part(ctx.Partition())
	if err != nil {
		return recoverError(ctx, err)
	}
	st := sh.clock(key)
	restored, err := st.restore(p.params, ev)
	if err != nil {
		return recoverError(ctx, err)
	}
	if restored {
		key := ""
		if ev.Class == classItem {
			key = dedupeKey(&ev.Rec, ev.Window)
		}
		if err := sh.remember(st, p.params, ev, key); err != nil {
			return recoverError(ctx, err)
		}
	}
	if ev.Snapshot != nil {
		if err := sh.restoreSnapshot(p.params, ev.Snapshot); err != nil {
			return recoverError(ctx, err)
		}
	}
	return nil
}

// snapshotEvery: the decision of each input record whose offset is a
// multiple of it carries a snapshot of the partition's stream clocks.
const snapshotEvery = 256

// snapshot is what a restore needs of every size of a partition beyond its
// open windows: each stream's greatest made_at and last offsets, and the
// window width and lateness they were decided with. A decision carries one
// now and then, so that the last decision of a size that went quiet (or of
// a source partition that sent a few stray records) does not have to be kept
// for ever (horizon.go).
type snapshot struct {
	WindowUS, LatenessUS int64
	Sizes                []sizeStreams
}

type sizeStreams struct {
	Size        string
	Toys, Boxes streamClock
}

// snapshot of the partition's clocks, sizes in order.
func (t *tablePart) snapshot(p paramsUS) *snapshot {
	sn := &snapshot{WindowUS: p.WindowUS, LatenessUS: p.LatenessUS}
	for _, size := range slices.Sorted(maps.Keys(t.clocks)) {
		c := t.clocks[size]
		sn.Sizes = append(sn.Sizes, sizeStreams{Size: size, Toys: c.Toys.clone(), Boxes: c.Boxes.clone()})
	}
	return sn
}

// restoreSnapshot merges a snapshot into the partition's clocks: nothing in
// it is older than what the records before it restored, and records after
// it move the clocks on.
func (t *tablePart) restoreSnapshot(p paramsUS, sn *snapshot) error {
	if sn.WindowUS != p.WindowUS || sn.LatenessUS != p.LatenessUS {
		return fmt.Errorf("the table was written with window %d µs and lateness %d µs, this packer has %d µs and %d µs: "+
			"run with those, or under a new group", sn.WindowUS, sn.LatenessUS, p.WindowUS, p.LatenessUS)
	}
	for _, ss := range sn.Sizes {
		st := t.clock(ss.Size)
		st.Toys.merge(ss.Toys)
		st.Boxes.merge(ss.Boxes)
		for _, x := range []record.Stream{record.Toys, record.Boxes} {
			if err := st.ids[streamIndex(x)].forget(p.watermark(*st.clock(x)), p.WindowUS, t.st.Delete); err != nil {
				return err
			}
		}
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
	// Max is the greatest made_at of the record's (stream, size) once the
	// record is applied, µs: with the record's own position, what a restore
	// from a suffix of the table needs to know of the stream (restore).
	Max int64 `json:"max"`
	// Snapshot, on one decision in snapshotEvery of a partition, holds the
	// partition's stream clocks after it.
	Snapshot *snapshot `json:"snapshot,omitempty"`
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
// gets. ids lists the dedupe entries of each stream per window (dedupe.go).
type sizeClock struct {
	Toys  streamClock  `json:"toys"`
	Boxes streamClock  `json:"boxes"`
	Open  []openWindow `json:"open,omitempty"`
	Ev    decision     `json:"ev"`
	ids   [2]windowIDs
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

// late reports whether a toy or box of stream x in window start is late:
// its stream's watermark (prior_max - L) has reached the window's end.
func (s *sizeClock) late(p paramsUS, x record.Stream, start int64) bool {
	return p.watermark(*s.clock(x)) >= start+p.WindowUS
}

// apply applies one record, its duplicate decided (admit), to the clock of
// its size. It returns false when the record was already applied (a
// redelivery after a crash or rebalance): then the state is unchanged and
// nothing must be written.
//
// Records of one (stream, size) arrive in offset order per source
// partition, redeliveries being repeats of earlier ones, so "offset <= last
// applied in its partition" identifies them.
func (s *sizeClock) apply(p paramsUS, rec validRecord) bool {
	c := s.clock(rec.Stream)
	if c.applied(rec.Partition, rec.Offset) {
		return false
	}
	ev := decision{Rec: rec, Window: p.windowStart(rec.MadeUS)}
	switch {
	case rec.Heartbeat:
		ev.Class = classHeartbeat
	case s.late(p, rec.Stream, ev.Window):
		ev.Class = classLate
	case rec.Dup:
		ev.Class = classDuplicate
	default:
		ev.Class = classItem
		ev.Rank = s.rank(rec.Stream, ev.Window)
	}
	ev.Rec.Dup = ev.Class == classDuplicate
	if !c.Seen || rec.MadeUS > c.Max {
		c.Max = rec.MadeUS
	}
	ev.Max = c.Max
	ev.NewPartition = c.markApplied(rec.Partition, rec.Offset)
	c.Seen = true
	ev.Closed = s.closeWindows(p)
	s.Ev = ev
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
func (s *sizeClock) restore(p paramsUS, ev *decision) (bool, error) {
	rec := &ev.Rec
	c := s.clock(rec.Stream)
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
		w := s.window(ev.Window)
		if rec.Stream == record.Boxes {
			w.Boxes = max(w.Boxes, ev.Rank)
		} else {
			w.Toys = max(w.Toys, ev.Rank)
		}
	}
	for _, cw := range ev.Closed {
		if i, found := s.find(cw.Start); found {
			s.Open = slices.Delete(s.Open, i, i+1)
		}
	}
	s.Ev = *ev
	return true, nil
}

// find is where window start is in Open, or would be.
func (s *sizeClock) find(start int64) (int, bool) {
	return slices.BinarySearchFunc(s.Open, start, func(w openWindow, t int64) int {
		return cmp.Compare(w.Start, t)
	})
}

// window is the open window that starts at start, added when it has no
// items yet.
func (s *sizeClock) window(start int64) *openWindow {
	i, found := s.find(start)
	if !found {
		s.Open = slices.Insert(s.Open, i, openWindow{Start: start})
	}
	return &s.Open[i]
}

// rank counts the item into its open window and returns its rank there.
func (s *sizeClock) rank(x record.Stream, start int64) int {
	w := s.window(start)
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
	b = binary.AppendUvarint(b, uint64(e.Max-e.Rec.MadeUS)) // one byte while made_at is the stream's greatest
	b = e.Snapshot.appendBin(b)
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

func (sn *snapshot) appendBin(b []byte) []byte {
	if sn == nil {
		return append(b, 0)
	}
	b = append(b, 1)
	b = binary.AppendVarint(b, sn.WindowUS)
	b = binary.AppendVarint(b, sn.LatenessUS)
	b = binary.AppendUvarint(b, uint64(len(sn.Sizes)))
	for _, ss := range sn.Sizes {
		b = appendStr(b, ss.Size)
		b = ss.Toys.appendBin(b)
		b = ss.Boxes.appendBin(b)
	}
	return b
}

func readSnapshot(r *binReader) *snapshot {
	if r.byte1() == 0 || r.err != nil {
		return nil
	}
	sn := &snapshot{WindowUS: r.varint(), LatenessUS: r.varint()}
	n := r.uvarint()
	if n > uint64(len(r.b)-r.off) {
		r.err = errShort
		return nil
	}
	for range n {
		ss := sizeStreams{Size: r.str()}
		ss.Toys.readBin(r)
		ss.Boxes.readBin(r)
		sn.Sizes = append(sn.Sizes, ss)
	}
	return sn
}

func (c *streamClock) appendBin(b []byte) []byte {
	b = append(b, flag(c.Seen, 1))
	b = binary.AppendVarint(b, c.Max)
	b = binary.AppendUvarint(b, uint64(len(c.Lasts)))
	for _, l := range c.Lasts {
		b = binary.AppendVarint(b, int64(l.Partition))
		b = binary.AppendVarint(b, l.Offset)
	}
	return b
}

func (c *streamClock) readBin(r *binReader) {
	c.Seen = r.byte1()&1 != 0
	c.Max = r.varint()
	n := r.uvarint()
	if n > uint64(len(r.b)-r.off) {
		r.err = errShort
		return
	}
	for range n {
		c.Lasts = append(c.Lasts, partOffset{Partition: int32(r.varint()), Offset: r.varint()})
	}
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
	e.Max = e.Rec.MadeUS + int64(r.uvarint())
	e.Snapshot = readSnapshot(r)
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

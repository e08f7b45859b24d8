package packer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sync"

	"github.com/lovoo/goka"

	"github.com/northpole-workshop/northpole/internal/record"
)

// The clock stage: one state per size (sizeClock) applies the records of
// that size in offset order, decides lateness and ranks, and closes windows.
// It writes only its table; the table's changelog is the slots stage's input,
// so a decision and the state it came from are one Kafka record (a
// clockValue).

// clock applies one record, its duplicate decided, to the clock of its size
// (lateness, ranks, window closing), the key of ctx, and records the decision
// in its table.
func (p *Packer) clock(ctx goka.Context, obs *validRecord) {
	st := &sizeClock{}
	var prev []byte
	if v := ctx.Value(); v != nil {
		var err error
		prev = v.(*clockValue).State
		if st, err = p.clocks.take(ctx.Key(), prev); err != nil {
			ctx.Fail(fmt.Errorf("clock of size %q: %w", ctx.Key(), err))
		}
	}
	if st.apply(p.params, *obs) {
		if st.Ev.NewPartition {
			p.log.Warn("records of one stream and size arrive from more than one partition; they are processed in arrival order, "+
				"and the reference orders them by (partition, offset), so results may differ from it: partition producers' keys with FNV-1a "+
				"(see README) and do not change the partition count of the input topics",
				"stream", obs.Stream, "size", obs.Size, "partition", obs.Partition, "offset", obs.Offset)
		}
		enc := st.appendStateAfter(make([]byte, 0, len(prev)+64), prev, p.params.WindowUS)
		ctx.SetValue(&clockValue{Ev: st.Ev, State: enc})
		p.clocks.put(ctx.Key(), enc, st)
	}
}

// clockCache holds, per size, the clock state this process last wrote,
// decoded, beside its bytes: decoding thousands of open windows on every
// event was most of what the clock stage's cost grew by on a large backlog.
// A state is taken from it only when the table's bytes are those bytes, so
// it decodes exactly what the table holds, whoever wrote it; and taking
// removes it, so that a state changed by an event whose write then fails
// is never taken again. A size's key lives in one partition, so one
// goroutine at a time uses an entry; the lock is for the map.
type clockCache struct {
	mu sync.Mutex
	m  map[string]cachedClock
}

type cachedClock struct {
	enc []byte
	st  *sizeClock
}

func newClockCache() *clockCache { return &clockCache{m: map[string]cachedClock{}} }

// take returns the state encoded in enc: the cached one when its bytes are
// enc, else a decoded one.
func (c *clockCache) take(key string, enc []byte) (*sizeClock, error) {
	c.mu.Lock()
	e, ok := c.m[key]
	delete(c.m, key)
	c.mu.Unlock()
	if ok && bytes.Equal(e.enc, enc) {
		return e.st, nil
	}
	st := &sizeClock{}
	return st, st.decodeState(enc)
}

// put caches st as the state that enc encodes.
func (c *clockCache) put(key string, enc []byte, st *sizeClock) {
	c.mu.Lock()
	c.m[key] = cachedClock{enc: enc, st: st}
	c.mu.Unlock()
}

// clockValue is the clock table's value for one size: the decision of the
// last event applied, then the size's clock state, still encoded. The slots
// stage reads the table's changelog for the decision alone; only the clock
// stage decodes the state, which is mostly open windows, hundreds of them
// while one input topic is consumed far ahead of the other. Decoding them in
// the slots stage too was about a third of what the packer's CPU per event
// grew by from 1,000,000 to 10,000,000 records (docs/PERFORMANCE.md, "Growth
// with the run").
type clockValue struct {
	Ev decision
	// State is sizeClock.appendState's bytes. Decoded, it aliases the
	// bytes decoded from: goka hands every decode bytes of its own.
	State []byte
}

func (v *clockValue) appendBin(b []byte) []byte {
	return append(v.Ev.appendBin(b), v.State...)
}

func (v *clockValue) readBin(r *binReader) {
	v.Ev.readBin(r)
	if r.err == nil {
		v.State = r.left()
		r.off = len(r.b)
	}
}

func (v *clockValue) sizeHint() int { return v.Ev.sizeHint() + len(v.State) }

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
// event time. Ev is the event of the last record applied, which goes into
// the table value beside the state (clockValue), not into the state.
type sizeClock struct {
	Toys  streamClock  `json:"toys"`
	Boxes streamClock  `json:"boxes"`
	Open  []openWindow `json:"open,omitempty"`
	Ev    decision     `json:"ev"`
	edit  openEdit     // what the last apply did to Open
}

// openEdit is what one apply did to the open windows, so that
// appendStateAfter re-encodes only those it changed: the index of the window
// it counted an item into (before it closed any; -1: none), whether that
// window was new, and how many windows it closed (the first ones).
type openEdit struct {
	at       int
	inserted bool
	closed   int
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
	s.edit = openEdit{at: -1}
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
	s.edit.at, s.edit.inserted = i, !found
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
	s.edit.closed = n
	return out
}

// sizeHint: a decision is mostly its record and the windows it closed.
func (e *decision) sizeHint() int {
	return 64 + len(e.Rec.ID) + len(e.Rec.Raw) + len(e.Rec.Trace.TraceState) + 12*len(e.Closed)
}

func (e *decision) appendBin(b []byte) []byte {
	b = e.Rec.appendBin(b)
	b = appendStr(b, string(e.Class))
	b = binary.AppendVarint(b, e.Window)
	b = binary.AppendVarint(b, int64(e.Rank))
	b = binary.AppendUvarint(b, uint64(len(e.Closed)))
	for _, c := range e.Closed {
		b = binary.AppendVarint(b, c.Start)
		b = binary.AppendVarint(b, int64(c.Toys))
		b = binary.AppendVarint(b, int64(c.Boxes))
	}
	return b
}

func (e *decision) readBin(r *binReader) {
	e.Rec.readBin(r)
	e.Class = class(r.str())
	e.Window = r.varint()
	e.Rank = int(r.varint())
	n := r.uvarint()
	if n > uint64(len(r.b)-r.off) { // each entry takes at least 3 bytes
		r.err = errShort
		return
	}
	for i := uint64(0); i < n && r.err == nil; i++ {
		e.Closed = append(e.Closed, closedWindow{Start: r.varint(), Toys: int(r.varint()), Boxes: int(r.varint())})
	}
}

func (c *streamClock) appendBin(b []byte) []byte {
	b = append(b, flag(c.Seen, 1))
	b = binary.AppendUvarint(b, uint64(len(c.Lasts)))
	for _, l := range c.Lasts {
		b = binary.AppendVarint(b, int64(l.Partition))
		b = binary.AppendVarint(b, l.Offset)
	}
	return binary.AppendVarint(b, c.Max)
}

func (c *streamClock) readBin(r *binReader) {
	c.Seen = r.byte1()&1 != 0
	n := r.uvarint()
	if n > uint64(len(r.b)-r.off) { // each entry takes at least 2 bytes
		r.err = errShort
		return
	}
	for i := uint64(0); i < n && r.err == nil; i++ {
		c.Lasts = append(c.Lasts, partOffset{Partition: int32(r.varint()), Offset: r.varint()})
	}
	c.Max = r.varint()
}

// appendState appends the state: both streams' clocks and the open windows.
// Each window after the first is written as its step from the one before, in
// units of W (of which every start is a multiple; 1 if one were not), and its
// two counts: about three bytes, not the eleven of a start and two counts.
// While one input is consumed far ahead of the other, a size has thousands of
// open windows, and every event of that size writes them all
// (docs/PERFORMANCE.md, "Growth with the run").
func (s *sizeClock) appendState(b []byte, w int64) []byte {
	unit := uint64(max(w, 1))
	for i := 1; i < len(s.Open) && unit > 1; i++ {
		if d := uint64(s.Open[i].Start) - uint64(s.Open[i-1].Start); d != unit && d%unit != 0 {
			unit = 1
		}
	}
	b = s.appendHead(b, unit)
	for i := 1; i < len(s.Open); i++ {
		b = s.appendWindow(b, i, unit)
	}
	return b
}

// appendHead appends the clocks, the number of open windows and, if there
// are any, the unit of the steps and the first window.
func (s *sizeClock) appendHead(b []byte, unit uint64) []byte {
	b = s.Toys.appendBin(b)
	b = s.Boxes.appendBin(b)
	b = binary.AppendUvarint(b, uint64(len(s.Open)))
	if len(s.Open) == 0 {
		return b
	}
	b = binary.AppendUvarint(b, unit)
	b = binary.AppendVarint(b, s.Open[0].Start)
	return binary.AppendVarint(binary.AppendVarint(b, int64(s.Open[0].Toys)), int64(s.Open[0].Boxes))
}

// appendWindow appends open window i > 0: its step and its counts.
func (s *sizeClock) appendWindow(b []byte, i int, unit uint64) []byte {
	b = binary.AppendUvarint(b, (uint64(s.Open[i].Start)-uint64(s.Open[i-1].Start))/unit)
	return binary.AppendVarint(binary.AppendVarint(b, int64(s.Open[i].Toys)), int64(s.Open[i].Boxes))
}

// appendStateAfter appends what appendState(b, w) appends, given prev, the
// encoding of the state before the last apply: the windows that apply left as
// they were, and after the same window, are copied from prev, not encoded
// again. That is all but one or two of them, so an event no longer costs a
// full encoding of its size's open windows.
func (s *sizeClock) appendStateAfter(b, prev []byte, w int64) []byte {
	n, e := len(s.Open), s.edit
	ins := 0
	if e.inserted {
		ins = 1
	}
	// Windows by their index before closing (p = j + closed for window j;
	// window 0 is in the head): [lo, a) are copied as old windows [lo, a),
	// [a, bStart) are encoded (the counted window, and the one after it if
	// the counted one is new), [bStart, hi) are copied as old windows
	// [bStart-ins, hi-ins). With no window counted into (at = -1) all are
	// copied.
	lo, hi := e.closed+1, n+e.closed
	a, bStart := min(max(e.at, lo), hi), min(max(e.at+1+ins, lo), hi)
	if n == 0 {
		return s.appendState(b, w)
	}
	offs, unit, ok := oldWindowOffsets(prev, n+e.closed-ins, [3]int{lo, a, bStart - ins})
	if !ok || unit != uint64(max(w, 1)) {
		return s.appendState(b, w)
	}
	for p := a; p < bStart; p++ {
		if j := p - e.closed; j > 0 && (uint64(s.Open[j].Start)-uint64(s.Open[j-1].Start))%unit != 0 {
			return s.appendState(b, w)
		}
	}
	b = s.appendHead(b, unit)
	b = append(b, prev[offs[0]:offs[1]]...)
	for p := a; p < bStart; p++ {
		b = s.appendWindow(b, p-e.closed, unit)
	}
	return append(b, prev[offs[2]:]...)
}

// oldWindowOffsets reads the head of prev, a state of n open windows that
// decodes (the clock cache's bytes, or the table's that it decoded), and
// returns the unit of its steps and the byte offsets in it of the windows at
// the indexes in at, each in [1, n] (n: the end); ok is false when prev is
// not such a state or an index is not in that range. It counts varints by
// their last bytes, from the nearer end: the window an item is counted into
// is mostly the newest or the oldest.
func oldWindowOffsets(prev []byte, n int, at [3]int) (offs [3]int, unit uint64, ok bool) {
	for _, x := range at {
		if x < 1 || x > n {
			return offs, 0, false
		}
	}
	r := binReader{b: prev}
	for range 2 { // the clocks: a flag, partition offsets, the maximum
		r.byte1()
		lasts := r.uvarint()
		if r.err != nil || lasts > uint64(len(prev)) {
			return offs, 0, false
		}
		r.off, ok = skipVarints(prev, r.off, 2*int(lasts)+1)
		if !ok {
			return offs, 0, false
		}
	}
	if r.uvarint() != uint64(n) || r.err != nil {
		return offs, 0, false
	}
	unit = r.uvarint()
	first, ok := skipVarints(prev, r.off, 3) // window 0: its start and counts
	if r.err != nil || !ok {
		return offs, 0, false
	}
	for i, k := range at { // window k >= 1 starts after 3(k-1) varints, before 3(n-k)
		if k-1 <= n-k {
			offs[i], ok = skipVarints(prev, first, 3*(k-1))
		} else {
			offs[i], ok = backVarints(prev, first, 3*(n-k))
		}
		if !ok {
			return offs, 0, false
		}
	}
	return offs, unit, true
}

// skipVarints returns the offset after the m varints from off.
func skipVarints(b []byte, off, m int) (int, bool) {
	for ; m > 0; off++ {
		if off >= len(b) {
			return 0, false
		}
		if b[off] < 0x80 {
			m--
		}
	}
	return off, true
}

// backVarints returns the offset of the first of the last m varints of b,
// which start at or after floor.
func backVarints(b []byte, floor, m int) (int, bool) {
	off := len(b)
	for ; m > 0; m-- {
		off-- // the varint's last byte
		if off < floor || b[off] >= 0x80 {
			return 0, false
		}
		for off > floor && b[off-1] >= 0x80 {
			off--
		}
	}
	return off, true
}

// decodeState reads what appendState wrote, all of b.
func (s *sizeClock) decodeState(b []byte) error {
	r := binReader{b: b}
	s.readState(&r)
	if r.err == nil && r.off != len(r.b) {
		r.err = fmt.Errorf("%d trailing bytes", len(r.b)-r.off)
	}
	if r.err != nil {
		return fmt.Errorf("decode the clock state: %w", r.err)
	}
	return nil
}

func (s *sizeClock) readState(r *binReader) {
	s.Toys.readBin(r)
	s.Boxes.readBin(r)
	n := r.uvarint()
	if n == 0 || r.err != nil {
		return
	}
	if n > uint64(len(r.b)-r.off) {
		r.err = errShort
		return
	}
	unit := r.uvarint()
	start := r.varint()
	if r.err == nil && unit == 0 {
		r.err = errors.New("open windows in units of 0 µs")
	}
	s.Open = make([]openWindow, 0, n)
	for i := uint64(0); i < n && r.err == nil; i++ {
		if i > 0 {
			d := r.uvarint()
			// The headroom to MaxInt64 is in uint64 arithmetic so that a
			// negative start cannot overflow it.
			hi, dist := bits.Mul64(d, unit)
			if d == 0 || hi != 0 || dist > uint64(math.MaxInt64)-uint64(start) {
				r.err = fmt.Errorf("open window %d is %d units of %d µs after one at %d", i, d, unit, start)
				return
			}
			start += int64(dist)
		}
		s.Open = append(s.Open, openWindow{Start: start, Toys: int(r.varint()), Boxes: int(r.varint())})
	}
}

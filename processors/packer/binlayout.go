package packer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"

	"github.com/northpole-workshop/northpole/internal/record"
	"go.opentelemetry.io/otel/trace"
)

// The layouts of the values on the packer's loop topic and clock table, all
// in one place because one version byte covers them all: a change to any of
// them bumps binVersion. The values are internal (only the packer reads
// them), in a compact binary form (a version byte, then varints and
// length-prefixed strings in field order; codec.go's binCodec and binReader),
// which costs a fraction of JSON's CPU (docs/PERFORMANCE.md). Output topics
// stay JSON: they are the public format.
//
// One layout is read: the version byte's. A packer whose layout differs runs
// under a new group name (and so new internal topics); a value of another
// version is refused, never guessed at.
const binVersion = 13

// A valid record, on the loop topics and inside a decision.

// binSize is the bytes appendBin writes.
func (o *validRecord) binSize() int {
	return strLen(len(o.Stream)) + varintLen(int64(o.Partition)) + varintLen(o.Offset) + varintLen(o.Via) +
		strLen(len(o.Line)) + strLen(len(o.ID)) + 1 +
		varintLen(o.MadeUS) + uvarintLen(uint64(o.MadeNS)) + varintLen(o.ArrivedUS) +
		strLen(len(o.Raw)) + strLen(len(o.Key)) + varintLen(int64(o.RawCut.Bytes)) + strLen(len(o.RawCut.SHA256)) +
		o.Trace.binSize()
}

func (o *validRecord) appendBin(b []byte) []byte {
	b = appendStr(b, string(o.Stream))
	b = binary.AppendVarint(b, int64(o.Partition))
	b = binary.AppendVarint(b, o.Offset)
	b = binary.AppendVarint(b, o.Via)
	b = appendStr(b, o.Line)
	b = appendStr(b, o.ID)
	b = append(b, flag(o.Heartbeat, 1)|flag(o.Dup, 2))
	b = binary.AppendVarint(b, o.MadeUS)
	b = binary.AppendUvarint(b, uint64(o.MadeNS))
	b = binary.AppendVarint(b, o.ArrivedUS)
	b = appendBytes(b, o.Raw)
	b = appendBytes(b, o.Key)
	b = binary.AppendVarint(b, int64(o.RawCut.Bytes))
	b = appendStr(b, o.RawCut.SHA256)
	return o.Trace.appendBin(b)
}

func (o *validRecord) readBin(r *binReader) {
	o.Stream = record.Stream(r.str())
	o.Partition = int32(r.varint())
	o.Offset = r.varint()
	o.Via = r.varint()
	o.Line = r.str()
	o.ID = r.str()
	f := r.byte1()
	o.Heartbeat, o.Dup = f&1 != 0, f&2 != 0
	o.MadeUS = r.varint()
	if ns := r.uvarint(); ns < 1000 {
		o.MadeNS = int16(ns)
	} else if r.err == nil {
		r.err = errBadNanos
	}
	o.ArrivedUS = r.varint()
	o.Raw = r.bytes()
	o.Key = r.bytes()
	o.RawCut.Bytes = int(r.varint())
	o.RawCut.SHA256 = r.str()
	o.Trace.readBin(r)
}

// errBadNanos: made_at's part below a microsecond is 0 to 999 ns.
var errBadNanos = errors.New("bad nanoseconds of made_at")

// A record's trace context, in a valid record (and so in a decision).

// appendBin writes one byte 0 for no trace, else 1, the ids, the flags and
// the trace state.
func (t traceRef) appendBin(b []byte) []byte {
	if !t.valid() {
		return append(b, 0)
	}
	b = append(b, 1)
	b = append(b, t.TraceID[:]...)
	b = append(b, t.SpanID[:]...)
	b = append(b, byte(t.Flags))
	return appendStr(b, t.TraceState)
}

// binSize is the bytes appendBin writes.
func (t traceRef) binSize() int {
	if !t.valid() {
		return 1
	}
	return 1 + len(t.TraceID) + len(t.SpanID) + 1 + strLen(len(t.TraceState))
}

func (t *traceRef) readBin(r *binReader) {
	switch r.byte1() {
	case 0:
		*t = traceRef{}
	case 1:
		if r.err != nil || len(r.left()) < 25 {
			r.err = errShort
			return
		}
		left := r.left()
		copy(t.TraceID[:], left[:16])
		copy(t.SpanID[:], left[16:24])
		t.Flags = trace.TraceFlags(left[24])
		r.off += 25
		t.TraceState = r.str()
		if !t.valid() {
			r.err = errBadTrace
		}
	default:
		if r.err == nil {
			r.err = errBadTrace
		}
	}
}

// The binary encoding of the clock table's values: a decision, the snapshot
// it may carry and the stream clocks in that (codec.go's binCodec).

// binSize is the bytes appendBin writes.
func (e *decision) binSize() int {
	n := e.Rec.binSize() + strLen(len(e.Class)) + varintLen(e.Window) + varintLen(int64(e.Rank)) +
		uvarintLen(uint64(e.Max-e.Rec.MadeUS)) + e.Snapshot.binSize() + uvarintLen(uint64(len(e.Closed)))
	if len(e.Closed) == 0 {
		return n
	}
	unit := closedUnit(e.Closed)
	n += varintLen(e.Closed[0].Start) + uvarintLen(unit)
	for i, c := range e.Closed {
		if i > 0 {
			n += uvarintLen(uint64(c.Start-e.Closed[i-1].Start) / unit)
		}
		n += varintLen(int64(c.Toys)) + varintLen(int64(c.Boxes))
	}
	return n
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
	unit := closedUnit(e.Closed)
	b = binary.AppendVarint(b, e.Closed[0].Start)
	b = binary.AppendUvarint(b, unit)
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
	b = binary.AppendUvarint(b, sn.Walk)
	b = append(b, flag(sn.First, 1)|flag(sn.Last, 2))
	b = binary.AppendUvarint(b, uint64(len(sn.Keys)))
	for _, ks := range sn.Keys {
		b = appendStr(b, ks.Key)
		b = ks.Toys.appendBin(b)
		b = ks.Boxes.appendBin(b)
	}
	return b
}

// binSize is the bytes appendBin writes.
func (sn *snapshot) binSize() int {
	if sn == nil {
		return 1
	}
	n := 1 + varintLen(sn.WindowUS) + varintLen(sn.LatenessUS) + uvarintLen(sn.Walk) + 1 + uvarintLen(uint64(len(sn.Keys)))
	for i := range sn.Keys {
		n += sn.Keys[i].binSize()
	}
	return n
}

func readSnapshot(r *binReader) *snapshot {
	if r.byte1() == 0 || r.err != nil {
		return nil
	}
	sn := &snapshot{WindowUS: r.varint(), LatenessUS: r.varint(), Walk: r.uvarint()}
	f := r.byte1()
	sn.First, sn.Last = f&1 != 0, f&2 != 0
	n := r.uvarint()
	if n > uint64(len(r.b)-r.off) {
		r.err = errShort
		return nil
	}
	for range n {
		ks := keyStreams{Key: r.str()}
		ks.Toys.readBin(r)
		ks.Boxes.readBin(r)
		sn.Keys = append(sn.Keys, ks)
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

// binSize is the bytes appendBin writes.
func (c *streamClock) binSize() int {
	n := 1 + varintLen(c.Max) + uvarintLen(uint64(len(c.Lasts)))
	for _, l := range c.Lasts {
		n += varintLen(int64(l.Partition)) + varintLen(l.Offset)
	}
	return n
}

func varintLen(x int64) int {
	u := uint64(x) << 1
	if x < 0 {
		u = ^u
	}
	return uvarintLen(u)
}

func uvarintLen(x uint64) int { return (bits.Len64(x|1) + 6) / 7 }

// strLen is the bytes appendStr and appendBytes write for n bytes.
func strLen(n int) int { return uvarintLen(uint64(n)) + n }

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

// closedUnit is the greatest common divisor of the steps between closed
// windows, 1 when there is no step.
func closedUnit(cs []closedWindow) uint64 {
	var unit uint64
	for i := 1; i < len(cs); i++ {
		unit = gcd(unit, uint64(cs[i].Start-cs[i-1].Start))
	}
	return max(unit, 1)
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
	if r.err == nil && e.Class == classItem && e.Rank < 1 {
		// A slot's place is its rank (windowSlots.place): no item has rank 0.
		r.err = fmt.Errorf("an item of rank %d", e.Rank)
		return
	}
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
		c := closedWindow{Start: start, Toys: int(r.varint()), Boxes: int(r.varint())}
		if c.Toys < 0 || c.Boxes < 0 {
			r.err = fmt.Errorf("closed window %d counts %d toys and %d boxes", i, c.Toys, c.Boxes)
			return
		}
		e.Closed = append(e.Closed, c)
	}
}

// binSize is the bytes keyStreams takes in a decision (below).
func (ks *keyStreams) binSize() int {
	return uvarintLen(uint64(len(ks.Key))) + len(ks.Key) + ks.Toys.binSize() + ks.Boxes.binSize()
}

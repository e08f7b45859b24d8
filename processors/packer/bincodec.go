package packer

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/northpole-workshop/northpole/internal/record"
)

// The values on the packer's loop topics and group tables are internal: only
// the packer reads them. They are encoded in a compact binary form (a version
// byte, then varints and length-prefixed strings in field order), which cost a
// fraction of JSON's CPU (docs/PERFORMANCE.md). Output topics stay JSON: they
// are the public format.
//
// One layout is read: the version byte's. A packer whose layout differs runs
// under a new group name (and so new internal topics); a value of another
// version is refused, never guessed at.
const binVersion = 5

// binMsg is a message with a binary form.
type binMsg interface {
	appendBin(b []byte) []byte
	readBin(r *binReader)
}

// binCodec is a goka.Codec for one internal message type.
type binCodec[T any, PT interface {
	*T
	binMsg
}] struct{}

func (binCodec[T, PT]) Encode(v any) ([]byte, error) {
	var m PT
	switch t := v.(type) {
	case T:
		m = &t
	case *T:
		m = t
	default:
		return nil, fmt.Errorf("codec %T: cannot encode %T", *new(T), v)
	}
	size := 64
	if h, ok := any(m).(sizeHinter); ok {
		size = h.sizeHint()
	}
	return m.appendBin(append(make([]byte, 0, size), binVersion)), nil
}

// sizeHinter is a message whose encoding can outgrow the default buffer by
// far: sizing it once saves the copies of growing it.
type sizeHinter interface{ sizeHint() int }

// sizeHint: an observation holds the raw record on its way to the dedupe
// stage, and a trace reference when tracing is on.
func (o *Observed) sizeHint() int {
	return 96 + len(o.ID) + len(o.Raw) + len(o.Key) + len(o.Trace.TraceState)
}

func (m *SlotMsg) sizeHint() int { return 64 + len(m.ID) + len(m.Trace.TraceState) }

func (s *SlotState) sizeHint() int {
	return 96 + len(s.Toy) + len(s.Box) + len(s.ToyTrace.TraceState) + len(s.BoxTrace.TraceState)
}

// sizeHint: a clock value is mostly its open windows (an 8-byte start
// and two small counts each); on a backlog there can be dozens.
func (s *ClockState) sizeHint() int {
	return 128 + len(s.Ev.Rec.ID) + len(s.Ev.Rec.Trace.TraceState) + 12*len(s.Open) + 12*len(s.Ev.Closed)
}

func (binCodec[T, PT]) Decode(b []byte) (any, error) {
	var v T
	if len(b) == 0 || b[0] != binVersion {
		return nil, fmt.Errorf("decode %T: not this packer's encoding (version %d; %d bytes): "+
			"a packer of another version wrote it, run this one under a new group name", v, binVersion, len(b))
	}
	r := binReader{b: b[1:]}
	PT(&v).readBin(&r)
	if r.err == nil && r.off != len(r.b) {
		r.err = fmt.Errorf("%d trailing bytes", len(r.b)-r.off)
	}
	if r.err != nil {
		return nil, fmt.Errorf("decode %T: %w", v, r.err)
	}
	return &v, nil
}

var errShort = errors.New("truncated value")

// binReader reads a value front to back. It advances an index instead of
// re-slicing b: the reader lives on the heap (it is passed to readBin through
// an interface), and every slice header written there would be a pointer
// write with a GC write barrier, which the profile of the clock's decode
// showed.
type binReader struct {
	b   []byte
	off int
	err error
}

// left is what has not been read yet.
func (r *binReader) left() []byte { return r.b[r.off:] }

func (r *binReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	// Most fields (counts, small lengths, flags' neighbours) fit in one
	// byte; binary.Varint's loop is a measurable share of the clock's decode.
	if r.off < len(r.b) && r.b[r.off] < 0x80 {
		u := uint64(r.b[r.off])
		r.off++
		return int64(u>>1) ^ -int64(u&1)
	}
	v, n := binary.Varint(r.left())
	if n <= 0 {
		r.err = errShort
		return 0
	}
	r.off += n
	return v
}

func (r *binReader) fixed64() int64 {
	if r.err != nil {
		return 0
	}
	if len(r.b)-r.off < 8 {
		r.err = errShort
		return 0
	}
	v := int64(binary.LittleEndian.Uint64(r.b[r.off:]))
	r.off += 8
	return v
}

func (r *binReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	if r.off < len(r.b) && r.b[r.off] < 0x80 {
		v := uint64(r.b[r.off])
		r.off++
		return v
	}
	v, n := binary.Uvarint(r.left())
	if n <= 0 {
		r.err = errShort
		return 0
	}
	r.off += n
	return v
}

// bytes returns nil for an empty field, as JSON's omitempty did.
func (r *binReader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil || n == 0 {
		return nil
	}
	if uint64(len(r.b)-r.off) < n {
		r.err = errShort
		return nil
	}
	v := make([]byte, n)
	copy(v, r.b[r.off:])
	r.off += int(n)
	return v
}

func (r *binReader) str() string {
	n := r.uvarint()
	if r.err != nil || n == 0 {
		return ""
	}
	if uint64(len(r.b)-r.off) < n {
		r.err = errShort
		return ""
	}
	v := string(r.b[r.off : r.off+int(n)])
	r.off += int(n)
	return v
}

func (r *binReader) byte1() byte {
	if r.err != nil {
		return 0
	}
	if r.off >= len(r.b) {
		r.err = errShort
		return 0
	}
	v := r.b[r.off]
	r.off++
	return v
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBytes(b []byte, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func flag(v bool, bit byte) byte {
	if v {
		return bit
	}
	return 0
}

func (o *Observed) appendBin(b []byte) []byte {
	b = appendStr(b, string(o.Stream))
	b = binary.AppendVarint(b, int64(o.Partition))
	b = binary.AppendVarint(b, o.Offset)
	b = appendStr(b, o.Size)
	b = appendStr(b, o.ID)
	b = append(b, flag(o.Heartbeat, 1)|flag(o.Dup, 2))
	b = binary.AppendVarint(b, o.MadeUS)
	b = appendStr(b, o.MadeAt)
	b = appendBytes(b, o.Raw)
	b = appendBytes(b, o.Key)
	b = binary.AppendVarint(b, int64(o.RawCut.Bytes))
	b = appendStr(b, o.RawCut.SHA256)
	return o.Trace.appendBin(b)
}

func (o *Observed) readBin(r *binReader) {
	o.Stream = record.Stream(r.str())
	o.Partition = int32(r.varint())
	o.Offset = r.varint()
	o.Size = r.str()
	o.ID = r.str()
	f := r.byte1()
	o.Heartbeat, o.Dup = f&1 != 0, f&2 != 0
	o.MadeUS = r.varint()
	o.MadeAt = r.str()
	o.Raw = r.bytes()
	o.Key = r.bytes()
	o.RawCut.Bytes = int(r.varint())
	o.RawCut.SHA256 = r.str()
	o.Trace.readBin(r)
}

func (d *DedupeState) appendBin(b []byte) []byte {
	b = binary.AppendVarint(b, d.First)
	return binary.AppendVarint(b, int64(d.FirstPart))
}

func (d *DedupeState) readBin(r *binReader) {
	d.First = r.varint()
	d.FirstPart = int32(r.varint())
}

func (e *ClockEvent) appendBin(b []byte) []byte {
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

func (e *ClockEvent) readBin(r *binReader) {
	e.Rec.readBin(r)
	e.Class = Class(r.str())
	e.Window = r.varint()
	e.Rank = int(r.varint())
	n := r.uvarint()
	if n > uint64(len(r.b)-r.off) { // each entry takes at least 3 bytes
		r.err = errShort
		return
	}
	for i := uint64(0); i < n && r.err == nil; i++ {
		e.Closed = append(e.Closed, Closed{Start: r.varint(), Toys: int(r.varint()), Boxes: int(r.varint())})
	}
}

func (c *StreamClock) appendBin(b []byte) []byte {
	b = append(b, flag(c.Seen, 1))
	b = binary.AppendUvarint(b, uint64(len(c.Lasts)))
	for _, l := range c.Lasts {
		b = binary.AppendVarint(b, int64(l.Partition))
		b = binary.AppendVarint(b, l.Offset)
	}
	return binary.AppendVarint(b, c.Max)
}

func (c *StreamClock) readBin(r *binReader) {
	c.Seen = r.byte1()&1 != 0
	n := r.uvarint()
	if n > uint64(len(r.b)-r.off) { // each entry takes at least 2 bytes
		r.err = errShort
		return
	}
	for i := uint64(0); i < n && r.err == nil; i++ {
		c.Lasts = append(c.Lasts, PartOffset{Partition: int32(r.varint()), Offset: r.varint()})
	}
	c.Max = r.varint()
}

func (s *ClockState) appendBin(b []byte) []byte {
	b = s.Toys.appendBin(b)
	b = s.Boxes.appendBin(b)
	b = binary.AppendUvarint(b, uint64(len(s.Open)))
	for _, w := range s.Open {
		b = binary.LittleEndian.AppendUint64(b, uint64(w.Start))
		b = binary.AppendVarint(b, int64(w.Toys))
		b = binary.AppendVarint(b, int64(w.Boxes))
	}
	return s.Ev.appendBin(b)
}

func (s *ClockState) readBin(r *binReader) {
	s.Toys.readBin(r)
	s.Boxes.readBin(r)
	n := r.uvarint()
	if n > uint64(len(r.b)-r.off) {
		r.err = errShort
		return
	}
	if n > 0 {
		s.Open = make([]OpenWindow, 0, n)
	}
	for i := uint64(0); i < n && r.err == nil; i++ {
		s.Open = append(s.Open, OpenWindow{Start: r.fixed64(), Toys: int(r.varint()), Boxes: int(r.varint())})
	}
	s.Ev.readBin(r)
}

func (m *SlotMsg) appendBin(b []byte) []byte {
	b = appendStr(b, string(m.Stream))
	b = appendStr(b, m.ID)
	b = append(b, flag(m.Close, 1))
	b = appendStr(b, m.Size)
	b = binary.AppendVarint(b, m.Window)
	return m.Trace.appendBin(b)
}

func (m *SlotMsg) readBin(r *binReader) {
	m.Stream = record.Stream(r.str())
	m.ID = r.str()
	m.Close = r.byte1()&1 != 0
	m.Size = r.str()
	m.Window = r.varint()
	m.Trace.readBin(r)
}

func (s *SlotState) appendBin(b []byte) []byte {
	b = appendStr(b, s.Size)
	b = binary.AppendVarint(b, s.Window)
	b = appendStr(b, s.Toy)
	b = appendStr(b, s.Box)
	b = append(b, flag(s.Closed, 1))
	b = s.ToyTrace.appendBin(b)
	return s.BoxTrace.appendBin(b)
}

func (s *SlotState) readBin(r *binReader) {
	s.Size = r.str()
	s.Window = r.varint()
	s.Toy = r.str()
	s.Box = r.str()
	s.Closed = r.byte1()&1 != 0
	s.ToyTrace.readBin(r)
	s.BoxTrace.readBin(r)
}

package packer

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
)

// jsonCodec is a goka.Codec for one message type. A row that appends its
// own JSON (results.Packed.AppendJSON) is written without reflection.
type jsonCodec[T any] struct{}

// jsonAppender is a row that appends its own JSON.
type jsonAppender interface{ AppendJSON(b []byte) []byte }

func (jsonCodec[T]) Encode(v any) ([]byte, error) {
	if a, ok := v.(jsonAppender); ok {
		return a.AppendJSON(make([]byte, 0, 160)), nil
	}
	switch t := v.(type) {
	case T:
		return json.Marshal(t)
	case *T:
		return json.Marshal(t)
	}
	return nil, fmt.Errorf("codec %T: cannot encode %T", *new(T), v)
}

func (jsonCodec[T]) Decode(b []byte) (any, error) {
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("decode %T: %w", v, err)
	}
	return &v, nil
}

// binMsg is a message with a binary form (binlayout.go), under binVersion.
type binMsg interface {
	appendBin(b []byte) []byte
	binSize() int // the bytes appendBin writes
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
	// Sized exactly: a buffer that grows is one more allocation and copy per
	// record, and one too large holds memory until Kafka answers the write.
	return m.appendBin(append(make([]byte, 0, 1+m.binSize()), binVersion)), nil
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

package packer

import (
	"encoding/binary"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
)

// validRecord is one valid record as the clock stage applies it; it is the
// loop record of a stray (see observe), and the clock's decision holds it.
type validRecord struct {
	Stream    record.Stream `json:"x"`
	Partition int32         `json:"p"`
	Offset    int64         `json:"o"`
	Line      string        `json:"l"` // the packing line: the Kafka key, a size or size/hall
	ID        string        `json:"id,omitempty"`
	Heartbeat bool          `json:"hb,omitempty"`
	MadeUS    int64         `json:"t"`  // made_at in µs, floor
	MadeAt    string        `json:"ts"` // made_at as record.FormatTime, for late rows
	// ArrivedUS is the input record's Kafka timestamp in µs, for the pack
	// duration (metrics.go); 0 with metrics off.
	ArrivedUS int64 `json:"a,omitempty"`
	Dup       bool  `json:"dup,omitempty"`
	// Raw value and key are kept only for a duplicate's dead letter: the
	// decision of a duplicate holds them, every other decision neither. A raw
	// value too long for the record that carries it is cut, and RawCut
	// describes the whole one (fitRaw).
	Raw    []byte      `json:"raw,omitempty"`
	Key    []byte      `json:"key,omitempty"`
	RawCut results.Cut `json:"raw_cut,omitzero"`
	// Trace is the input record's trace context (its "process" span), for
	// the spans of what the later stages write about it.
	Trace traceRef `json:"-"`
}

// sizeHint: a stray's loop record holds the raw record, and a trace
// reference when tracing is on.
func (o *validRecord) sizeHint() int {
	return 106 + len(o.ID) + len(o.Raw) + len(o.Key) + len(o.Trace.TraceState)
}

func (o *validRecord) appendBin(b []byte) []byte {
	b = appendStr(b, string(o.Stream))
	b = binary.AppendVarint(b, int64(o.Partition))
	b = binary.AppendVarint(b, o.Offset)
	b = appendStr(b, o.Line)
	b = appendStr(b, o.ID)
	b = append(b, flag(o.Heartbeat, 1)|flag(o.Dup, 2))
	b = binary.AppendVarint(b, o.MadeUS)
	b = appendStr(b, o.MadeAt)
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
	o.Line = r.str()
	o.ID = r.str()
	f := r.byte1()
	o.Heartbeat, o.Dup = f&1 != 0, f&2 != 0
	o.MadeUS = r.varint()
	o.MadeAt = r.str()
	o.ArrivedUS = r.varint()
	o.Raw = r.bytes()
	o.Key = r.bytes()
	o.RawCut.Bytes = int(r.varint())
	o.RawCut.SHA256 = r.str()
	o.Trace.readBin(r)
}

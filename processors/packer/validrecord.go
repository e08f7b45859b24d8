package packer

import (
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

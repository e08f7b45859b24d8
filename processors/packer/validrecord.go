package packer

import (
	"time"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
)

// validRecord is one valid record as the clock stage applies it; it is the
// loop record of a stray (see observe), and the clock's decision holds it.
type validRecord struct {
	Stream    record.Stream `json:"x"`
	Partition int32         `json:"p"`
	Offset    int64         `json:"o"`
	// Via is the offset of the loop record that brought a stray, plus one;
	// 0 for a record read from its input topic. With Partition it says
	// which input record a decision answers (replay.go).
	Via       int64  `json:"v,omitempty"`
	Line      string `json:"l"` // the packing line: the Kafka key, a size or size/hall
	ID        string `json:"id,omitempty"`
	Heartbeat bool   `json:"hb,omitempty"`
	MadeUS    int64  `json:"t"` // made_at in µs, floor
	// MadeNS is what made_at has past MadeUS, 0 to 999 ns: with it the late
	// row says made_at as the input did (madeAt), and a decision carries
	// two numbers instead of its text.
	MadeNS int16 `json:"ns,omitempty"`
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

// madeAt is made_at as record.FormatTime writes it, for a late row.
func (o *validRecord) madeAt() string {
	return record.FormatTime(time.UnixMicro(o.MadeUS).Add(time.Duration(o.MadeNS)))
}

// subMicro is what t has past its whole microseconds, floor: 0 to 999 ns,
// before the epoch too (the seconds are whole, and Nanosecond counts up
// from them).
func subMicro(t time.Time) int16 { return int16(t.Nanosecond() % 1000) }

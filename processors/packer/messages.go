package packer

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
)

// Observed is one valid record on its way through the pipeline. It leaves the
// input callback towards its dedupe key, and (without Raw and Key, with Dup
// decided) is the event that the dedupe stage sends to the clock stage.
type Observed struct {
	Stream    record.Stream `json:"x"`
	Partition int32         `json:"p"`
	Offset    int64         `json:"o"`
	Size      string        `json:"s"`
	ID        string        `json:"id,omitempty"`
	Heartbeat bool          `json:"hb,omitempty"`
	MadeUS    int64         `json:"t"`  // made_at in µs, floor
	MadeAt    string        `json:"ts"` // made_at as record.FormatTime, for late rows
	Dup       bool          `json:"dup,omitempty"`
	// Raw value and key travel only to the dedupe stage, which may have to
	// report the record as a duplicate dead letter. A raw value too long for
	// the loop record is cut, and RawCut describes the whole one (fit.go).
	Raw    []byte      `json:"raw,omitempty"`
	Key    []byte      `json:"key,omitempty"`
	RawCut results.Cut `json:"raw_cut,omitzero"`
	// Trace is the input record's trace context (its "process" span), for
	// the spans of what the later stages write about it.
	Trace traceRef `json:"-"`
}

// DedupeState is the dedupe stage's value for one (size, stream, id) key:
// where the first record with that id is. It is written once, by that
// record, and never changes; heartbeats keep none. So the stage's decision
// (a duplicate or not) is a function of the record and this value, the same
// on every delivery, and the event it sends to the clock stage can always be
// sent again.
type DedupeState struct {
	First     int64 `json:"first"`      // offset of the first record with this id
	FirstPart int32 `json:"first_part"` // and its partition
}

// isFirst reports whether obs is the record that first had this id.
func (d *DedupeState) isFirst(obs *Observed) bool {
	return obs.Offset == d.First && obs.Partition == d.FirstPart
}

// Class is what the contract made of a valid record.
type Class string

const (
	ClassItem      Class = "item"
	ClassLate      Class = "late"
	ClassDuplicate Class = "dup"
	ClassHeartbeat Class = "hb"
)

// Closed reports that window Start of the clock's size is closed, with the
// final number of items of each stream.
type Closed struct {
	Start int64 `json:"w"`
	Toys  int   `json:"t"`
	Boxes int   `json:"b"`
}

// ClockEvent is what the clock stage decided for one record.
type ClockEvent struct {
	Rec    Observed `json:"r"`
	Class  Class    `json:"c"`
	Window int64    `json:"w"` // window start, µs
	Rank   int      `json:"k,omitempty"`
	Closed []Closed `json:"closed,omitempty"`
	// NewPartition: the first record of its (stream, size) from a second
	// source partition, which the contract rules out (see StreamClock). The
	// clock stage logs it; it is not encoded and changes no result.
	NewPartition bool `json:"-"`
}

// StreamClock is the clock of one (stream, size).
type StreamClock struct {
	Seen bool `json:"seen,omitempty"`
	// Lasts is the greatest source offset applied, per source partition. The
	// contract has every record of a (stream, size) in one partition, so it
	// holds one entry; a producer that breaks that (another partitioner, a
	// changed partition count) adds one per partition, and its records are
	// then applied in arrival order instead of being mistaken for replays.
	Lasts []PartOffset `json:"lasts,omitempty"`
	Max   int64        `json:"max"` // greatest made_at seen, µs
}

// PartOffset is an offset in one source partition.
type PartOffset struct {
	Partition int32 `json:"p"`
	Offset    int64 `json:"o"`
}

// applied reports whether the record at (part, off) was already applied.
func (c *StreamClock) applied(part int32, off int64) bool {
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
func (c *StreamClock) markApplied(part int32, off int64) (newPartition bool) {
	for i := range c.Lasts {
		if l := &c.Lasts[i]; l.Partition == part {
			l.Offset = off
			return false
		}
	}
	c.Lasts = append(c.Lasts, PartOffset{Partition: part, Offset: off})
	return len(c.Lasts) > 1
}

// OpenWindow counts the items ranked so far in a window that is not closed.
type OpenWindow struct {
	Start int64 `json:"w"`
	Toys  int   `json:"t"`
	Boxes int   `json:"b"`
}

// ClockState is the clock stage's value for one size. Open holds only windows
// that have items and are not yet closed, sorted by start: in steady state
// about (W+L)/W of them, more while one stream runs ahead of the other in
// event time. Ev is the event of the last record applied (see DedupeState).
type ClockState struct {
	Toys  StreamClock  `json:"toys"`
	Boxes StreamClock  `json:"boxes"`
	Open  []OpenWindow `json:"open,omitempty"`
	Ev    ClockEvent   `json:"ev"`
}

func (s *ClockState) clock(x record.Stream) *StreamClock {
	if x == record.Boxes {
		return &s.Boxes
	}
	return &s.Toys
}

// SlotMsg goes to the slot (size, window, rank): an item that took that rank,
// or the news that the window closed and the slot will never be completed.
type SlotMsg struct {
	Stream record.Stream `json:"x,omitempty"`
	ID     string        `json:"id,omitempty"`
	Close  bool          `json:"close,omitempty"`
	Size   string        `json:"s"`
	Window int64         `json:"w"`
	Trace  traceRef      `json:"-"` // of the record that brought the item, or that closed the window
}

// SlotState is where the k-th toy meets the k-th box. Every field is written
// at most once, so a redelivered message recomputes the same outputs.
type SlotState struct {
	Size   string `json:"s"`
	Window int64  `json:"w"`
	Toy    string `json:"toy,omitempty"`
	Box    string `json:"box,omitempty"`
	Closed bool   `json:"closed,omitempty"`
	// ToyTrace and BoxTrace remember the trace context of the record that
	// brought each item, written once with the item (zero with tracing
	// off), so that the "pack" span can link to both items whichever record
	// completes the pair. They never affect a result.
	ToyTrace traceRef `json:"-"`
	BoxTrace traceRef `json:"-"`
}

// DeadLetter is the value on the dead-letters topic: where the record was, why
// it is dead, and the record itself.
type DeadLetter struct {
	Stream    record.Stream `json:"stream"`
	Topic     string        `json:"topic"`
	Partition int32         `json:"partition"`
	Offset    int64         `json:"offset"`
	Reason    record.Reason `json:"reason"`
	Detail    string        `json:"detail,omitempty"`
	// Key is the record's key when it is UTF-8; otherwise KeyBase64 holds it.
	Key       string `json:"key"`
	KeyBase64 []byte `json:"key_base64,omitempty"`
	// Value is the raw value when it is UTF-8; otherwise ValueBase64 holds it.
	Value       *string `json:"value,omitempty"`
	ValueBase64 []byte  `json:"value_base64,omitempty"`
	// KeyCut and ValueCut describe the whole key and value when the dead
	// letter holds only their start: a record near the input topic's size
	// limit does not fit in one once escaped or in base64 (fit.go).
	KeyCut   results.Cut `json:"key_cut,omitzero"`
	ValueCut results.Cut `json:"value_cut,omitzero"`
}

// newDeadLetter holds key and value whole; fitDead bounds it.
func newDeadLetter(stream record.Stream, topic string, partition int32, offset int64, key, raw []byte) *DeadLetter {
	dl := &DeadLetter{Stream: stream, Topic: topic, Partition: partition, Offset: offset}
	if utf8.Valid(key) {
		dl.Key = string(key)
	} else {
		dl.KeyBase64 = key
	}
	if utf8.Valid(raw) {
		s := string(raw)
		dl.Value = &s
	} else {
		dl.ValueBase64 = raw
	}
	return dl
}

func (dl *DeadLetter) rawKey() []byte {
	if dl.KeyBase64 != nil {
		return dl.KeyBase64
	}
	return []byte(dl.Key)
}

func (dl *DeadLetter) rawValue() []byte {
	if dl.Value != nil {
		return []byte(*dl.Value)
	}
	return dl.ValueBase64
}

// jsonCodec is a goka.Codec for one message type.
type jsonCodec[T any] struct{}

func (jsonCodec[T]) Encode(v any) ([]byte, error) {
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

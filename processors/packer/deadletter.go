package packer

import (
	"unicode/utf8"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
)

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

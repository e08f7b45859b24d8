package demo

import (
	"maps"
	"testing"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
)

func TestInputCountsAndDeadBySize(t *testing.T) {
	in := func(stream record.Stream, off int64, key, value string) record.Input {
		return record.Input{Stream: stream, Topic: string(stream), Offset: off, Key: []byte(key), Value: []byte(value)}
	}
	toy := `{"toy_id":"t1","size":"M","made_at":"2026-12-24T10:00:00Z"}`
	inputs := []record.Input{
		in(record.Toys, 0, "M", toy),
		in(record.Toys, 1, "M", toy), // a duplicate: dead, with a size
		in(record.Toys, 2, "S", `{"heartbeat":true,"size":"S","made_at":"2026-12-24T10:00:00Z"}`),
		in(record.Toys, 3, "S", `{"toy_id":"t2","size":"S"`),                                      // malformed json: no size
		in(record.Boxes, 0, "XL", `{"box_id":"b1","size":"XL","made_at":"yesterday"}`),            // bad made_at: its size is valid
		in(record.Boxes, 1, "L", `{"box_id":"b2","size":"XXL","made_at":"2026-12-24T10:00:00Z"}`), // bad size
		in(record.Boxes, 2, "L", `{"box_id":"b3","size":"M","made_at":"2026-12-24T10:00:00Z"}`),   // size not key
		in(record.Boxes, 3, "L", `{"size":"L","made_at":"2026-12-24T10:00:00Z"}`),                 // no id: size L
	}
	dead := []results.Dead{
		{Stream: "toys", Offset: 1, Reason: "duplicate"},
		{Stream: "toys", Offset: 3, Reason: "malformed json"},
		{Stream: "boxes", Offset: 0, Reason: "bad made_at"},
		{Stream: "boxes", Offset: 1, Reason: "bad size"},
		{Stream: "boxes", Offset: 2, Reason: "size not key"},
		{Stream: "boxes", Offset: 3, Reason: "no id"},
		{Stream: "boxes", Offset: 9, Reason: "no id"}, // not among the inputs
	}
	for _, tc := range []struct {
		stream string
		want   StreamInputs
	}{
		{"toys", StreamInputs{Records: 3, Heartbeats: 1, Bad: 1, Duplicates: 1}},
		{"boxes", StreamInputs{Records: 4, Heartbeats: 0, Bad: 4, Duplicates: 0}},
	} {
		if got := inputCounts(inputs, dead)[tc.stream]; got != tc.want {
			t.Errorf("inputCounts %s = %+v, want %+v", tc.stream, got, tc.want)
		}
	}
	bySize, without := deadBySize(inputs, dead)
	if want := map[string]int{"M": 1, "XL": 1, "L": 1}; !maps.Equal(bySize, want) || without != 4 {
		t.Errorf("deadBySize = %v and %d without a size, want %v and 4", bySize, without, want)
	}
}

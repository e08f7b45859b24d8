package packer

import (
	"encoding/binary"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/lovoo/goka"

	"github.com/northpole-workshop/northpole/internal/record"
)

func TestBinCodecRoundTrip(t *testing.T) {
	obs := Observed{Stream: record.Boxes, Partition: 3, Offset: 1 << 40, Size: "XL", ID: "box-ü-1", Heartbeat: true,
		MadeUS: -5, MadeAt: "2026-12-24T00:00:00.000001Z", Dup: true, Raw: []byte{0, 0xff, '{'}, Key: []byte("XL")}
	ev := ClockEvent{Rec: obs, Class: ClassItem, Window: 10_000_000, Rank: 7, Closed: []Closed{{Start: 0, Toys: 2, Boxes: 3}, {Start: 10, Toys: 0, Boxes: 1}}}
	cases := []struct {
		codec goka.Codec
		v     any
	}{
		{binCodec[Observed, *Observed]{}, &obs},
		{binCodec[Observed, *Observed]{}, &Observed{}},
		{binCodec[DedupeState, *DedupeState]{}, &DedupeState{First: 1, FirstPart: 3, Last: 99, Ev: obs}},
		{binCodec[ClockEvent, *ClockEvent]{}, &ev},
		{binCodec[ClockState, *ClockState]{}, &ClockState{Toys: StreamClock{Seen: true, Lasts: []PartOffset{{Partition: 2, Offset: 4}, {Partition: 0, Offset: 9}}, Max: 1e12}, Boxes: StreamClock{Max: -1},
			Open: []OpenWindow{{Start: 1, Toys: 2, Boxes: 3}}, Ev: ev}},
		{binCodec[ClockState, *ClockState]{}, &ClockState{}},
		{binCodec[SlotMsg, *SlotMsg]{}, &SlotMsg{Stream: record.Toys, ID: "t", Close: true, Size: "S", Window: 42}},
		{binCodec[SlotState, *SlotState]{}, &SlotState{Size: "M", Window: 1, Toy: "t", Box: "b", Closed: true, ToyTrace: "00-a", BoxTrace: "00-b"}},
	}
	for _, c := range cases {
		b, err := c.codec.Encode(c.v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.codec.Decode(b)
		if err != nil {
			t.Fatalf("%T: %v", c.v, err)
		}
		if !reflect.DeepEqual(got, c.v) {
			t.Errorf("%T: round trip\n got %+v\nwant %+v", c.v, got, c.v)
		}
		// The value of an earlier (JSON) packer decodes to the same.
		j, _ := json.Marshal(c.v)
		got, err = c.codec.Decode(j)
		if err != nil {
			t.Fatalf("%T from JSON: %v", c.v, err)
		}
		if !reflect.DeepEqual(got, c.v) {
			t.Errorf("%T: from JSON\n got %+v\nwant %+v", c.v, got, c.v)
		}
		legacy := -1 // a prefix that is a complete value of an earlier packer
		if d, ok := c.v.(*DedupeState); ok {
			legacy = len(b) - len(binary.AppendVarint(nil, int64(d.FirstPart)))
			old, err := c.codec.Decode(b[:legacy])
			if err != nil {
				t.Fatalf("DedupeState of an earlier packer (without FirstPart): %v", err)
			}
			want := *d
			want.FirstPart = -1
			if !reflect.DeepEqual(old, &want) {
				t.Errorf("DedupeState of an earlier packer\n got %+v\nwant %+v", old, &want)
			}
		}
		for n := 0; n < len(b); n++ {
			if _, err := c.codec.Decode(b[:n]); err == nil && n != legacy {
				t.Errorf("%T: %d of %d bytes decoded without error", c.v, n, len(b))
			}
		}
		if _, err := c.codec.Decode(append(b, 0)); err == nil {
			t.Errorf("%T: trailing byte accepted", c.v)
		}
	}
}

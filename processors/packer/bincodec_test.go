package packer

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/lovoo/goka"
	"go.opentelemetry.io/otel/trace"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
)

// someTrace is a sampled trace context with a trace state.
var someTrace = traceRef{TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5}, Flags: trace.FlagsSampled, TraceState: "v=1,w=2"}

func TestBinCodecRoundTrip(t *testing.T) {
	obs := Observed{Stream: record.Boxes, Partition: 3, Offset: 1 << 40, Size: "XL", ID: "box-ü-1", Heartbeat: true,
		MadeUS: -5, MadeAt: "2026-12-24T00:00:00.000001Z", Dup: true, Raw: []byte{0, 0xff, '{'}, Key: []byte("XL"),
		RawCut: results.Cut{Bytes: 9, SHA256: "ab"}, Trace: someTrace}
	ev := ClockEvent{Rec: obs, Class: ClassItem, Window: 10_000_000, Rank: 7, Closed: []Closed{{Start: 0, Toys: 2, Boxes: 3}, {Start: 10, Toys: 0, Boxes: 1}}}
	cases := []struct {
		codec goka.Codec
		v     any
	}{
		{binCodec[Observed, *Observed]{}, &obs},
		{binCodec[Observed, *Observed]{}, &Observed{}},
		{binCodec[DedupeState, *DedupeState]{}, &DedupeState{First: 1, FirstPart: 3}},
		{binCodec[DedupeState, *DedupeState]{}, &DedupeState{First: 1 << 40, FirstPart: -1}},
		{binCodec[ClockEvent, *ClockEvent]{}, &ev},
		{binCodec[ClockState, *ClockState]{}, &ClockState{Toys: StreamClock{Seen: true, Lasts: []PartOffset{{Partition: 2, Offset: 4}, {Partition: 0, Offset: 9}}, Max: 1e12}, Boxes: StreamClock{Max: -1},
			Open: []OpenWindow{{Start: 1, Toys: 2, Boxes: 3}}, Ev: ev}},
		{binCodec[ClockState, *ClockState]{}, &ClockState{}},
		{binCodec[SlotMsg, *SlotMsg]{}, &SlotMsg{Stream: record.Toys, ID: "t", Close: true, Size: "S", Window: 42}},
		{binCodec[SlotMsg, *SlotMsg]{}, &SlotMsg{Stream: record.Boxes, ID: "b", Size: "S", Window: 42, Trace: traceRef{TraceID: someTrace.TraceID, SpanID: someTrace.SpanID}}},
		{binCodec[SlotState, *SlotState]{}, &SlotState{Size: "M", Window: 1, Toy: "t", Box: "b", Closed: true, ToyTrace: someTrace, BoxTrace: traceRef{TraceID: trace.TraceID{9}, SpanID: trace.SpanID{8}}}},
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
		// A value of another version is refused, not guessed at.
		other := append([]byte{binVersion - 1}, b[1:]...)
		if _, err := c.codec.Decode(other); err == nil {
			t.Errorf("%T: a value of version %d decoded", c.v, binVersion-1)
		}
		for n := 0; n < len(b); n++ {
			if _, err := c.codec.Decode(b[:n]); err == nil {
				t.Errorf("%T: %d of %d bytes decoded without error", c.v, n, len(b))
			}
		}
		if _, err := c.codec.Decode(append(b, 0)); err == nil {
			t.Errorf("%T: trailing byte accepted", c.v)
		}
	}
}

// FuzzBinCodec: no input makes a decoder panic, and whatever decodes encodes
// to bytes that decode and encode to the same bytes again.
func FuzzBinCodec(f *testing.F) {
	codecs := []goka.Codec{binCodec[Observed, *Observed]{}, binCodec[DedupeState, *DedupeState]{},
		binCodec[ClockState, *ClockState]{}, binCodec[SlotMsg, *SlotMsg]{}, binCodec[SlotState, *SlotState]{}}
	st := ClockState{Toys: StreamClock{Seen: true, Lasts: []PartOffset{{Partition: 1, Offset: 7}}, Max: 5},
		Open: []OpenWindow{{Start: 1_798_070_390_000_000, Toys: 2}}, Ev: ClockEvent{Class: ClassItem, Closed: []Closed{{Start: 1, Toys: 1}}}}
	for i, v := range []any{&Observed{Stream: record.Toys, ID: "a", Raw: []byte("{}")}, &DedupeState{First: 1, FirstPart: 3},
		&st, &SlotMsg{ID: "x", Window: 9}, &SlotState{Toy: "t", Box: "b", Closed: true}} {
		b, err := codecs[i].Encode(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), b)
	}
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		c := codecs[int(which)%len(codecs)]
		v, err := c.Decode(b)
		if err != nil {
			return
		}
		once, err := c.Encode(v)
		if err != nil {
			t.Fatalf("%T decoded from %q does not encode: %v", v, b, err)
		}
		v2, err := c.Decode(once)
		if err != nil {
			t.Fatalf("%T: its own encoding %q does not decode: %v", v, once, err)
		}
		twice, _ := c.Encode(v2)
		if !bytes.Equal(once, twice) {
			t.Fatalf("%T: encoding not stable:\n%q\n%q", v, once, twice)
		}
	})
}

package packer

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
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
	obs := validRecord{Stream: record.Boxes, Partition: 3, Offset: 1 << 40, Size: "XL", ID: "box-ü-1", Heartbeat: true,
		MadeUS: -5, MadeAt: "2026-12-24T00:00:00.000001Z", Dup: true, Raw: []byte{0, 0xff, '{'}, Key: []byte("XL"),
		RawCut: results.Cut{Bytes: 9, SHA256: "ab"}, Trace: someTrace}
	ev := decision{Rec: obs, Class: classItem, Window: 10_000_000, Rank: 7, Closed: []closedWindow{{Start: 0, Toys: 2, Boxes: 3}, {Start: 10, Toys: 0, Boxes: 1}}}
	cases := []struct {
		codec goka.Codec
		v     any
		// opaque: the value's last bytes are kept as they are (a clock
		// value's state, which TestClockStateRoundTrip checks), so only
		// the bytes before them are checked for truncation.
		opaque int
	}{
		{binCodec[validRecord, *validRecord]{}, &obs, 0},
		{binCodec[validRecord, *validRecord]{}, &validRecord{}, 0},
		{binCodec[firstSeen, *firstSeen]{}, &firstSeen{First: 1, FirstPart: 3}, 0},
		{binCodec[firstSeen, *firstSeen]{}, &firstSeen{First: 1 << 40, FirstPart: -1}, 0},
		{binCodec[decision, *decision]{}, &ev, 0},
		{binCodec[clockValue, *clockValue]{}, &clockValue{Ev: ev, State: []byte{1, 2, 3}}, 3},
		{binCodec[clockValue, *clockValue]{}, &clockValue{State: []byte{}}, 0},
		{binCodec[slotState, *slotState]{}, &slotState{Size: "M", Window: 1, Toy: "t", Box: "b", Closed: true, ToyTrace: someTrace, BoxTrace: traceRef{TraceID: trace.TraceID{9}, SpanID: trace.SpanID{8}}}, 0},
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
		for n := 0; n < len(b)-c.opaque; n++ {
			if _, err := c.codec.Decode(b[:n]); err == nil {
				t.Errorf("%T: %d of %d bytes decoded without error", c.v, n, len(b))
			}
		}
		if _, isClock := c.v.(*clockValue); isClock {
			continue // trailing bytes are its state's to refuse
		}
		if _, err := c.codec.Decode(append(b, 0)); err == nil {
			t.Errorf("%T: trailing byte accepted", c.v)
		}
	}
}

// TestClockStateRoundTrip: the clock's state, which its table value keeps
// encoded, decodes to what was encoded and refuses every truncation and
// trailing bytes.
func TestClockStateRoundTrip(t *testing.T) {
	for _, st := range []sizeClock{
		{Toys: streamClock{Seen: true, Lasts: []partOffset{{Partition: 2, Offset: 4}, {Partition: 0, Offset: 9}}, Max: 1e12}, Boxes: streamClock{Max: -1},
			Open: []openWindow{{Start: 1, Toys: 2, Boxes: 3}, {Start: 1_798_070_390_000_000, Toys: 0, Boxes: 1 << 40}}},
		{Open: []openWindow{{Start: -62_167_219_200_000_000, Toys: 1}, {Start: -20_000_000, Boxes: 4}, {Start: 0}, {Start: 253_402_300_790_000_000, Toys: 3}}},
		{Open: []openWindow{{Start: math.MinInt64}, {Start: math.MaxInt64}}},
		{Open: []openWindow{{Start: 7, Toys: 1}}},
		{},
	} {
		for _, w := range []int64{1, 7, 10_000_000} {
			var got sizeClock
			if err := got.decodeState(st.appendState(nil, w)); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, st) {
				t.Errorf("round trip with W=%d µs\n got %+v\nwant %+v", w, got, st)
			}
		}
		b := st.appendState(nil, 10_000_000)
		for n := 0; n < len(b); n++ {
			var short sizeClock
			if err := short.decodeState(b[:n]); err == nil {
				t.Errorf("%d of %d bytes decoded without error", n, len(b))
			}
		}
		var long sizeClock
		if err := long.decodeState(append(b, 0)); err == nil {
			t.Errorf("trailing byte accepted")
		}
	}
}

// TestClockStateIsCompact: open windows W apart take about three bytes each
// (a step of 1 and two counts), whatever W and the year; steps that would
// not keep the windows sorted and distinct, or overflow, are refused.
func TestClockStateIsCompact(t *testing.T) {
	const n = 1000
	for _, w := range []int64{1, 10_000_000, 86_400_000_000} {
		st := sizeClock{Toys: streamClock{Seen: true, Max: 1}}
		for i := range int64(n) {
			st.Open = append(st.Open, openWindow{Start: 1_798_070_400_000_000/w*w + i*w, Toys: int(i % 50), Boxes: 1})
		}
		if b := st.appendState(nil, w); len(b) > 3*n+32 {
			t.Errorf("W=%d µs: %d open windows take %d bytes, want at most %d", w, n, len(b), 3*n+32)
		}
	}
	var empty sizeClock
	head := empty.Toys.appendBin(empty.Boxes.appendBin(nil))
	for _, tc := range []struct {
		name string
		tail []uint64 // after the clocks: count, unit, first start (zigzag), its counts, then step and counts
	}{
		{"a unit of 0", []uint64{2, 0, 0, 0, 0, 1, 0, 0}},
		{"a step of 0", []uint64{2, 1, 0, 0, 0, 0, 0, 0}},
		{"past the last µs", []uint64{2, 1 << 62, 0, 0, 0, 2, 0, 0}},
	} {
		b := head
		for _, u := range tc.tail {
			b = binary.AppendUvarint(b, u)
		}
		var st sizeClock
		if err := st.decodeState(b); err == nil {
			t.Errorf("%s: decoded to %+v", tc.name, st.Open)
		}
	}
}

// FuzzBinCodec: no input makes a decoder panic, and whatever decodes encodes
// to bytes that decode and encode to the same bytes again.
func FuzzBinCodec(f *testing.F) {
	codecs := []goka.Codec{binCodec[validRecord, *validRecord]{}, binCodec[firstSeen, *firstSeen]{},
		binCodec[clockValue, *clockValue]{}, binCodec[slotState, *slotState]{}}
	clk := sizeClock{Toys: streamClock{Seen: true, Lasts: []partOffset{{Partition: 1, Offset: 7}}, Max: 5},
		Open: []openWindow{{Start: 1_798_070_390_000_000, Toys: 2}}}
	st := clockValue{Ev: decision{Class: classItem, Closed: []closedWindow{{Start: 1, Toys: 1}}}, State: clk.appendState(nil, 10_000_000)}
	for i, v := range []any{&validRecord{Stream: record.Toys, ID: "a", Raw: []byte("{}")}, &firstSeen{First: 1, FirstPart: 3},
		&st, &slotState{Toy: "t", Box: "b", Closed: true}} {
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
		if cv, ok := v.(*clockValue); ok {
			// The state inside, as the clock stage reads it.
			// Varints may be overlong, so compare a second round trip.
			var st, again sizeClock
			if st.decodeState(cv.State) == nil {
				enc := st.appendState(nil, 10_000_000)
				if err := again.decodeState(enc); err != nil || !bytes.Equal(again.appendState(nil, 10_000_000), enc) {
					t.Fatalf("clock state %q decodes and encodes to %q, which does not round-trip (%v)", cv.State, enc, err)
				}
			}
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

// TestClockCache: a cached state is taken only for its own bytes, and only
// once; any other bytes are decoded.
func TestClockCache(t *testing.T) {
	a := &sizeClock{Toys: streamClock{Seen: true, Max: 5}, Open: []openWindow{{Start: 0, Toys: 1}, {Start: 10, Boxes: 2}}}
	b := &sizeClock{Boxes: streamClock{Seen: true, Max: 9}}
	encA, encB := a.appendState(nil, 10), b.appendState(nil, 10)
	c := newClockCache()
	c.put("M", encA, a)
	if got, err := c.take("M", encB); err != nil || got == a || !reflect.DeepEqual(got, b) {
		t.Errorf("take with other bytes = %+v, %v; want them decoded", got, err)
	}
	c.put("M", encA, a)
	if got, err := c.take("S", encA); err != nil || got == a || !reflect.DeepEqual(got, a) {
		t.Errorf("take for another size = %p, %v; want a decoded copy, not the cached %p", got, err, a)
	}
	if got, err := c.take("M", bytes.Clone(encA)); err != nil || got != a {
		t.Errorf("take with the cached bytes = %p, %v; want the cached %p", got, err, a)
	}
	if got, err := c.take("M", encA); err != nil || got == a || !reflect.DeepEqual(got, a) {
		t.Errorf("second take = %p, %v; want a decoded copy: a take removes the entry", got, err)
	}
	if _, err := c.take("M", encA[:len(encA)-1]); err == nil {
		t.Error("truncated bytes decoded")
	}
}

// TestClockStateAfterApply: the clock stage encodes a state from the one
// before it (appendStateAfter, which copies the windows an event left as
// they were); the bytes must be appendState's, after every kind of event:
// items into the newest, oldest, a middle or a new window, windows closed
// (the counted one among them or not, all of them), heartbeats, late items,
// duplicates, redeliveries and gaps of many windows.
func TestClockStateAfterApply(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 7))
		p := paramsUS{WindowUS: []int64{1, 3, 10_000_000}[seed%3], LatenessUS: int64(rng.IntN(4)) * 1_000}
		if p.WindowUS == 10_000_000 {
			p.LatenessUS *= 10_000
		}
		st, prev := &sizeClock{}, []byte(nil)
		var toyT, boxT, off int64 = 1_798_070_400_000_000, 1_798_070_400_000_000, 0
		for step := range 400 {
			rec := validRecord{Stream: record.Toys, Size: "M", Partition: 0, ID: "x"}
			clock := &toyT
			if rng.IntN(2) == 0 {
				rec.Stream, clock = record.Boxes, &boxT
			}
			// Mostly forward in small steps, sometimes a gap, sometimes back.
			switch r := rng.IntN(20); {
			case r == 0:
				*clock += int64(rng.IntN(50)) * p.WindowUS
			case r < 4:
				*clock -= int64(rng.IntN(5)) * p.WindowUS
			default:
				*clock += int64(rng.IntN(3)) * p.WindowUS / 2
			}
			rec.MadeUS = *clock
			rec.Heartbeat, rec.Dup = rng.IntN(10) == 0, rng.IntN(15) == 0
			if rng.IntN(40) == 0 {
				// Both streams' heartbeats jump ahead: every window closes.
				*clock = max(toyT, boxT) + int64(1+rng.IntN(3))*p.WindowUS + p.LatenessUS
				toyT, boxT = *clock, *clock
				rec.MadeUS, rec.Heartbeat = *clock, true
			}
			off++
			rec.Offset = off
			if rng.IntN(12) == 0 {
				rec.Offset = off - 1 // a redelivery: not applied
			}
			if !st.apply(p, rec) {
				continue
			}
			got := st.appendStateAfter(nil, prev, p.WindowUS)
			want := st.appendState(nil, p.WindowUS)
			if !bytes.Equal(got, want) {
				t.Fatalf("seed %d step %d (%+v, %d open): appendStateAfter\n%x\nwant appendState\n%x", seed, step, st.edit, len(st.Open), got, want)
			}
			prev = got
		}
	}
}

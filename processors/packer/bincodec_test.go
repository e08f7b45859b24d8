package packer

import (
	"bytes"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lovoo/goka"
	"go.opentelemetry.io/otel/trace"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
)

// someTrace is a sampled trace context with a trace state.
var someTrace = traceRef{TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5}, Flags: trace.FlagsSampled, TraceState: "v=1,w=2"}

func TestBinCodecRoundTrip(t *testing.T) {
	obs := validRecord{Stream: record.Boxes, Partition: 3, Offset: 1 << 40, Line: "XL", ID: "box-ü-1", Heartbeat: true,
		MadeUS: -5, MadeNS: 999, ArrivedUS: 1_798_070_400_000_001, Dup: true, Raw: []byte{0, 0xff, '{'}, Key: []byte("XL"),
		RawCut: results.Cut{Bytes: 9, SHA256: "ab"}, Trace: someTrace}
	ev := decision{Rec: obs, Class: classItem, Window: 10_000_000, Rank: 7, Max: 7_000_000, Closed: []closedWindow{{Start: 0, Toys: 2, Boxes: 3}, {Start: 10, Toys: 0, Boxes: 1}}}
	cases := []struct {
		codec goka.Codec
		v     any
	}{
		{binCodec[validRecord, *validRecord]{}, &obs},
		{binCodec[validRecord, *validRecord]{}, &validRecord{}},
		{binCodec[decision, *decision]{}, &ev},
		{binCodec[decision, *decision]{}, &decision{}},
		{binCodec[decision, *decision]{}, &decision{Rec: obs, Class: classLate, Max: 9, Snapshot: &snapshot{WindowUS: 10, LatenessUS: 5, Walk: 1<<63 + 5, Last: true, Keys: []keyStreams{
			{Key: "M", Toys: streamClock{Seen: true, Max: -3, Lasts: []partOffset{{Partition: 1, Offset: 7}, {Partition: 2, Offset: 1 << 40}}}},
			{Key: "XL", Boxes: streamClock{Seen: true, Max: 1 << 50, Lasts: []partOffset{{Partition: 0, Offset: 0}}}},
		}}}},
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

// TestBinCodecRefusesImpossibleCounts: a decision no clock makes (an item
// of rank 0 or below, a closed window with a negative count) is refused
// when read back, not turned into slots.
func TestBinCodecRefusesImpossibleCounts(t *testing.T) {
	c := binCodec[decision, *decision]{}
	for _, ev := range []*decision{
		{Class: classItem, Rank: 0},
		{Class: classItem, Rank: -3},
		{Class: classItem, Rank: 1, Closed: []closedWindow{{Start: 0, Toys: -1}}},
		{Class: classLate, Closed: []closedWindow{{Start: 0, Toys: 2}, {Start: 10, Boxes: -2}}},
	} {
		b, err := c.Encode(ev)
		if err != nil {
			t.Fatal(err)
		}
		if v, err := c.Decode(b); err == nil {
			t.Errorf("%+v decoded to %+v", *ev, v)
		}
	}
	ok := &decision{Class: classItem, Rank: 1, Closed: []closedWindow{{Start: 0, Toys: 0, Boxes: 2}}}
	b, _ := c.Encode(ok)
	if _, err := c.Decode(b); err != nil {
		t.Errorf("%+v: %v", *ok, err)
	}
}

// FuzzBinCodec: no input makes a decoder panic, and whatever decodes encodes
// to bytes that decode and encode to the same bytes again.
func FuzzBinCodec(f *testing.F) {
	codecs := []goka.Codec{binCodec[validRecord, *validRecord]{}, binCodec[decision, *decision]{}}
	for i, v := range []any{&validRecord{Stream: record.Toys, ID: "a", Raw: []byte("{}")},
		&decision{Class: classItem, Rank: 1, Max: 3, Closed: []closedWindow{{Start: 1, Toys: 1}}}} {
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
		// Varints may be overlong, so a second round trip is compared.
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
		if n := 1 + v2.(binMsg).binSize(); n != len(twice) {
			t.Fatalf("%T: binSize says %d bytes with the version, encoded %d", v2, n, len(twice))
		}
	})
}

// TestClosedWindowsAreCompact: a decision that closes a hundred thousand
// windows (one stream silent for eleven days of event time at W = 10 s, then
// back) takes about three bytes a window, so it fits in a 1 MiB record, and
// decodes to the windows it closed.
func TestClosedWindowsAreCompact(t *testing.T) {
	const n = 100_000
	ev := decision{Class: classHeartbeat, Window: 1_798_070_390_000_000}
	for i := range n {
		ev.Closed = append(ev.Closed, closedWindow{Start: 1_798_070_390_000_000 + int64(i)*20_000_000, Toys: i % 3, Boxes: 1})
	}
	codec := binCodec[decision, *decision]{}
	b, err := codec.Encode(&ev)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 3*n+64 {
		t.Errorf("%d closed windows take %d bytes", n, len(b))
	}
	got, err := codec.Decode(b)
	if err != nil || !reflect.DeepEqual(got.(*decision).Closed, ev.Closed) {
		t.Fatalf("closed windows do not round-trip (%v)", err)
	}
	// A step that would overflow a start is refused.
	far := decision{Closed: []closedWindow{{Start: math.MaxInt64 - 5}, {Start: math.MaxInt64}}}
	b, _ = codec.Encode(&far)
	if got, err := codec.Decode(b); err != nil || !reflect.DeepEqual(got.(*decision).Closed, far.Closed) {
		t.Fatalf("windows near the largest start: %v", err)
	}
	b[len(b)-3]++ // the step: one unit more than fits
	if _, err := codec.Decode(b); err == nil {
		t.Error("a step past the largest start decoded")
	}
}

// TestStreamClockBinSize: binSize is what appendBin writes, which a piece
// of a walk counts on to stay within its bytes.
func TestStreamClockBinSize(t *testing.T) {
	for _, c := range []streamClock{
		{},
		{Seen: true, Max: -1, Lasts: []partOffset{{Partition: 0, Offset: 0}}},
		{Seen: true, Max: math.MaxInt64, Lasts: []partOffset{{Partition: math.MaxInt32, Offset: math.MinInt64}, {Partition: 63, Offset: 64}}},
		{Seen: true, Max: math.MinInt64, Lasts: []partOffset{{Partition: -64, Offset: -65}}},
	} {
		if got, want := c.binSize(), len(c.appendBin(nil)); got != want {
			t.Errorf("%+v: binSize %d, appendBin wrote %d", c, got, want)
		}
		ks := keyStreams{Key: strings.Repeat("k", 200), Toys: c, Boxes: c}
		if got, want := ks.binSize(), len(appendStr(nil, ks.Key))+2*len(c.appendBin(nil)); got != want {
			t.Errorf("keyStreams %+v: binSize %d, want %d", c, got, want)
		}
	}
}

// TestBinSize: binSize is exactly what appendBin writes, so that encoding a
// record or a decision is one allocation, traced or not: a buffer that grew
// would be a second one and a copy per record on the packer's hottest path.
func TestBinSize(t *testing.T) {
	t0 := time.Date(2026, 12, 24, 0, 0, 0, 0, time.UTC).UnixMicro()
	small := validRecord{Stream: record.Toys, Line: "M", ID: "t1", MadeUS: t0}
	large := validRecord{
		Stream: record.Boxes, Partition: math.MaxInt32, Offset: math.MaxInt64, Via: math.MaxInt64,
		Line: "XL/hall-00000015", ID: strings.Repeat("b", 300), Heartbeat: true, Dup: true,
		MadeUS: math.MinInt64, MadeNS: 999, ArrivedUS: math.MaxInt64,
		Raw: bytes.Repeat([]byte("r"), 20_000), Key: []byte("XL/hall-00000015"),
		RawCut: results.Cut{Bytes: 1 << 40, SHA256: strings.Repeat("f", 64)},
	}
	unsampled := someTrace
	unsampled.Flags, unsampled.TraceState = 0, ""
	snap := &snapshot{WindowUS: 10_000_000, LatenessUS: 5_000_000, Walk: 1 << 40, First: true, Keys: []keyStreams{
		{Key: "M", Toys: streamClock{Seen: true, Max: t0, Lasts: []partOffset{{Partition: 3, Offset: 1 << 33}}}},
		{Key: "S/hall-2"},
	}}
	closed := []closedWindow{{Start: t0 - 30_000_000, Toys: 1 << 20, Boxes: 2}, {Start: t0 - 10_000_000}, {Start: t0, Toys: 1}}
	for _, rec := range []validRecord{{}, small, large} {
		for _, tr := range []traceRef{{}, unsampled, someTrace} {
			rec.Trace = tr
			for _, d := range []decision{
				{Rec: rec},
				{Rec: rec, Class: classItem, Window: t0, Rank: 3, Max: t0 + 7},
				{Rec: rec, Class: classHeartbeat, Window: math.MinInt64, Rank: math.MaxInt64, Max: math.MaxInt64, Closed: closed, Snapshot: snap},
				{Rec: rec, Class: classLate, Closed: closed[:1], Snapshot: &snapshot{}},
			} {
				checkBinSize(t, binCodec[decision, *decision]{}, &d)
			}
			checkBinSize(t, binCodec[validRecord, *validRecord]{}, &rec)
		}
	}
}

func checkBinSize[T any, PT interface {
	*T
	binMsg
}](t *testing.T, c binCodec[T, PT], m PT) {
	t.Helper()
	if got, want := m.binSize(), len(m.appendBin(nil)); got != want {
		t.Errorf("%T %+v: binSize %d, appendBin wrote %d", m, m, got, want)
	}
	if n := testing.AllocsPerRun(10, func() { _, _ = c.Encode(m) }); n != 1 {
		t.Errorf("%T: encoding takes %.0f allocations, want 1", m, n)
	}
}

// TestMadeAtFromNumbers: a late row's made_at, rebuilt from the floor
// microseconds and the nanoseconds past them, is the text FormatTime makes
// of the input's made_at, before and after the epoch, at the contract's
// extreme years.
func TestMadeAtFromNumbers(t *testing.T) {
	for _, s := range []string{
		"2026-12-24T00:00:05.123Z", "2026-12-24T00:00:05.123456789Z", "2026-12-24T00:00:05Z",
		"1969-12-31T23:59:59.999999999Z", "1969-12-31T23:59:59.000000001Z", "1960-01-01T00:00:00.5Z",
		"0001-01-01T00:00:00Z", "0001-01-01T00:00:00.000000001Z", "9999-12-31T23:59:59.999999999Z",
		"2026-12-24T01:00:05.25+01:00",
	} {
		in, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		// UnixMicro floors (record.MadeAtMicros, TestMadeAtMicrosFloors).
		o := validRecord{MadeUS: in.UnixMicro(), MadeNS: subMicro(in)}
		if got, want := o.madeAt(), record.FormatTime(in); got != want {
			t.Errorf("%s: made_at %s, want %s", s, got, want)
		}
	}
}

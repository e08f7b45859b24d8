package kafkatrace

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/lovoo/goka"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// TestW3CMatchesThePropagators: what remoteSpanContext reads from headers,
// and what putHeaders writes, is what propagation.TraceContext and
// propagation.Baggage read and write, for well-formed headers and for
// headers mangled every way a byte can be.
func TestW3CMatchesThePropagators(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	prop := propagator()
	valid := func() string {
		return fmt.Sprintf("%02x-%016x%016x-%016x-%02x", r.IntN(3), r.Uint64(), r.Uint64(), r.Uint64(), r.IntN(4))
	}
	cases := []string{
		"", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-", "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-what-comes",
		"ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "00-00000000000000000000000000000000-b7ad6b7169203331-01",
		"00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01", "00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01",
		"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-09", "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-ff",
	}
	for range 2000 {
		tp := []byte(valid())
		switch r.IntN(4) {
		case 1: // a byte changed
			tp[r.IntN(len(tp))] = byte(r.IntN(256))
		case 2: // cut short
			tp = tp[:r.IntN(len(tp))]
		case 3: // something appended
			tp = append(tp, []byte("-x")[:1+r.IntN(2)]...)
		}
		cases = append(cases, string(tp))
	}
	states := []string{"", "vendor=value", "a=1,b=2", "not a trace state"}
	for i, tp := range cases {
		h := goka.Headers{}
		if tp != "" || i%2 == 0 {
			h[traceparentHeader] = []byte(tp)
		}
		if s := states[i%len(states)]; s != "" {
			h[tracestateHeader] = []byte(s)
		}
		want := trace.SpanContextFromContext(prop.Extract(context.Background(), HeadersCarrier(h)))
		if got := remoteSpanContext(h); !got.Equal(want) {
			t.Fatalf("headers %q: read %v, the propagator reads %v", h, got, want)
		}
	}

	bag, err := baggage.Parse("user=elf,region=north")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		flags := trace.TraceFlags(r.IntN(256))
		ts, _ := trace.ParseTraceState([]string{"", "vendor=value"}[i%2])
		sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{byte(i), 1}, SpanID: trace.SpanID{byte(i), 2}, TraceFlags: flags, TraceState: ts})
		ctx := trace.ContextWithSpanContext(context.Background(), sc)
		if i%3 == 0 {
			ctx = baggage.ContextWithBaggage(ctx, bag)
		}
		want := goka.Headers{}
		prop.Inject(ctx, HeadersCarrier(want))
		// Baggage's members come in any order.
		got := goka.Headers{}
		putHeaders(got, sc, ctx)
		gb, _ := baggage.Parse(string(got[baggageHeader]))
		wb, _ := baggage.Parse(string(want[baggageHeader]))
		delete(got, baggageHeader)
		delete(want, baggageHeader)
		if !reflect.DeepEqual(got, want) || !slices.Equal(members(gb), members(wb)) {
			t.Fatalf("span context %v: wrote %q (%v), the propagator writes %q (%v)", sc, got, gb, want, wb)
		}
		want[baggageHeader] = []byte(wb.String())
		if wb.Len() == 0 {
			delete(want, baggageHeader)
		}
		read, ok := withBaggage(context.Background(), want)
		if rb := baggage.FromContext(read); ok != (i%3 == 0) || !slices.Equal(members(rb), members(wb)) {
			t.Fatalf("baggage read from %q: %q", want, rb)
		}
	}
}

func members(b baggage.Baggage) []string {
	var out []string
	for _, m := range b.Members() {
		out = append(out, m.String())
	}
	slices.Sort(out)
	return out
}

// BenchmarkRemoteSpanContext is a record's traceparent read.
func BenchmarkRemoteSpanContext(b *testing.B) {
	h := goka.Headers{traceparentHeader: []byte("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")}
	b.Run("kafkatrace", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			remoteSpanContext(h)
		}
	})
	b.Run("propagator", func(b *testing.B) {
		prop := propagation.TraceContext{}
		b.ReportAllocs()
		for b.Loop() {
			trace.SpanContextFromContext(prop.Extract(context.Background(), HeadersCarrier(h)))
		}
	})
}

package kafkatrace

import (
	"context"
	"errors"
	"testing"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"
	"github.com/lovoo/goka/tester"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/northpole-workshop/northpole/internal/gokakit"
)

// relay is a goka group in goka's tester that reads "in" and writes each
// record to "out", traced by a Goka over tp, its producer wrapped (Producer).
type relay struct {
	tt  *tester.Tester
	out *tester.QueueTracker
}

func newRelay(t *testing.T, tp trace.TracerProvider) *relay {
	t.Helper()
	g := NewGoka(tp, GokaConfig{Group: "relay", ClientID: "relay-client", Brokers: []string{"kafka:9092"}})
	tt := tester.New(t)
	gg := goka.DefineGroup("relay",
		goka.Input("in", new(codec.Bytes), g.Process()(func(ctx goka.Context, msg any) { ctx.Emit("out", ctx.Key(), msg) })),
		goka.Output("out", new(codec.Bytes)))
	proc, err := goka.NewProcessor(nil, gg, goka.WithTester(tt), goka.WithLogger(gokakit.Logger(nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- proc.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return &relay{tt: tt, out: tt.NewQueueTracker("out")}
}

// pass sends one record with headers h through the relay and returns the
// headers of what it wrote.
func (r *relay) pass(t *testing.T, h goka.Headers) goka.Headers {
	t.Helper()
	r.tt.Consume("in", "M", []byte("{}"), tester.WithHeaders(h))
	out, _, _, ok := r.out.NextWithHeaders()
	if !ok {
		t.Fatal("the relay wrote nothing")
	}
	return out
}

// TestUnsampledRecordsCarryTheDecision: a record nobody samples gets no
// span, and what is written for it carries its trace (trace id, trace state,
// baggage) with the sampled flag off, under a span id of its own, so that
// the consumer's parent-based sampler follows the decision. A root nobody
// samples (no traceparent) starts a trace of its own all the same.
func TestUnsampledRecordsCarryTheDecision(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	r := newRelay(t, newPolicyProvider(0, true, sdktrace.WithSpanProcessor(rec)))
	in := goka.Headers{
		traceparentHeader: []byte("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"),
		tracestateHeader:  []byte("vendor=value"),
		baggageHeader:     []byte("user=elf"),
	}
	out := r.pass(t, in)
	sc, parent := remoteSpanContext(out), remoteSpanContext(in)
	if !sc.IsValid() || sc.IsSampled() || sc.TraceID() != parent.TraceID() || sc.SpanID() == parent.SpanID() || sc.TraceState().String() != "vendor=value" {
		t.Errorf("written with %q, want the input's trace and state, unsampled, another span id", out)
	}
	if string(out[baggageHeader]) != "user=elf" {
		t.Errorf("written with baggage %q, want the input's", out[baggageHeader])
	}
	root := remoteSpanContext(r.pass(t, goka.Headers{}))
	if !root.IsValid() || root.IsSampled() {
		t.Errorf("a record without a trace was written with %v, want a trace of its own, unsampled", root)
	}
	if n := len(rec.Started()); n != 0 {
		t.Errorf("%d spans started, want none", n)
	}
}

// TestProcessFailsItsSpanOnly: a callback's panic (goka's ctx.Fail) ends a
// recording process span as failed, and goes on.
func TestProcessFailsItsSpanOnly(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	g := NewGoka(newPolicyProvider(1, true, sdktrace.WithSpanProcessor(rec)), GokaConfig{})
	failure := errors.New("boom")
	func() {
		defer func() {
			if r, _ := recover().(error); !errors.Is(r, failure) {
				t.Errorf("recovered %v, want the callback's panic", r)
			}
		}()
		g.Process()(func(goka.Context, any) { panic(failure) })(&fakeContext{headers: goka.Headers{}}, []byte("{}"))
	}()
	if ended := rec.Ended(); len(ended) != 1 || ended[0].Status().Code != codes.Error || attrsOf(ended[0])["error.type"] != "*errors.errorString" {
		t.Errorf("spans %v, want one failed process span", names(ended))
	}
}

package kafkatrace

import (
	"context"
	"errors"
	"hash"
	"testing"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"
	"github.com/lovoo/goka/tester"
	"github.com/twmb/franz-go/pkg/kerr"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/northpole-workshop/northpole/internal/gokakit"
)

// relay is a goka group in goka's tester that reads "in" and writes each
// record to "out" twice (keys k and k+"2"), traced by a Goka over tp, its producer wrapped (Producer).
type relay struct {
	tt  *tester.Tester
	out *tester.QueueTracker
}

func newRelay(t *testing.T, tp trace.TracerProvider) *relay {
	t.Helper()
	g := NewGoka(tp, GokaConfig{Group: "relay", ClientID: "relay-client", Brokers: []string{"kafka:9092"}})
	tt := tester.New(t)
	gg := goka.DefineGroup("relay",
		goka.Input("in", new(codec.Bytes), g.Process()(func(ctx goka.Context, msg any) {
			ctx.Emit("out", ctx.Key(), msg)
			ctx.Emit("out", ctx.Key()+"2", msg)
		})),
		goka.Output("out", new(codec.Bytes)))
	proc, err := goka.NewProcessor(nil, gg, goka.WithTester(tt), goka.WithLogger(gokakit.Logger(nil)),
		goka.WithProducerBuilder(func(b []string, id string, h func() hash.Hash32) (goka.Producer, error) {
			p, err := tt.ProducerBuilder()(b, id, h)
			return g.Producer(p), err
		}))
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
// headers of the first record it wrote; each record carries a span context
// of its own.
func (r *relay) pass(t *testing.T, h goka.Headers) goka.Headers {
	t.Helper()
	r.tt.Consume("in", "M", []byte("{}"), tester.WithHeaders(h))
	first, _, _, ok := r.out.NextWithHeaders()
	second, _, _, ok2 := r.out.NextWithHeaders()
	if !ok || !ok2 {
		t.Fatal("the relay wrote less than two records")
	}
	if a, b := remoteSpanContext(first), remoteSpanContext(second); a.SpanID() == b.SpanID() || a.TraceID() != b.TraceID() {
		t.Errorf("the two records of one input carry %v and %v, want two span ids in one trace", a, b)
	}
	return first
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

// TestSendSpanEndsWithTheAnswer: with the producer wrapped, the send span
// of a sampled record ends when the producer's promise does, with the
// partition and offset it reports, or with the error; and its context is
// what the record carries.
func TestSendSpanEndsWithTheAnswer(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	r := newRelay(t, newPolicyProvider(1, true, sdktrace.WithSpanProcessor(rec)))
	out := r.pass(t, goka.Headers{traceparentHeader: []byte("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")})
	var send sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "send out" && attrsOf(s)["messaging.kafka.message.key"] == "M" {
			send = s
		}
	}
	if send == nil {
		t.Fatalf("no send span in %v", names(rec.Ended()))
	}
	if a := attrsOf(send); a["messaging.destination.partition.id"] != "0" || a["messaging.kafka.offset"] != "0" || a["messaging.kafka.message.key"] != "M" {
		t.Errorf("send span attributes %v, want the tester's partition 0 and offset 0", a)
	}
	if sc := remoteSpanContext(out); sc.SpanID() != send.SpanContext().SpanID() || !sc.IsSampled() {
		t.Errorf("record written with %v, want the send span's context %v", sc, send.SpanContext())
	}

	// A promise that finishes later, with an error.
	g := NewGoka(newPolicyProvider(1, true, sdktrace.WithSpanProcessor(rec)), GokaConfig{})
	rec.Reset()
	late := &laterProducer{}
	p := g.Producer(late)
	_, span := g.tracer.Start(context.Background(), "send out")
	g.sending.Store(span.SpanContext().SpanID(), &pendingSend{span: span, attrs: getAttrs()})
	p.EmitWithHeaders("out", "M", nil, headersOf(span.SpanContext(), nil))
	if len(rec.Ended()) != 0 {
		t.Fatal("the send span ended before the producer answered")
	}
	late.finish(&sarama.ProducerMessage{Partition: 3}, kerr.NotLeaderForPartition)
	ended := rec.Ended()
	if len(ended) != 1 || ended[0].Status().Code != codes.Error {
		t.Fatalf("after a failed answer: spans %v, want the send span failed", names(ended))
	}
	if a := attrsOf(ended[0]); a["messaging.destination.partition.id"] != "3" || a["error.type"] != "NOT_LEADER_FOR_PARTITION" || a["messaging.kafka.offset"] != "" {
		t.Errorf("failed send span attributes %v, want partition 3, error.type and no offset", a)
	}
}

// laterProducer's promises finish when the test says.
type laterProducer struct {
	goka.Producer
	finish func(*sarama.ProducerMessage, error) *goka.Promise
}

func (p *laterProducer) EmitWithHeaders(string, string, []byte, goka.Headers) *goka.Promise {
	promise, finish := goka.NewPromiseWithFinisher()
	p.finish = finish
	return promise
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

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
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/northpole-workshop/northpole/internal/gokakit"
	"github.com/northpole-workshop/northpole/internal/testsupport/gokatest"
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
	gokatest.Run(t, proc)
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
	g.out.put(recordID{"out", "M"}, outgoing{sc: span.SpanContext(), send: &pendingSend{span: span, attrs: getAttrs()}})
	p.EmitWithHeaders("out", "M", nil, nil)
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

// TestRecordsKeepTheirContext: with the producer wrapped, a record's trace
// context goes straight to the producer, matched by topic and key. Two
// records with the same topic and key written at once by two goroutines
// each keep their own: the second goes through goka's headers, and the
// producer, seeing a traceparent there, leaves the first's context to it.
func TestRecordsKeepTheirContext(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	g := NewGoka(newPolicyProvider(1, true, sdktrace.WithSpanProcessor(rec)), GokaConfig{})
	produced := &gokatest.Producer{Keep: true}
	p := g.Producer(produced)
	relay := g.Process()(func(ctx goka.Context, _ any) { ctx.Emit("out", "same", nil) })
	input := func(trace string) *gokatest.Context {
		c, err := gokatest.New(gokatest.Record{Topic: "in", Key: "same", Headers: goka.Headers{
			traceparentHeader: []byte("00-" + trace + "-b7ad6b7169203331-01")}}, p)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	first, second := input("0af7651916cd43dd8448eb211c800001"), input("0af7651916cd43dd8448eb211c800002")
	held, release := make(chan struct{}), make(chan struct{})
	first.Hold = func(goka.Stream, string) { close(held); <-release }
	done := make(chan struct{})
	go func() {
		defer close(done)
		relay(first, []byte("{}"))
	}()
	<-held
	relay(second, []byte("{}"))
	close(release)
	<-done

	records := produced.Records()
	if len(records) != 2 {
		t.Fatalf("%d records, want 2", len(records))
	}
	for i, want := range []string{"0af7651916cd43dd8448eb211c800002", "0af7651916cd43dd8448eb211c800001"} {
		sc := remoteSpanContext(goka.Headers{traceparentHeader: records[i].Header(traceparentHeader)})
		if sc.TraceID().String() != want {
			t.Errorf("record %d carries %v, want trace %s", i, sc, want)
		}
	}
	if !g.direct.Load() {
		t.Error("the group no longer hands contexts to its producer")
	}
}

// TestProducerNotCalledWithinEmit: were goka to stop calling its producer
// from within Emit, the record that showed it would go without its trace
// context, and every later one would carry it in goka's headers again.
func TestProducerNotCalledWithinEmit(t *testing.T) {
	var reported []error
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { reported = append(reported, err) }))
	defer otel.SetErrorHandler(otel.ErrorHandlerFunc(func(error) {}))
	g := NewGoka(newPolicyProvider(0, true), GokaConfig{})
	produced := &gokatest.Producer{Keep: true}
	g.Producer(produced)
	late, err := gokatest.New(gokatest.Record{Topic: "in"}, nopProducer{})
	if err != nil {
		t.Fatal(err)
	}
	relay := g.Process()(func(ctx goka.Context, _ any) { ctx.Emit("out", "k", nil) })
	relay(late, []byte("{}"))
	if g.direct.Load() || len(reported) != 1 {
		t.Fatalf("direct %v, reported %v: want headers from now on, and the lost context reported", g.direct.Load(), reported)
	}
	next, err := gokatest.New(gokatest.Record{Topic: "in"}, produced)
	if err != nil {
		t.Fatal(err)
	}
	relay(next, []byte("{}"))
	if r := produced.Records(); len(r) != 1 || !remoteSpanContext(goka.Headers{traceparentHeader: r[0].Header(traceparentHeader)}).IsValid() {
		t.Errorf("records %v, want one with its traceparent", r)
	}
}

// nopProducer takes a record and does nothing with it: a producer goka
// would call after Emit returned, as far as Emit can tell.
type nopProducer struct{ goka.Producer }

func (nopProducer) EmitWithHeaders(string, string, []byte, goka.Headers) *goka.Promise {
	p, finish := goka.NewPromiseWithFinisher()
	finish(nil, nil)
	return p
}

// TestFailedEmitEndsItsSpan: an Emit that fails (goka's ctx.Fail panics)
// ends its send span and leaves nothing waiting for the producer: the next
// record with the same topic and key gets its own context.
func TestFailedEmitEndsItsSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	g := NewGoka(newPolicyProvider(1, true, sdktrace.WithSpanProcessor(rec)), GokaConfig{})
	produced := &gokatest.Producer{Keep: true}
	p := g.Producer(produced)
	relay := g.Process()(func(ctx goka.Context, _ any) { ctx.Emit("out", "k", nil) })
	failing, err := gokatest.New(gokatest.Record{Topic: "in"}, p)
	if err != nil {
		t.Fatal(err)
	}
	failing.Hold = func(goka.Stream, string) { panic(errors.New("encoding failed")) }
	func() {
		defer func() { _ = recover() }()
		relay(failing, []byte("{}"))
	}()
	if n := len(rec.Ended()); n != 2 {
		t.Errorf("%d spans ended after a failed emit, want its send span and its process span", n)
	}
	ok, err := gokatest.New(gokatest.Record{Topic: "in"}, p)
	if err != nil {
		t.Fatal(err)
	}
	relay(ok, []byte("{}"))
	r := produced.Records()
	if len(r) != 1 {
		t.Fatalf("%d records, want 1", len(r))
	}
	send := rec.Ended()[len(rec.Ended())-2] // the send span ends in the producer's promise, before the process span
	if sc := remoteSpanContext(goka.Headers{traceparentHeader: r[0].Header(traceparentHeader)}); sc.SpanID() != send.SpanContext().SpanID() {
		t.Errorf("record carries %v, want its own send span %v", sc, send.SpanContext())
	}
}

package kafkatrace

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"testing"

	"github.com/lovoo/goka"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

func TestCarriersRoundTrip(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	ctx, span := tp.Tracer("t").Start(context.Background(), "s")
	defer span.End()
	want := span.SpanContext()
	prop := propagator()

	shared := []kgo.RecordHeader{{Key: "traceparent", Value: []byte("stale")}, {Key: "other", Value: []byte("x")}, {Key: "traceparent", Value: []byte("older")}}
	r := &kgo.Record{Headers: shared}
	prop.Inject(ctx, RecordCarrier{r})
	n := 0
	for _, h := range r.Headers {
		if h.Key == "traceparent" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("record has %d traceparent headers, want 1 (replaced)", n)
	}
	if string(shared[0].Value) != "stale" || string(shared[2].Value) != "older" {
		t.Errorf("headers shared with another record changed: %v", shared)
	}
	// What a consumer reads is what the producer wrote.
	read := &kgo.Record{Headers: slices.Clone(r.Headers)}
	gh := goka.Headers{}
	for _, h := range read.Headers {
		gh[h.Key] = h.Value
	}
	for name, c := range map[string]propagation.TextMapCarrier{
		"produced": RecordCarrier{r}, "consumed": RecordCarrier{read}, "goka": HeadersCarrier(gh),
	} {
		got := trace.SpanContextFromContext(prop.Extract(context.Background(), c))
		if got.TraceID() != want.TraceID() || got.SpanID() != want.SpanID() || !got.IsRemote() {
			t.Errorf("%s carrier: extracted %v, want %v", name, got, want)
		}
		if c.Get("other") != "x" || len(c.Keys()) != 2 {
			t.Errorf("%s carrier: keys %v", name, c.Keys())
		}
	}
}

func TestOffMeansNil(t *testing.T) {
	if NewProducer(nil, "c") != nil || NewProducer(noop.NewTracerProvider(), "c") != nil || NewGoka(noop.NewTracerProvider(), GokaConfig{}) != nil {
		t.Fatal("nil or no-op provider should give nil instrumentation")
	}
	var g *Goka
	called := false
	g.Process()(func(goka.Context, any) { called = true })(nil, nil)
	if g.Resume(nil, trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}})) != nil {
		t.Error("nil Goka's Resume changed the context")
	}
	if !called {
		t.Error("nil Goka's middleware did not call through")
	}
	var p *Producer
	if p.Start(context.Background(), &kgo.Record{}) != nil {
		t.Error("nil producer made a span")
	}
}

func TestProducerSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	p := NewProducer(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)), "northpole-elves", "kafka:9092", "kafka-2:9092")
	r := &kgo.Record{Topic: "toys", Key: []byte("M"), Value: []byte(`{"toy_id":"1"}`)}
	span := p.Start(context.Background(), r)
	r.Partition, r.Offset = 3, 42
	End(span, r, nil)
	failed := p.Start(context.Background(), &kgo.Record{Topic: "toys"})
	End(failed, &kgo.Record{Topic: "toys", Partition: 1}, fmt.Errorf("produce: %w", kerr.NotLeaderForPartition))

	ended := rec.Ended()
	if len(ended) != 2 {
		t.Fatalf("%d spans", len(ended))
	}
	s := ended[0]
	if s.Name() != "send toys" || s.SpanKind() != trace.SpanKindProducer {
		t.Errorf("span %q kind %v", s.Name(), s.SpanKind())
	}
	attrs := attrsOf(s)
	for k, v := range map[string]string{
		"messaging.system": "kafka", "messaging.operation.name": "send", "messaging.operation.type": "send",
		"messaging.destination.name": "toys", "messaging.destination.partition.id": "3", "messaging.kafka.offset": "42",
		"messaging.client.id": "northpole-elves", "messaging.client_id": "northpole-elves",
		"messaging.kafka.message.key": "M", "messaging.message.body.size": "14",
		"server.address": "kafka", "server.port": "9092",
	} {
		if attrs[k] != v {
			t.Errorf("%s = %q, want %q", k, attrs[k], v)
		}
	}
	// The record carries the send span's context.
	got := trace.SpanContextFromContext(propagator().Extract(context.Background(), RecordCarrier{r}))
	if got.SpanID() != s.SpanContext().SpanID() {
		t.Errorf("headers carry %v, want the send span %v", got.SpanID(), s.SpanContext().SpanID())
	}
	if f := ended[1]; f.Status().Code != codes.Error {
		t.Errorf("failed send: status %v", f.Status())
	} else if a := attrsOf(f); a["error.type"] != "NOT_LEADER_FOR_PARTITION" || a["messaging.destination.partition.id"] != "1" || a["messaging.kafka.offset"] != "" {
		t.Errorf("failed send: error.type %q partition %q offset %q, want Kafka's name of code 6, partition 1 and no offset",
			a["error.type"], a["messaging.destination.partition.id"], a["messaging.kafka.offset"])
	}
}

func attrsOf(s sdktrace.ReadOnlySpan) map[string]string {
	attrs := map[string]string{}
	for _, a := range s.Attributes() {
		attrs[string(a.Key)] = a.Value.String()
	}
	return attrs
}

// TestErrorType: Kafka errors, wrapped or not, are named by their protocol
// code name; client-side sentinels by their variable; the
// rest by the Go type under fmt's wrappers, as the conventions ask.
func TestErrorType(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"franz-go kerr", kerr.UnknownTopicOrPartition, "UNKNOWN_TOPIC_OR_PARTITION"},
		{"franz-go kerr wrapped", fmt.Errorf("produce: %w", kerr.ErrorForCode(56)), "KAFKA_STORAGE_ERROR"},
		{"franz-go unknown server error", kerr.UnknownServerError, "UNKNOWN_SERVER_ERROR"},
		{"joined", errors.Join(errors.New("first"), kerr.NotEnoughReplicas), "NOT_ENOUGH_REPLICAS"},
		{"kgo sentinel", fmt.Errorf("produce to topic %q: %w", "toys", kgo.ErrRecordTimeout), "github.com/twmb/franz-go/pkg/kgo.ErrRecordTimeout"},
		{"kgo client closed", kgo.ErrClientClosed, "github.com/twmb/franz-go/pkg/kgo.ErrClientClosed"},
		{"context canceled", fmt.Errorf("elves: %w", context.Canceled), "context.Canceled"},
		{"deadline", context.DeadlineExceeded, "context.deadlineExceededError"},
		{"network", fmt.Errorf("dial: %w", &net.OpError{Op: "dial", Err: errors.New("refused")}), "*net.OpError"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := ErrorType(c.err); got != c.want {
				t.Errorf("ErrorType(%v) = %q, want %q", c.err, got, c.want)
			}
		})
	}
}

// TestServerAttrs: the first bootstrap address becomes server.address and
// server.port.
func TestServerAttrs(t *testing.T) {
	for _, c := range []struct {
		name    string
		brokers []string
		addr    string
		port    string
	}{
		{"one", []string{"kafka:9092"}, "kafka", "9092"},
		{"several: the first", []string{"k1.example:9093", "k2.example:9094"}, "k1.example", "9093"},
		{"IPv6", []string{"[::1]:9092"}, "::1", "9092"},
		{"no port", []string{"kafka"}, "kafka", ""},
		{"none", nil, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := map[string]string{}
			for _, a := range ServerAttrs(c.brokers) {
				got[string(a.Key)] = a.Value.String()
			}
			if got["server.address"] != c.addr || got["server.port"] != c.port || len(got) != btoi(c.addr != "")+btoi(c.port != "") {
				t.Errorf("ServerAttrs(%v) = %v, want address %q port %q", c.brokers, got, c.addr, c.port)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// fakeContext is the part of a goka.Context the middlewares use; anything
// else panics (nil embedded interface).
type fakeContext struct {
	gokaContext
	headers goka.Headers
}

func (c *fakeContext) Context() context.Context                             { return context.Background() }
func (c *fakeContext) Headers() goka.Headers                                { return c.headers }
func (c *fakeContext) Topic() goka.Stream                                   { return "toys" }
func (c *fakeContext) Key() string                                          { return "M" }
func (c *fakeContext) Partition() int32                                     { return 2 }
func (c *fakeContext) Offset() int64                                        { return 7 }
func (c *fakeContext) Emit(goka.Stream, string, any, ...goka.ContextOption) {}

// TestGokaSpans: a goka group's process and send spans carry the broker of
// its bootstrap list; a send span made under WithLinks links to them; a
// callback that fails (goka's ctx.Fail panics with the error) sets
// error.type on its process span.
func TestGokaSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	g := NewGoka(tp, GokaConfig{Group: "packer-slots", ClientID: "northpole-packer-slots", Brokers: []string{"broker-1:19092", "broker-2:19092"}})
	_, other := tp.Tracer("t").Start(context.Background(), "the item's record")
	other.End()
	link := trace.Link{SpanContext: other.SpanContext()}

	g.Process()(func(gctx goka.Context, _ any) {
		gctx.Emit("packed", "M|t1", nil)
		WithLinks(gctx, link).Emit("unpacked", "M|t2", nil)
	})(&fakeContext{headers: goka.Headers{}}, []byte("{}"))

	spans := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		spans[s.Name()] = s
	}
	for _, name := range []string{"process toys", "send packed", "send unpacked"} {
		s, ok := spans[name]
		if !ok {
			t.Fatalf("no span %q in %v", name, spans)
		}
		if a := attrsOf(s); a["server.address"] != "broker-1" || a["server.port"] != "19092" {
			t.Errorf("%s: server.address %q server.port %q, want broker-1 19092", name, a["server.address"], a["server.port"])
		}
	}
	if l := spans["send unpacked"].Links(); len(l) != 1 || l[0].SpanContext.SpanID() != other.SpanContext().SpanID() {
		t.Errorf("send unpacked: links %+v, want the one given", l)
	}
	if l := spans["send packed"].Links(); len(l) != 0 {
		t.Errorf("send packed: links %+v, want none (WithLinks returned a new context)", l)
	}

	rec.Reset()
	func() {
		defer func() { _ = recover() }()
		g.Process()(func(goka.Context, any) { panic(fmt.Errorf("slot: %w", kerr.UnknownTopicOrPartition)) })(&fakeContext{headers: goka.Headers{}}, []byte("{}"))
	}()
	if ended := rec.Ended(); len(ended) != 1 || ended[0].Status().Code != codes.Error || attrsOf(ended[0])["error.type"] != "UNKNOWN_TOPIC_OR_PARTITION" {
		t.Errorf("failed callback: spans %v, want one with status Error and error.type UNKNOWN_TOPIC_OR_PARTITION", names(ended))
	}
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, fmt.Sprintf("%s %v %v", s.Name(), s.Status(), attrsOf(s)["error.type"]))
	}
	return out
}

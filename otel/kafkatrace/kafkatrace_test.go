package kafkatrace

import (
	"context"
	"errors"
	"testing"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
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

	pm := &sarama.ProducerMessage{Headers: []sarama.RecordHeader{{Key: []byte("traceparent"), Value: []byte("stale")}, {Key: []byte("other"), Value: []byte("x")}}}
	prop.Inject(ctx, ProducerMessageCarrier{pm})
	n := 0
	for _, h := range pm.Headers {
		if string(h.Key) == "traceparent" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("producer message has %d traceparent headers, want 1 (replaced)", n)
	}
	// What a consumer reads is what the producer wrote.
	cm := &sarama.ConsumerMessage{}
	for _, h := range pm.Headers {
		cm.Headers = append(cm.Headers, &sarama.RecordHeader{Key: h.Key, Value: h.Value})
	}
	gh := goka.Headers{}
	for _, h := range cm.Headers {
		gh[string(h.Key)] = h.Value
	}
	for name, c := range map[string]propagation.TextMapCarrier{
		"producer": ProducerMessageCarrier{pm}, "consumer": ConsumerMessageCarrier{cm}, "goka": HeadersCarrier(gh),
	} {
		got := trace.SpanContextFromContext(prop.Extract(context.Background(), c))
		if got.TraceID() != want.TraceID() || got.SpanID() != want.SpanID() || !got.IsRemote() {
			t.Errorf("%s carrier: extracted %v, want %v", name, got, want)
		}
		if c.Get("other") != "x" || len(c.Keys()) != 2 {
			t.Errorf("%s carrier: keys %v", name, c.Keys())
		}
	}
	if s := SpanContextString(ctx); ParseSpanContext(s).SpanID() != want.SpanID() {
		t.Errorf("SpanContextString %q does not round-trip", s)
	}
	if SpanContextString(context.Background()) != "" || ParseSpanContext("garbage").IsValid() {
		t.Errorf("empty or bad span contexts should give nothing")
	}
}

func TestOffMeansNil(t *testing.T) {
	if NewProducer(nil, "c") != nil || NewProducer(noop.NewTracerProvider(), "c") != nil || NewGoka(noop.NewTracerProvider(), GokaConfig{}) != nil {
		t.Fatal("nil or no-op provider should give nil instrumentation")
	}
	var g *Goka
	called := false
	g.Process()(func(goka.Context, any) { called = true })(nil, nil)
	g.Relay()(func(goka.Context, any) {})(nil, nil)
	if !called {
		t.Error("nil Goka's middleware did not call through")
	}
	var p *Producer
	if p.Start(context.Background(), &sarama.ProducerMessage{}) != nil {
		t.Error("nil producer made a span")
	}
}

func TestProducerSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	p := NewProducer(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)), "northpole-elves")
	msg := &sarama.ProducerMessage{Topic: "toys", Key: sarama.StringEncoder("M"), Value: sarama.ByteEncoder(`{"toy_id":"1"}`)}
	span := p.Start(context.Background(), msg)
	msg.Partition, msg.Offset = 3, 42
	End(span, msg, nil)
	failed := p.Start(context.Background(), &sarama.ProducerMessage{Topic: "toys"})
	End(failed, &sarama.ProducerMessage{Topic: "toys", Partition: 1}, errors.Join(sarama.ErrNotLeaderForPartition))

	ended := rec.Ended()
	if len(ended) != 2 {
		t.Fatalf("%d spans", len(ended))
	}
	s := ended[0]
	if s.Name() != "send toys" || s.SpanKind() != trace.SpanKindProducer {
		t.Errorf("span %q kind %v", s.Name(), s.SpanKind())
	}
	attrs := map[string]string{}
	for _, a := range s.Attributes() {
		attrs[string(a.Key)] = a.Value.Emit()
	}
	for k, v := range map[string]string{
		"messaging.system": "kafka", "messaging.operation.name": "send", "messaging.operation.type": "send",
		"messaging.destination.name": "toys", "messaging.destination.partition.id": "3", "messaging.kafka.offset": "42",
		"messaging.client.id": "northpole-elves", "messaging.client_id": "northpole-elves",
		"messaging.kafka.message.key": "M", "messaging.message.body.size": "14",
	} {
		if attrs[k] != v {
			t.Errorf("%s = %q, want %q", k, attrs[k], v)
		}
	}
	// The record carries the send span's context.
	got := trace.SpanContextFromContext(propagator().Extract(context.Background(), ProducerMessageCarrier{msg}))
	if got.SpanID() != s.SpanContext().SpanID() {
		t.Errorf("headers carry %v, want the send span %v", got.SpanID(), s.SpanContext().SpanID())
	}
	if f := ended[1]; f.Status().Code != codes.Error {
		t.Errorf("failed send: status %v", f.Status())
	} else {
		for _, a := range f.Attributes() {
			if a.Key == "error.type" && a.Value.AsString() != sarama.ErrNotLeaderForPartition.Error() {
				t.Errorf("error.type %q", a.Value.AsString())
			}
		}
	}
}

package kafkatrace

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Producer makes the "send <topic>" spans of a franz-go (kgo) producer. A
// nil *Producer does nothing.
type Producer struct {
	tracer   trace.Tracer
	sampling sampling
	prop     propagation.TextMapPropagator
	send     *spanCache
}

// NewProducer returns nil when tp is nil or a no-op provider. brokers is the
// client's bootstrap list: its first address becomes server.address and
// server.port of every span (none without brokers).
func NewProducer(tp trace.TracerProvider, clientID string, brokers ...string) *Producer {
	if !Enabled(tp) {
		return nil
	}
	server := ServerAttrs(brokers)
	return &Producer{tracer: tp.Tracer(ScopeName), sampling: samplingOf(tp), prop: propagator(),
		send: newSpanCache(OpSend, func(topic string) []attribute.KeyValue { return producerAttrs(topic, clientID, server) })}
}

// Start begins the PRODUCER span of r, a child of ctx, and writes its
// context into r's headers: call it before r is handed to Produce, and End
// in Produce's promise, so that the span covers the whole send and knows the
// partition and offset. A record nobody samples gets no span (nil), only
// the traceparent that says so (see tracedContext.Emit).
func (p *Producer) Start(ctx context.Context, r *kgo.Record) trace.Span {
	if p == nil {
		return nil
	}
	if p.sampling.known {
		parent := trace.SpanContextFromContext(ctx)
		sampled, tid := p.sampling.sampled(parent)
		if !sampled {
			p.prop.Inject(trace.ContextWithSpanContext(ctx, unsampledChild(parent, tid)), RecordCarrier{r})
			return nil
		}
		if !parent.IsValid() {
			ctx = rootContext(ctx, tid)
		}
	}
	t := p.send.of(r.Topic)
	ctx, span := p.tracer.Start(ctx, t.name, producerSpan...)
	if span.IsRecording() {
		buf := getAttrs()
		a := append(*buf, t.attrs...)
		if len(r.Key) > 0 {
			a = append(a, semconv.MessagingKafkaMessageKey(string(r.Key)))
		}
		a = append(a, semconv.MessagingMessageBodySize(len(r.Value)))
		span.SetAttributes(a...)
		putAttrs(buf, a)
	}
	p.prop.Inject(ctx, RecordCarrier{r})
	return span
}

// End ends a span from Start with Kafka's answer: r and err as Produce's
// promise got them (r with its partition, and on success its offset). A nil
// span is ignored.
func End(span trace.Span, r *kgo.Record, err error) {
	if span == nil {
		return
	}
	if r != nil {
		span.SetAttributes(semconv.MessagingDestinationPartitionID(partitionID(r.Partition)))
		if err == nil {
			span.SetAttributes(semconv.MessagingKafkaOffset(int(r.Offset)))
		}
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		span.SetAttributes(semconv.ErrorTypeKey.String(ErrorType(err)))
	}
	span.End()
}

// RecordCarrier reads and writes the headers of a kgo record.
type RecordCarrier struct{ R *kgo.Record }

var _ propagation.TextMapCarrier = RecordCarrier{}

func (c RecordCarrier) Get(key string) string {
	for _, h := range c.R.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// Set replaces every header of that key by one: a record must not carry two
// traceparents. The headers are copied, not filtered in place: records may
// share a slice of headers.
func (c RecordCarrier) Set(key, value string) {
	hs := make([]kgo.RecordHeader, 0, len(c.R.Headers)+1)
	for _, h := range c.R.Headers {
		if h.Key != key {
			hs = append(hs, h)
		}
	}
	c.R.Headers = append(hs, kgo.RecordHeader{Key: key, Value: []byte(value)})
}

func (c RecordCarrier) Keys() []string {
	out := make([]string, len(c.R.Headers))
	for i, h := range c.R.Headers {
		out[i] = h.Key
	}
	return out
}

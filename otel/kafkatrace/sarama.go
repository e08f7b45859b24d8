package kafkatrace

import (
	"context"
	"strconv"

	"github.com/IBM/sarama"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Producer makes the "send <topic>" spans of a sarama producer. A nil
// *Producer does nothing.
type Producer struct {
	tracer   trace.Tracer
	prop     propagation.TextMapPropagator
	clientID string
	server   []attribute.KeyValue
}

// NewProducer returns nil when tp is nil or a no-op provider. brokers is the
// client's bootstrap list: its first address becomes server.address and
// server.port of every span (none without brokers).
func NewProducer(tp trace.TracerProvider, clientID string, brokers ...string) *Producer {
	if !Enabled(tp) {
		return nil
	}
	return &Producer{tracer: tp.Tracer(ScopeName), prop: propagator(), clientID: clientID, server: serverAttrs(brokers)}
}

// Start begins the PRODUCER span of msg, a child of ctx, and writes its
// context into msg's headers. Call End with Kafka's answer: with an async
// producer that is when the message comes back on Successes or Errors, so
// the span covers the whole send and knows the partition and offset.
func (p *Producer) Start(ctx context.Context, msg *sarama.ProducerMessage) trace.Span {
	if p == nil {
		return nil
	}
	key, size := encoderString(msg.Key), encoderLen(msg.Value)
	ctx, span := p.tracer.Start(ctx, OpSend+" "+msg.Topic,
		trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(producerAttrs(msg.Topic, p.clientID, key, size, p.server)...))
	p.prop.Inject(ctx, ProducerMessageCarrier{msg})
	return span
}

// End ends a span from Start. msg is the message as the producer returned
// it (with partition and offset on success). A nil span is ignored.
func End(span trace.Span, msg *sarama.ProducerMessage, err error) {
	if span == nil {
		return
	}
	if msg != nil {
		span.SetAttributes(semconv.MessagingDestinationPartitionID(strconv.Itoa(int(msg.Partition))))
		if err == nil {
			span.SetAttributes(semconv.MessagingKafkaOffset(int(msg.Offset)))
		}
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		span.SetAttributes(semconv.ErrorTypeKey.String(errorType(err)))
	}
	span.End()
}

// StartConsume begins the CONSUMER span "process <topic>" of a message read
// with a plain sarama consumer (goka processors use Goka instead). Its
// parent is the producer's span from the headers, which it also links to.
func (p *Producer) StartConsume(ctx context.Context, msg *sarama.ConsumerMessage, group string) (context.Context, trace.Span) {
	if p == nil {
		return ctx, trace.SpanFromContext(ctx)
	}
	parent := p.prop.Extract(ctx, ConsumerMessageCarrier{msg})
	opts := []trace.SpanStartOption{
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(consumerAttrs(msg.Topic, msg.Partition, msg.Offset, group, p.clientID, string(msg.Key), len(msg.Value), msg.Value == nil, p.server)...),
	}
	if sc := trace.SpanContextFromContext(parent); sc.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	return p.tracer.Start(parent, OpProcess+" "+msg.Topic, opts...)
}

func encoderString(e sarama.Encoder) string {
	switch v := e.(type) {
	case nil:
		return ""
	case sarama.StringEncoder:
		return string(v)
	case sarama.ByteEncoder:
		return string(v)
	}
	b, err := e.Encode()
	if err != nil {
		return ""
	}
	return string(b)
}

func encoderLen(e sarama.Encoder) int {
	if e == nil {
		return 0
	}
	return e.Length()
}

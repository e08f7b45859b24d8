// Package kafkatrace carries OpenTelemetry trace context through Kafka record
// headers and makes the messaging spans of sarama producers and goka
// processors, named and attributed by the OTel messaging semantic conventions.
//
// There is no maintained OTel instrumentation for IBM/sarama or goka, so this
// package is deliberately thin: TextMapCarrier adapters over the three header
// shapes (sarama producer messages, sarama consumer messages, goka.Headers), a
// producer span helper, and a goka callback middleware that starts consumer
// spans and puts the context back into every record the callback writes
// (Emit, Loopback, SetValue).
//
// The wire format is W3C trace context (traceparent, tracestate) plus W3C
// baggage, as the OTel Java agent and other OTel clients write and read it.
//
// Every constructor returns nil for a nil or no-op TracerProvider, and every
// method is safe on nil: instrumented code keeps one code path and pays
// nothing when tracing is off.
package kafkatrace

import (
	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
	"go.opentelemetry.io/otel/propagation"
)

// ProducerMessageCarrier reads and writes the headers of a sarama producer
// message.
type ProducerMessageCarrier struct{ Msg *sarama.ProducerMessage }

var _ propagation.TextMapCarrier = ProducerMessageCarrier{}

func (c ProducerMessageCarrier) Get(key string) string {
	for _, h := range c.Msg.Headers {
		if string(h.Key) == key {
			return string(h.Value)
		}
	}
	return ""
}

// Set replaces a header of that key, or adds one: a record must not carry two
// traceparents.
func (c ProducerMessageCarrier) Set(key, value string) {
	for i, h := range c.Msg.Headers {
		if string(h.Key) == key {
			c.Msg.Headers[i].Value = []byte(value)
			return
		}
	}
	c.Msg.Headers = append(c.Msg.Headers, sarama.RecordHeader{Key: []byte(key), Value: []byte(value)})
}

func (c ProducerMessageCarrier) Keys() []string {
	out := make([]string, len(c.Msg.Headers))
	for i, h := range c.Msg.Headers {
		out[i] = string(h.Key)
	}
	return out
}

// ConsumerMessageCarrier reads and writes the headers of a sarama consumer
// message.
type ConsumerMessageCarrier struct{ Msg *sarama.ConsumerMessage }

var _ propagation.TextMapCarrier = ConsumerMessageCarrier{}

func (c ConsumerMessageCarrier) Get(key string) string {
	for _, h := range c.Msg.Headers {
		if h != nil && string(h.Key) == key {
			return string(h.Value)
		}
	}
	return ""
}

func (c ConsumerMessageCarrier) Set(key, value string) {
	for _, h := range c.Msg.Headers {
		if h != nil && string(h.Key) == key {
			h.Value = []byte(value)
			return
		}
	}
	c.Msg.Headers = append(c.Msg.Headers, &sarama.RecordHeader{Key: []byte(key), Value: []byte(value)})
}

func (c ConsumerMessageCarrier) Keys() []string {
	out := make([]string, 0, len(c.Msg.Headers))
	for _, h := range c.Msg.Headers {
		if h != nil {
			out = append(out, string(h.Key))
		}
	}
	return out
}

// HeadersCarrier reads and writes goka.Headers: read a record's with
// ctx.Headers(), write with goka.WithCtxEmitHeaders or Emitter.EmitWithHeaders.
// Set on a nil HeadersCarrier panics, like on a nil map: make one first.
type HeadersCarrier goka.Headers

var _ propagation.TextMapCarrier = HeadersCarrier{}

func (c HeadersCarrier) Get(key string) string { return string(c[key]) }
func (c HeadersCarrier) Set(key, value string) { c[key] = []byte(value) }
func (c HeadersCarrier) Keys() []string {
	out := make([]string, 0, len(c))
	for k := range c {
		out = append(out, k)
	}
	return out
}

// Package kafkatrace carries OpenTelemetry trace context through Kafka record
// headers and makes the messaging spans of franz-go (kgo) producers and goka
// processors, named and attributed by the OTel messaging semantic conventions.
//
// There is no maintained OTel instrumentation for goka, so this package is
// deliberately thin: TextMapCarrier adapters over the two header shapes (kgo
// records, goka.Headers), a send span helper for kgo producers (the elves'),
// whose spans carry the same names and attributes as the goka processors',
// and a goka callback middleware that starts consumer spans and puts the
// context into the records the callback emits.
//
// The wire format is W3C trace context (traceparent, tracestate) plus W3C
// baggage, as the OTel Java agent and other OTel clients write and read it.
//
// Every constructor returns nil for a nil or no-op TracerProvider, and every
// method is safe on nil: instrumented code keeps one code path and pays
// nothing when tracing is off.
package kafkatrace

import (
	"github.com/lovoo/goka"
	"go.opentelemetry.io/otel/propagation"
)

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

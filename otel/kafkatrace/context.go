package kafkatrace

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

func propagator() propagation.TextMapPropagator {
	return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
}

// traceContext alone serializes one span context for storage in a state
// value (the packer's slots remember their items this way).
var traceContext = propagation.TraceContext{}

// SpanContextString encodes the span context in ctx as a W3C traceparent
// (with ";" and the tracestate appended when there is one), or "" when ctx
// has no valid span context.
func SpanContextString(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	traceContext.Inject(ctx, c)
	s := c["traceparent"]
	if ts := c["tracestate"]; ts != "" {
		s += ";" + ts
	}
	return s
}

// ParseSpanContext decodes what SpanContextString wrote; an empty or
// malformed string gives an invalid (zero) span context. The result is
// marked remote: it came from a record.
func ParseSpanContext(s string) trace.SpanContext {
	if s == "" {
		return trace.SpanContext{}
	}
	c := propagation.MapCarrier{}
	tp, ts, _ := strings.Cut(s, ";")
	c["traceparent"] = tp
	if ts != "" {
		c["tracestate"] = ts
	}
	return trace.SpanContextFromContext(traceContext.Extract(context.Background(), c))
}

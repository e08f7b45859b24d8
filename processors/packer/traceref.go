package packer

import (
	"errors"

	"go.opentelemetry.io/otel/trace"
)

// traceRef is the trace context of the input record a message is about,
// carried inside the packer's own loop and table values instead of in record
// headers. Header propagation costs, on every internal hop, a W3C string
// written and parsed and three header maps (ours, and goka's two copies of
// it, Headers.Merged); a value field costs 26 bytes. The zero traceRef is
// "no trace" (tracing off, or an input without one). Every record has one
// with tracing on, sampled or not: what the packer writes for a record
// passes its decision on (kafkatrace.Goka.Emit). Only the span context
// travels: baggage stops at the packer's input, and its output records carry
// the context of their own spans (kafkatrace).
type traceRef struct {
	TraceID    trace.TraceID
	SpanID     trace.SpanID
	Flags      trace.TraceFlags
	TraceState string
}

func traceRefOf(sc trace.SpanContext) traceRef {
	if !sc.IsValid() {
		return traceRef{}
	}
	return traceRef{TraceID: sc.TraceID(), SpanID: sc.SpanID(), Flags: sc.TraceFlags(), TraceState: sc.TraceState().String()}
}

func (t traceRef) valid() bool { return t.TraceID.IsValid() && t.SpanID.IsValid() }

// spanContext is the remote span context t stands for (invalid for none).
func (t traceRef) spanContext() trace.SpanContext {
	if !t.valid() {
		return trace.SpanContext{}
	}
	cfg := trace.SpanContextConfig{TraceID: t.TraceID, SpanID: t.SpanID, TraceFlags: t.Flags, Remote: true}
	if t.TraceState != "" {
		// It was written from a valid TraceState, so it parses.
		cfg.TraceState, _ = trace.ParseTraceState(t.TraceState)
	}
	return trace.NewSpanContext(cfg)
}

var errBadTrace = errors.New("bad trace reference")

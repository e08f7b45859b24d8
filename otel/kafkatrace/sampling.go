package kafkatrace

import (
	"context"
	"encoding/binary"
	"math/rand/v2"

	"go.opentelemetry.io/otel/trace"
)

// SamplingPolicy is implemented by a tracer provider whose sampler is one
// of the standard ones (OTEL_TRACES_SAMPLER: always_on, always_off,
// traceidratio, and their parentbased_ forms with the default choices for
// parents; otel/telemetry's providers). It says how the sampler decides, so
// that kafkatrace knows whether a span records before it asks the SDK for
// one: the SDK allocates a span and a context even for a span that records
// nothing, and at 10 % sampling nine records in ten are such.
//
// With any other provider the SDK decides every span, as it would anyway.
type SamplingPolicy interface {
	// TraceSampling returns the fraction of trace ids sampled, by the rule
	// of sdktrace.TraceIDRatioBased (1: every trace, 0: none), and whether a
	// span with a valid parent is sampled exactly when its parent is
	// instead (sdktrace.ParentBased with its defaults).
	TraceSampling() (ratio float64, parentBased bool)
}

// sampling is a provider's SamplingPolicy as kafkatrace applies it.
type sampling struct {
	known       bool // the provider has a SamplingPolicy
	parentBased bool
	// bound: a trace id is sampled when its last eight bytes, big-endian,
	// shifted right by one, are below it (TraceIDRatioBased's rule, with
	// 1<<63 for every trace and 0 for none).
	bound uint64
}

func samplingOf(tp trace.TracerProvider) sampling {
	p, ok := tp.(SamplingPolicy)
	if !ok {
		return sampling{}
	}
	ratio, parentBased := p.TraceSampling()
	s := sampling{known: true, parentBased: parentBased}
	switch {
	case ratio >= 1:
		s.bound = 1 << 63
	case ratio > 0:
		s.bound = uint64(ratio * (1 << 63))
	}
	return s
}

// sampled says whether a span that is a child of parent (invalid: a root)
// would be sampled; for a root it also draws the trace id the decision was
// made on. Only with a known policy.
func (s sampling) sampled(parent trace.SpanContext) (bool, trace.TraceID) {
	if parent.IsValid() {
		if s.parentBased {
			return parent.IsSampled(), parent.TraceID()
		}
		return s.ratioSampled(parent.TraceID()), parent.TraceID()
	}
	tid := newTraceID()
	return s.ratioSampled(tid), tid
}

func (s sampling) ratioSampled(tid trace.TraceID) bool {
	return binary.BigEndian.Uint64(tid[8:16])>>1 < s.bound
}

// unsampledChild is the span context of a span nobody samples, child of
// parent in trace tid: what the SDK gives such a span (a span id of its
// own, the parent's flags without the sampled one, its trace state), with
// no span made.
func unsampledChild(parent trace.SpanContext, tid trace.TraceID) trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    tid,
		SpanID:     newSpanID(),
		TraceFlags: parent.TraceFlags() &^ trace.FlagsSampled,
		TraceState: parent.TraceState(),
	})
}

// rootContext is ctx made so that the SDK starts the root span of trace
// tid, the id kafkatrace decided on: the SDK takes the trace id of a parent
// context whose span id is invalid, and samples it as a root, with the same
// decision (TestSampledRootKeepsItsTraceID).
func rootContext(ctx context.Context, tid trace.TraceID) context.Context {
	return trace.ContextWithSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid}))
}

// newTraceID and newSpanID draw ids as the SDK's default generator does.
func newTraceID() trace.TraceID {
	var tid trace.TraceID
	for !tid.IsValid() {
		binary.NativeEndian.PutUint64(tid[:8], rand.Uint64())
		binary.NativeEndian.PutUint64(tid[8:], rand.Uint64())
	}
	return tid
}

func newSpanID() trace.SpanID {
	var sid trace.SpanID
	for !sid.IsValid() {
		binary.NativeEndian.PutUint64(sid[:], rand.Uint64())
	}
	return sid
}

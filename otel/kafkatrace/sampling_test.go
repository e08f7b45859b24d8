package kafkatrace

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// policyProvider is an SDK provider that says how it samples, as
// otel/telemetry's do.
type policyProvider struct {
	*sdktrace.TracerProvider
	ratio       float64
	parentBased bool
}

func (p policyProvider) TraceSampling() (float64, bool) { return p.ratio, p.parentBased }

func newPolicyProvider(ratio float64, parentBased bool, opts ...sdktrace.TracerProviderOption) policyProvider {
	s := sdktrace.TraceIDRatioBased(ratio)
	if parentBased {
		s = sdktrace.ParentBased(s)
	}
	return policyProvider{sdktrace.NewTracerProvider(append(opts, sdktrace.WithSampler(s))...), ratio, parentBased}
}

// TestSamplingMatchesTheSDK: for every standard sampler, what kafkatrace
// decides without the SDK is what the SDK decides, for roots (started on
// the trace id kafkatrace drew, rootContext) and for children of sampled and
// unsampled, remote and local parents.
func TestSamplingMatchesTheSDK(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, ratio := range []float64{0, 0.1, 0.5, 1} {
		for _, parentBased := range []bool{false, true} {
			t.Run(fmt.Sprintf("ratio=%v,parentbased=%v", ratio, parentBased), func(t *testing.T) {
				tp := newPolicyProvider(ratio, parentBased)
				s := samplingOf(tp)
				tr := tp.Tracer("t")
				for i := range 2000 {
					var parent trace.SpanContext
					if i%3 != 0 {
						parent = trace.NewSpanContext(trace.SpanContextConfig{
							TraceID: trace.TraceID{byte(r.Uint64()), 1, byte(r.Uint64()), 8: byte(r.Uint64()), 9: byte(r.Uint64())}, SpanID: trace.SpanID{1},
							TraceFlags: trace.TraceFlags(r.IntN(2)), Remote: i%2 == 0,
						})
					}
					sampled, tid := s.sampled(parent)
					ctx := trace.ContextWithSpanContext(context.Background(), parent)
					if !parent.IsValid() {
						ctx = rootContext(context.Background(), tid)
					}
					_, span := tr.Start(ctx, "s")
					if got := span.SpanContext(); got.IsSampled() != sampled || got.TraceID() != tid {
						t.Fatalf("parent %v: kafkatrace says sampled %v in trace %v, the SDK %v in %v", parent, sampled, tid, got.IsSampled(), got.TraceID())
					}
					span.End()
				}
			})
		}
	}
	if samplingOf(sdktrace.NewTracerProvider()).known {
		t.Error("a provider without a SamplingPolicy has a known sampling")
	}
}

// TestSampledRootKeepsItsTraceID: a root started through rootContext is a
// root like any other: the trace id kafkatrace decided on, and no parent.
func TestSampledRootKeepsItsTraceID(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tid := newTraceID()
	_, span := tp.Tracer("t").Start(rootContext(context.Background(), tid), "root")
	span.End()
	s := rec.Ended()[0]
	if s.SpanContext().TraceID() != tid || s.Parent().IsValid() || s.Parent().SpanID().IsValid() || s.Parent().IsRemote() {
		t.Errorf("span %v with parent %v, want a root of trace %v", s.SpanContext(), s.Parent(), tid)
	}
}

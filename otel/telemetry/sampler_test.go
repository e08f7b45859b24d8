package telemetry_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/northpole-workshop/northpole/otel/kafkatrace"
	"github.com/northpole-workshop/northpole/otel/telemetry"
)

// TestSamplerFromEnvIsTheSDKs: the providers sample as the SDK's own reading
// of OTEL_TRACES_SAMPLER and _ARG would, invalid values included, and say
// so (kafkatrace.SamplingPolicy); a sampler given in Options is the SDK's
// alone to apply.
func TestSamplerFromEnvIsTheSDKs(t *testing.T) {
	for _, c := range []struct {
		sampler, arg string
		ratio        float64
		parentBased  bool
		invalid      bool // reported to the OpenTelemetry error handler
	}{
		{"", "", 1, true, false},
		{"always_on", "", 1, false, false},
		{"always_off", "", 0, false, false},
		{"traceidratio", "0.25", 0.25, false, false},
		{"traceidratio", "", 1, false, false},
		{"traceidratio", "lots", 1, false, true},
		{"parentbased_always_on", "", 1, true, false},
		{"parentbased_always_off", "", 0, true, false},
		{"parentbased_traceidratio", "0.1", 0.1, true, false},
		{"parentbased_traceidratio", "-1", 1, true, true},
		{"parentbased_traceidratio", "2", 1, true, true},
		{" ParentBased_TraceIDRatio ", " 0.5 ", 0.5, true, false},
		{"jaeger_remote", "", 1, true, true},
	} {
		t.Run(fmt.Sprintf("%s=%s", c.sampler, c.arg), func(t *testing.T) {
			env := map[string]string{"OTEL_TRACES_SAMPLER": c.sampler, "OTEL_TRACES_SAMPLER_ARG": c.arg}
			var reported []error
			otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { reported = append(reported, err) }))
			defer otel.SetErrorHandler(otel.ErrorHandlerFunc(func(error) {}))
			rec := tracetest.NewSpanRecorder()
			tel, err := telemetry.New(context.Background(), telemetry.Options{Getenv: func(k string) string { return env[k] }, SpanProcessors: []sdktrace.SpanProcessor{rec}})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tel.Shutdown(context.Background()) }()
			tp := tel.TracerProvider("s")
			p, ok := tp.(kafkatrace.SamplingPolicy)
			if !ok {
				t.Fatalf("provider %T says nothing of its sampler", tp)
			}
			if ratio, parentBased := p.TraceSampling(); ratio != c.ratio || parentBased != c.parentBased {
				t.Errorf("TraceSampling() = %v, %v; want %v, %v", ratio, parentBased, c.ratio, c.parentBased)
			}
			if (len(reported) > 0) != c.invalid {
				t.Errorf("reported %v, want an error reported: %v", reported, c.invalid)
			}
			t.Setenv("OTEL_TRACES_SAMPLER", c.sampler)
			t.Setenv("OTEL_TRACES_SAMPLER_ARG", c.arg)
			sdk := sdktrace.NewTracerProvider()
			r := rand.New(rand.NewPCG(5, 6))
			for i := range 1000 {
				// A parent, or a trace id alone: both providers start the
				// span in the same trace.
				cfg := trace.SpanContextConfig{TraceID: trace.TraceID{byte(i), 8: byte(r.Uint64()), 9: byte(r.Uint64())}, TraceFlags: trace.TraceFlags(r.IntN(2)), Remote: i%2 == 0}
				if i%3 != 0 {
					cfg.SpanID = trace.SpanID{1}
				}
				ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(cfg))
				_, ours := tp.Tracer("t").Start(ctx, "s")
				_, theirs := sdk.Tracer("t").Start(ctx, "s")
				if ours.SpanContext().IsSampled() != theirs.SpanContext().IsSampled() {
					t.Fatalf("parent %+v: sampled %v, the SDK's own sampler %v", cfg, ours.SpanContext().IsSampled(), theirs.SpanContext().IsSampled())
				}
			}
		})
	}
	tel, err := telemetry.New(context.Background(), telemetry.Options{Sampler: sdktrace.AlwaysSample(), SpanProcessors: []sdktrace.SpanProcessor{tracetest.NewSpanRecorder()}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tel.Shutdown(context.Background()) }()
	if _, ok := tel.TracerProvider("s").(kafkatrace.SamplingPolicy); ok {
		t.Error("with Options.Sampler the provider still describes a sampler")
	}
}

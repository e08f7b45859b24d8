package telemetry_test

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/northpole-workshop/northpole/otel/backend/servicemap"
	"github.com/northpole-workshop/northpole/otel/kafkatrace"
	"github.com/northpole-workshop/northpole/otel/telemetry"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestNothingConfiguredIsNoop(t *testing.T) {
	for _, e := range []map[string]string{
		{},
		{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"},
		{"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"},
	} {
		tel, err := telemetry.New(context.Background(), telemetry.Options{Getenv: env(e)})
		if err != nil {
			t.Fatal(err)
		}
		if tel.Enabled() {
			t.Errorf("%v: enabled", e)
		}
		if kafkatrace.Enabled(tel.TracerProvider("x")) {
			t.Errorf("%v: tracer provider is not a no-op", e)
		}
		if err := tel.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	}
	for _, e := range []map[string]string{
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
		{"OTEL_TRACES_EXPORTER": "zipkin"},
	} {
		if _, err := telemetry.New(context.Background(), telemetry.Options{Getenv: env(e)}); err == nil {
			t.Errorf("%v: accepted", e)
		}
	}
}

// TestSeveralServicesShareOneProcessor: each service gets its own resource,
// and one span processor sees them all (so one batch can hold a parent and
// its child of another service).
func TestSeveralServicesShareOneProcessor(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tel, err := telemetry.New(context.Background(), telemetry.Options{Getenv: env(nil), SpanProcessors: []sdktrace.SpanProcessor{rec}})
	if err != nil {
		t.Fatal(err)
	}
	if !tel.Enabled() {
		t.Fatal("a span processor should turn tracing on")
	}
	ctx, parent := tel.TracerProvider("toy-elves").Tracer("t").Start(context.Background(), "send toys", trace.WithSpanKind(trace.SpanKindProducer))
	_, child := tel.TracerProvider("packer").Tracer("t").Start(ctx, "process toys", trace.WithSpanKind(trace.SpanKindConsumer))
	child.End()
	parent.End()
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range rec.Ended() {
		v, _ := s.Resource().Set().Value("service.name")
		got[s.Name()] = v.AsString()
	}
	if got["send toys"] != "toy-elves" || got["process toys"] != "packer" {
		t.Errorf("services by span: %v", got)
	}
	// After Shutdown, providers are no-ops.
	if kafkatrace.Enabled(tel.TracerProvider("late")) {
		t.Errorf("provider after shutdown records")
	}
}

// TestOTLPExportToLoopback exports real OTLP, over gRPC and over
// http/protobuf, to a receiver on loopback, configured only through the
// standard environment; the spans arrive with their services' resources,
// and the metrics, on by default with them, are taken too.
func TestOTLPExportToLoopback(t *testing.T) {
	for _, proto := range []string{telemetry.ProtocolGRPC, telemetry.ProtocolHTTPProtobuf} {
		t.Run(proto, func(t *testing.T) {
			b := servicemap.NewBuilder(servicemap.Options{})
			grpcAddr, httpAddr := "127.0.0.1:0", ""
			if proto == telemetry.ProtocolHTTPProtobuf {
				grpcAddr, httpAddr = "", "127.0.0.1:0"
			}
			rcv, err := servicemap.Listen(b, grpcAddr, httpAddr, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer rcv.Close()
			addr := rcv.GRPCAddr() + rcv.HTTPAddr()
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+addr)
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", proto)
			t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=test,service.name=overridden")
			t.Setenv("OTEL_TRACES_SAMPLER", "always_on")
			tel, err := telemetry.New(context.Background(), telemetry.Options{})
			if err != nil {
				t.Fatal(err)
			}
			c, err := tel.MeterProvider("packer").Meter("t").Int64Counter("northpole.test")
			if err != nil {
				t.Fatal(err)
			}
			c.Add(context.Background(), 3)
			ctx, send := tel.TracerProvider("toy-elves").Tracer("t").Start(context.Background(), "send toys", trace.WithSpanKind(trace.SpanKindProducer))
			_, proc := tel.TracerProvider("packer").Tracer("t").Start(ctx, "process toys", trace.WithSpanKind(trace.SpanKindConsumer))
			proc.End()
			send.End()
			sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := tel.Shutdown(sctx); err != nil {
				t.Fatalf("shutdown (flush to %s over %s): %v", addr, proto, err)
			}
			if _, spans := rcv.Received(); spans != 2 {
				t.Fatalf("receiver got %d spans, want 2", spans)
			}
			if got := rcv.Metrics().Sum("northpole.test", map[string]string{"service.name": "packer", "deployment.environment.name": "test"}); got != 3 {
				t.Errorf("northpole.test of packer: %v (received %v)", got, rcv.Metrics().Names())
			}
			if e, ok := b.Graph().Edge("toy-elves", "packer"); !ok || e.Calls != 1 {
				t.Errorf("edge toy-elves -> packer: %+v %v; graph %+v", e, ok, b.Graph())
			}
			seen := map[string]map[string]string{}
			for _, r := range rcv.Resources() {
				seen[r["service.name"]] = r
			}
			for _, svc := range []string{"toy-elves", "packer"} {
				r := seen[svc]
				if r == nil {
					t.Errorf("no resource for %s: %v", svc, rcv.Resources())
					continue
				}
				if r["deployment.environment.name"] != "test" || r["service.instance.id"] == "" || r["telemetry.sdk.language"] != "go" {
					t.Errorf("resource of %s: %v", svc, r)
				}
			}
		})
	}
}

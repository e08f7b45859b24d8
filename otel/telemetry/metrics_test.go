package telemetry_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/northpole-workshop/northpole/otel/backend/metricsink"
	"github.com/northpole-workshop/northpole/otel/telemetry"
)

// TestMetricsFollowTheEnvironment: metrics are on exactly when an OTLP
// endpoint is set and OTEL_METRICS_EXPORTER does not say none, whatever the
// traces do; settings that do not parse are refused.
func TestMetricsFollowTheEnvironment(t *testing.T) {
	const ep = "http://127.0.0.1:1"
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": ep}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": ep}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_TRACES_EXPORTER": "none"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_METRICS_EXPORTER": "none"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_SDK_DISABLED": "true"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_METRIC_EXPORT_INTERVAL": "5000"}, true},
	} {
		tel, err := telemetry.New(context.Background(), telemetry.Options{Getenv: env(c.env)})
		if err != nil {
			t.Fatalf("%v: %v", c.env, err)
		}
		if got := tel.MetricsEnabled(); got != c.want {
			t.Errorf("%v: metrics enabled %v, want %v", c.env, got, c.want)
		}
		_, noop := tel.MeterProvider("packer").(metricnoop.MeterProvider)
		if noop == c.want {
			t.Errorf("%v: meter provider %T", c.env, tel.MeterProvider("packer"))
		}
		// The exporters read their endpoint from the process's environment,
		// not from Getenv: a flush would try the default one. Stopping with
		// a context already ended tries nothing.
		ended, cancel := context.WithCancel(context.Background())
		cancel()
		_ = tel.Shutdown(ended)
	}
	for _, e := range []map[string]string{
		{"OTEL_METRICS_EXPORTER": "prometheus"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "http/json"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_METRIC_EXPORT_INTERVAL": "10s"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": ep, "OTEL_METRIC_EXPORT_INTERVAL": "0"},
	} {
		if _, err := telemetry.New(context.Background(), telemetry.Options{Getenv: env(e)}); err == nil {
			t.Errorf("%v: accepted", e)
		}
	}
}

// TestMeterProvidersPerService: each service's measurements reach its own
// readers under its own resource, the one its spans carry (same
// service.instance.id); the Go runtime's metrics come from the first
// service only; after Shutdown the providers are no-ops.
func TestMeterProvidersPerService(t *testing.T) {
	readers := map[string]*sdkmetric.ManualReader{}
	rec := tracetest.NewSpanRecorder()
	tel, err := telemetry.New(context.Background(), telemetry.Options{Getenv: env(nil),
		SpanProcessors: []sdktrace.SpanProcessor{rec},
		MetricReaders: func(service string) []sdkmetric.Reader {
			r := sdkmetric.NewManualReader()
			readers[service] = r
			return []sdkmetric.Reader{r}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if !tel.MetricsEnabled() {
		t.Fatal("a metric reader should turn metrics on")
	}
	ctx := context.Background()
	for i, svc := range []string{"packer", "sleigh"} {
		c, err := tel.MeterProvider(svc).Meter("test").Int64Counter("northpole.test")
		if err != nil {
			t.Fatal(err)
		}
		c.Add(ctx, int64(i+1), metric.WithAttributes(attribute.String("k", "v")))
		_, span := tel.TracerProvider(svc).Tracer("test").Start(ctx, "op "+svc)
		span.End()
	}
	if tel.MeterProvider("packer") != tel.MeterProvider("packer") {
		t.Error("a service's meter provider is made twice")
	}
	spanInstance := map[string]string{}
	for _, s := range rec.Ended() {
		svc, _ := s.Resource().Set().Value("service.name")
		id, _ := s.Resource().Set().Value("service.instance.id")
		spanInstance[svc.AsString()] = id.AsString()
	}
	for i, svc := range []string{"packer", "sleigh"} {
		var rm metricdata.ResourceMetrics
		if err := readers[svc].Collect(ctx, &rm); err != nil {
			t.Fatal(err)
		}
		name, _ := rm.Resource.Set().Value("service.name")
		id, _ := rm.Resource.Set().Value("service.instance.id")
		if name.AsString() != svc || id.AsString() == "" || id.AsString() != spanInstance[svc] {
			t.Errorf("%s: metrics resource %s/%s, spans' instance %q", svc, name.AsString(), id.AsString(), spanInstance[svc])
		}
		names := metricNames(rm)
		if got := sumOf(rm, "northpole.test"); got != int64(i+1) {
			t.Errorf("%s: northpole.test = %d, want %d (metrics %v)", svc, got, i+1, names)
		}
		if hasRuntime := slices.Contains(names, "go.goroutine.count"); hasRuntime != (i == 0) {
			t.Errorf("%s: runtime metrics %v, want them from the first service only: %v", svc, hasRuntime, names)
		}
	}
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := tel.MeterProvider("late").(metricnoop.MeterProvider); !ok {
		t.Error("meter provider after shutdown is not a no-op")
	}
}

func metricNames(rm metricdata.ResourceMetrics) []string {
	var out []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out = append(out, m.Name)
		}
	}
	return out
}

func sumOf(rm metricdata.ResourceMetrics, name string) int64 {
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if s, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == name {
				for _, dp := range s.DataPoints {
					n += dp.Value
				}
			}
		}
	}
	return n
}

// TestOTLPMetricsToLoopback exports real OTLP metrics, over gRPC and over
// http/protobuf, to a receiver on loopback, configured only through the
// standard environment: nothing is exported before Shutdown (the interval
// is an hour), and Shutdown flushes every service's counts, under its
// service.name, with the Go runtime's metrics.
func TestOTLPMetricsToLoopback(t *testing.T) {
	for _, proto := range []string{telemetry.ProtocolGRPC, telemetry.ProtocolHTTPProtobuf} {
		t.Run(proto, func(t *testing.T) {
			grpcAddr, httpAddr := "127.0.0.1:0", ""
			if proto == telemetry.ProtocolHTTPProtobuf {
				grpcAddr, httpAddr = "", "127.0.0.1:0"
			}
			rcv, err := metricsink.Listen(grpcAddr, httpAddr, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer rcv.Close()
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+rcv.GRPCAddr()+rcv.HTTPAddr())
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", proto)
			t.Setenv("OTEL_TRACES_EXPORTER", "none")
			t.Setenv("OTEL_METRIC_EXPORT_INTERVAL", "3600000")
			tel, err := telemetry.New(context.Background(), telemetry.Options{})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for i, svc := range []string{"toy-elves", "sleigh"} {
				c, err := tel.MeterProvider(svc).Meter("test").Int64Counter("northpole.test")
				if err != nil {
					t.Fatal(err)
				}
				c.Add(ctx, int64(10*(i+1)), metric.WithAttributes(attribute.String("k", "v")))
			}
			if n := rcv.Requests(); n != 0 {
				t.Fatalf("%d exports before Shutdown with an hour's interval", n)
			}
			sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			if err := tel.Shutdown(sctx); err != nil {
				t.Fatal(err)
			}
			for i, svc := range []string{"toy-elves", "sleigh"} {
				if got := rcv.Sum("northpole.test", map[string]string{"service.name": svc, "k": "v"}); got != float64(10*(i+1)) {
					t.Errorf("%s: northpole.test %v, want %d (received %v)", svc, got, 10*(i+1), rcv.Names())
				}
			}
			if len(rcv.Find("go.goroutine.count", map[string]string{"service.name": "toy-elves"})) != 1 {
				t.Errorf("no runtime metrics from the first service: %v", rcv.Names())
			}
		})
	}
}

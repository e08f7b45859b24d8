package packer_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/testsupport/testkafka"
	"github.com/northpole-workshop/northpole/otel/backend/servicemap"
	"github.com/northpole-workshop/northpole/otel/telemetry"
	"github.com/northpole-workshop/northpole/processors/packer"
	"github.com/northpole-workshop/northpole/producers"
)

// discard is a span exporter that drops every batch: the benchmark then
// measures what tracing costs the packer's process (span creation, header
// work, batching), not a collector's network.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// BenchmarkPackerTracing measures the packer's throughput on a backlog (the
// elves write every record first, the timer covers the packer from start to
// quiescence) with tracing off, on with every trace sampled, and on with 10 %
// sampled (parent-based: the elves' decision carries through). The "otlp"
// variant exports over gRPC to a receiver on loopback, which shares the CPU.
// Reported: input records per second. See docs/PERFORMANCE.md.
func BenchmarkPackerTracing(b *testing.B) {
	const perStream = 20000
	for _, mode := range []struct {
		name, sampler, arg string // OTEL_TRACES_SAMPLER and _ARG; "": off
		otlp               bool
	}{
		{name: "off"},
		{name: "sampled=100%", sampler: "always_on"},
		{name: "sampled=10%", sampler: "parentbased_traceidratio", arg: "0.1"},
		{name: "sampled=100%,otlp-grpc", sampler: "always_on", otlp: true},
	} {
		b.Run(mode.name, func(b *testing.B) {
			kc := testkafka.Config(b)
			var records int64
			var elapsed time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
				var tel *telemetry.Telemetry
				if i == 0 {
					b.Logf("%d toys and %d boxes per iteration, from a backlog", perStream, perStream)
				}
				tp := func(string) trace.TracerProvider { return nil }
				var rcv *servicemap.Receiver
				if mode.sampler != "" {
					env := map[string]string{"OTEL_TRACES_SAMPLER": mode.sampler, "OTEL_TRACES_SAMPLER_ARG": mode.arg}
					opts := telemetry.Options{Getenv: func(k string) string { return env[k] }, Exporter: discard{}}
					if mode.otlp {
						var err error
						rcv, err = servicemap.Listen(servicemap.NewBuilder(servicemap.Options{}), "127.0.0.1:0", "", slog.New(slog.DiscardHandler))
						if err != nil {
							b.Fatal(err)
						}
						b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+rcv.GRPCAddr())
						opts.Exporter = nil
						env["OTEL_EXPORTER_OTLP_ENDPOINT"], env["OTEL_EXPORTER_OTLP_PROTOCOL"] = "http://"+rcv.GRPCAddr(), "grpc"
					}
					var err error
					tel, err = telemetry.New(ctx, opts)
					if err != nil {
						b.Fatal(err)
					}
					tp = func(s string) trace.TracerProvider { return tel.TracerProvider(s) }
				}
				pc := packer.Named(testkafka.Unique("bench"))
				pc.Kafka, pc.Tracer = kc, tp(telemetry.ServicePacker)
				toys, boxes := producers.DefaultConfig(record.Toys), producers.DefaultConfig(record.Boxes)
				for _, e := range []*producers.Config{&toys, &boxes} {
					e.Count, e.Elves, e.Seed = perStream, 2, int64(i+1)
				}
				toys.Tracer, boxes.Tracer = tp(telemetry.ServiceToyElves), tp(telemetry.ServiceBoxElves)
				pk, err := packer.New(pc, nil)
				if err != nil {
					b.Fatal(err)
				}
				if err := pk.EnsureTopics(ctx); err != nil {
					b.Fatal(err)
				}
				if err := runElves(ctx, pc, toys, boxes); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				began := time.Now()
				r := startPacker(b, ctx, pc)
				if err := r.WaitQuiet(ctx, 20*time.Millisecond); err != nil {
					b.Fatal(err)
				}
				elapsed += time.Since(began)
				b.StopTimer()
				if err := r.Stop(); err != nil {
					b.Fatal(err)
				}
				if tel != nil {
					if err := tel.Shutdown(ctx); err != nil {
						b.Fatal(err)
					}
				}
				if rcv != nil {
					rcv.Close()
				}
				cancel()
				records += 2 * perStream
			}
			b.ReportMetric(float64(records)/elapsed.Seconds(), "records/s")
		})
	}
}

package telemetry_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/northpole-workshop/northpole/otel/otlpwire"
	"github.com/northpole-workshop/northpole/otel/telemetry"
)

// BenchmarkSpanCost is what one sampled span costs the process that makes
// it, by its number of attributes and links: start and end in the SDK, the
// delivery gate, the batch span processor, the OTLP exporter's transform and
// the protobuf encoding of the export request (marshalClient stops there, so
// no receiver shares the CPU). cpu-ns/op is the process's user+system CPU
// per span, the batching goroutine included; run it with -cpu 1.
//
// It explains what tracing costs the packer (docs/PERFORMANCE.md), and
// compares the two exporters: otlptrace's, which builds a message per
// attribute, and otlpwire, which telemetry uses.
func BenchmarkSpanCost(b *testing.B) {
	exporters := []struct {
		name string
		new  func(context.Context, otlptrace.Client) (sdktrace.SpanExporter, error)
	}{
		{"otlptrace", func(ctx context.Context, c otlptrace.Client) (sdktrace.SpanExporter, error) {
			return otlptrace.New(ctx, c)
		}},
		{"otlpwire", func(ctx context.Context, c otlptrace.Client) (sdktrace.SpanExporter, error) {
			return otlpwire.New(ctx, c)
		}},
	}
	for _, e := range exporters {
		for _, c := range []struct{ attrs, links int }{{0, 0}, {7, 0}, {8, 0}, {9, 0}, {11, 0}, {14, 0}, {14, 1}, {14, 2}} {
			b.Run(fmt.Sprintf("exporter=%s/attrs=%d/links=%d", e.name, c.attrs, c.links), func(b *testing.B) {
				benchSpanCost(b, e.new, c.attrs, c.links)
			})
		}
	}
}

func benchSpanCost(b *testing.B, newExporter func(context.Context, otlptrace.Client) (sdktrace.SpanExporter, error), nAttrs, nLinks int) {
	exp, err := newExporter(context.Background(), marshalClient{})
	if err != nil {
		b.Fatal(err)
	}
	tel, err := telemetry.New(context.Background(), telemetry.Options{Exporter: exp, Getenv: func(string) string { return "" }})
	if err != nil {
		b.Fatal(err)
	}
	tr := tel.TracerProvider("bench").Tracer("bench")
	attrs := make([]attribute.KeyValue, nAttrs)
	for i := range attrs {
		attrs[i] = attribute.String(fmt.Sprintf("messaging.attribute.%d", i), "packer-dedupe")
	}
	ctx, parent := tr.Start(context.Background(), "parent")
	links := make([]trace.Link, nLinks)
	for i := range links {
		links[i] = trace.Link{SpanContext: parent.SpanContext()}
	}
	b.ResetTimer()
	c0 := cpuNanos()
	for b.Loop() {
		_, s := tr.Start(ctx, "process toys", trace.WithSpanKind(trace.SpanKindConsumer), trace.WithLinks(links...))
		s.SetAttributes(attrs...)
		s.End()
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(cpuNanos()-c0)/float64(b.N), "cpu-ns/op")
}

// marshalClient is an OTLP client that encodes each export request as the
// gRPC and HTTP clients do, and sends it nowhere.
type marshalClient struct{}

func (marshalClient) Start(context.Context) error { return nil }
func (marshalClient) Stop(context.Context) error  { return nil }
func (marshalClient) UploadTraces(_ context.Context, rs []*tracepb.ResourceSpans) error {
	_, err := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: rs})
	return err
}

func cpuNanos() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/pflag"
	"go.opentelemetry.io/otel/trace"

	"github.com/northpole-workshop/northpole/internal/app/demo"
	"github.com/northpole-workshop/northpole/otel/servicemap"
	"github.com/northpole-workshop/northpole/otel/telemetry"
)

// demoTraceOptions are the demo's flags about tracing and the sleigh.
type demoTraceOptions struct {
	serviceMap bool
}

func bindDemoTracing(f *pflag.FlagSet, o *demoTraceOptions) {
	o.serviceMap = true
	f.BoolVar(&o.serviceMap, "servicemap", o.serviceMap, "trace every component in process and print the service map it draws (OTEL_* may send the spans elsewhere too)")
}

// demoTracing is the demo's telemetry: one service.name per component, all
// sharing the span processors (the OTLP exporter when OTEL_* asks for one,
// and the in-process service map).
type demoTracing struct {
	tel     *telemetry.Telemetry
	stop    func()
	b       *servicemap.Builder
	stopped bool
}

func startDemoTracing(ctx context.Context, o demoTraceOptions) (*demoTracing, error) {
	d := &demoTracing{}
	opts := telemetry.Options{Log: slog.Default()}
	if o.serviceMap {
		// The map gets the same delivery as the OTLP exporter: it must count
		// every span, or its edges contradict the records read back.
		d.b = servicemap.NewBuilder(servicemap.Options{})
		opts.Exporters = []telemetry.NamedExporter{{Name: "servicemap", SpanExporter: servicemap.Exporter{B: d.b}}}
	}
	tel, stop, err := startTelemetry(ctx, opts)
	if err != nil {
		return nil, err
	}
	d.tel, d.stop = tel, stop
	return d, nil
}

// provider is the tracer provider of one component (a no-op when tracing is off).
func (d *demoTracing) provider(service string) trace.TracerProvider {
	return d.tel.TracerProvider(service)
}

// finish flushes the spans (every component has stopped), prints what became
// of them and the service map, and returns the map: nil when the demo traced
// nothing into one.
func (d *demoTracing) finish(w io.Writer) (*servicemap.Graph, error) {
	d.close()
	if stats := d.tel.SpanStats(); len(stats) > 0 {
		fmt.Fprintln(w)
		printSpanStats(w, stats)
	}
	if d.b == nil {
		return nil, nil
	}
	g := d.b.Graph()
	fmt.Fprintln(w)
	if err := g.WriteText(w); err != nil {
		return nil, err
	}
	return &g, nil
}

// topicGraph is the map for the report, or nil when the demo traced nothing into
// one. It is the map with topics: the report accounts for records, and that
// map puts each topic's records on its edges (the inputs, packed, and each
// kind of leftover and dead letter apart), where SigNoz's map has one kafka
// node for them all; the terminal and servicemap.svg keep SigNoz's.
func (d *demoTracing) topicGraph() *servicemap.Graph {
	if d.b == nil {
		return nil
	}
	g := d.b.TopicGraph()
	return &g
}

// close flushes the telemetry, once.
func (d *demoTracing) close() {
	if !d.stopped {
		d.stopped = true
		d.stop()
	}
}

// printSpanStats says what became of the spans, per exporter: a lost span
// is never silent.
func printSpanStats(w io.Writer, stats []telemetry.SpanStats) {
	fmt.Fprintf(w, "spans: %d ended (sampled, every service)\n", stats[0].Ended)
	for _, s := range stats {
		fmt.Fprintf(w, "  %-10s %d exported, %d dropped", s.Exporter, s.Exported, s.Lost())
		if s.Lost() > 0 {
			fmt.Fprintf(w, " (%d with the queue full while the exporter failed, %d in failed exports, %d not flushed at exit)",
				s.Dropped, s.Failed, s.Unflushed)
		}
		if s.Waited > 0 {
			fmt.Fprintf(w, "; %d waited for room in its %d-span queue", s.Waited, s.Queue)
		}
		fmt.Fprintln(w)
	}
}

// printMapCheck says whether the map's edges into the packer and the
// sleigh equal the records read back (demo.Report.CheckMap).
func printMapCheck(w io.Writer, edges demo.MapEdges) {
	verdict := "equal"
	if !edges.Equal() {
		verdict = "DIFFERENT (" + demo.MapDiffers + ")"
	}
	fmt.Fprintf(w, "map check: %s: %s\n", edges, verdict)
}

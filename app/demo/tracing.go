package demo

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/northpole-workshop/northpole/otel/servicemap"
	"github.com/northpole-workshop/northpole/otel/telemetry"
)

// StartTelemetry starts a process's telemetry with opts; stop flushes it.
// A command passes its own, which decides how long a flush may take and
// what a bad OTEL_* setting is.
type StartTelemetry func(ctx context.Context, opts telemetry.Options) (tel *telemetry.Telemetry, stop func(), err error)

// Tracing is the demo's telemetry: one service.name per component
// (Provider, for harness.Config.Tracing), all sharing the span processors:
// the OTLP exporter when OTEL_* asks for one, and the in-process service
// map.
type Tracing struct {
	tel     *telemetry.Telemetry
	stop    func()
	b       *servicemap.Builder // nil: no service map
	stopped bool
}

// NewTracing starts the demo's telemetry with start, with the in-process
// service map when serviceMap is set; its errors are start's.
func NewTracing(ctx context.Context, serviceMap bool, log *slog.Logger, start StartTelemetry) (*Tracing, error) {
	t := &Tracing{}
	opts := telemetry.Options{Log: log}
	if serviceMap {
		// The map gets the same delivery as the OTLP exporter: it must count
		// every span, or its edges contradict the records read back.
		t.b = servicemap.NewBuilder(servicemap.Options{})
		opts.Exporters = []telemetry.NamedExporter{{Name: "servicemap", SpanExporter: servicemap.Exporter{B: t.b}}}
	}
	tel, stop, err := start(ctx, opts)
	if err != nil {
		return nil, err
	}
	t.tel, t.stop = tel, stop
	// The first meter provider reports the process's Go runtime metrics:
	// under the packer's name, the component whose memory an operator
	// watches.
	tel.MeterProvider(telemetry.ServicePacker)
	return t, nil
}

// Provider is the tracer provider of one component (a no-op when tracing
// is off).
func (t *Tracing) Provider(service string) trace.TracerProvider {
	return t.tel.TracerProvider(service)
}

// Meters is the meter provider of one component, for
// harness.Config.Metrics (a no-op when metrics are off).
func (t *Tracing) Meters(service string) metric.MeterProvider {
	return t.tel.MeterProvider(service)
}

// Traces are what became of the demo's spans once every component stopped.
type Traces struct {
	// Spans say, per exporter, how many spans were exported and lost.
	Spans []telemetry.SpanStats
	// Map is the service map as SigNoz draws it, TopicMap the map with a
	// node per topic; both nil when the demo traced nothing into a map.
	// The report draws TopicMap: it accounts for records, and that map puts
	// each topic's records on its edges (the inputs, packed, and each kind
	// of leftover and dead letter apart), where SigNoz's map has one kafka
	// node for them all; the terminal and servicemap.svg keep SigNoz's.
	Map, TopicMap *servicemap.Graph
}

// Finish flushes the spans (every component must have stopped) and says
// what became of them.
func (t *Tracing) Finish() Traces {
	t.Close()
	tr := Traces{Spans: t.tel.SpanStats()}
	if t.b != nil {
		g, topics := t.b.Graph(), t.b.TopicGraph()
		tr.Map, tr.TopicMap = &g, &topics
	}
	return tr
}

// Close flushes the telemetry, once.
func (t *Tracing) Close() {
	if !t.stopped {
		t.stopped = true
		t.stop()
	}
}

// WriteText says what became of the spans, per exporter (a lost span is
// never silent), then prints the service map, each after a blank line.
func (tr Traces) WriteText(w io.Writer) error {
	if len(tr.Spans) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "spans: %d ended (sampled, every service)\n", tr.Spans[0].Ended)
		for _, s := range tr.Spans {
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
	if tr.Map == nil {
		return nil
	}
	fmt.Fprintln(w)
	return tr.Map.WriteText(w)
}

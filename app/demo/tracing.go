package demo

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"sync"

	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/northpole-workshop/northpole/otel/backend/servicemap"
	"github.com/northpole-workshop/northpole/otel/telemetry"
)

// StartTelemetry starts a process's telemetry with opts; stop flushes it.
// A command passes its own, which decides how long a flush may take and
// what a bad OTEL_* setting is.
type StartTelemetry func(ctx context.Context, opts telemetry.Options) (tel *telemetry.Telemetry, stop func(), err error)

// Tracing is the demo's telemetry: one service.name per component
// (Provider, for harness.Config.Tracing), all sharing the span processors:
// the OTLP exporter when OTEL_* asks for one, and the in-process service
// map. Each component's meter provider (Meters) has a reader of the demo's
// own beside the OTLP one, if any: the demo reads its metrics whether they
// are exported or not.
type Tracing struct {
	tel     *telemetry.Telemetry
	stop    func()
	b       *servicemap.Builder // nil: no service map
	log     *slog.Logger
	stopped bool

	mu      sync.Mutex
	readers map[string]*sdkmetric.ManualReader // by service
}

// NewTracing starts the demo's telemetry with start, with the in-process
// service map when serviceMap is set; its errors are start's.
func NewTracing(ctx context.Context, serviceMap bool, log *slog.Logger, start StartTelemetry) (*Tracing, error) {
	t := &Tracing{log: log, readers: map[string]*sdkmetric.ManualReader{}}
	if log == nil {
		t.log = slog.New(slog.DiscardHandler)
	}
	opts := telemetry.Options{Log: log, MetricReaders: t.reader}
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

// reader is the demo's reader of one service's metrics
// (telemetry.Options.MetricReaders).
func (t *Tracing) reader(service string) []sdkmetric.Reader {
	r := sdkmetric.NewManualReader()
	t.mu.Lock()
	t.readers[service] = r
	t.mu.Unlock()
	return []sdkmetric.Reader{r}
}

// Provider is the tracer provider of one component (a no-op when tracing
// is off).
func (t *Tracing) Provider(service string) trace.TracerProvider {
	return t.tel.TracerProvider(service)
}

// Meters is the meter provider of one component, for
// harness.Config.Metrics: with the demo's own reader always, so a no-op
// only when OTEL_SDK_DISABLED turns telemetry off.
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
	// Metrics are the components' metrics, read once at the end
	// (Result.CheckMetrics); nil when there were none (OTEL_SDK_DISABLED)
	// or they could not be read (logged).
	Metrics *MetricCounts
}

// Finish reads the metrics and flushes the spans (every component must
// have stopped), and says what became of them.
func (t *Tracing) Finish(ctx context.Context) Traces {
	var tr Traces
	t.mu.Lock()
	readers := maps.Clone(t.readers)
	t.mu.Unlock()
	if len(readers) > 0 {
		// Before Close: a reader of a provider shut down reads nothing.
		m, err := readMetrics(ctx, readers)
		if err != nil {
			t.log.Warn("demo: the metrics could not be read, so they are not checked", "err", err)
		} else {
			tr.Metrics = &m
		}
	}
	t.Close()
	tr.Spans = t.tel.SpanStats()
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

// Package telemetry builds OpenTelemetry tracer and meter providers from the
// standard OTEL_* environment, one per service name, so that one process
// (the embedded demo) can run elves, packer and sleigh each under its own
// service.name while sharing exporters and batches. A service's tracer and
// meter providers share one resource (the same service.instance.id).
//
// Nothing configured means nothing on: Enabled and MetricsEnabled are false,
// TracerProvider and MeterProvider return no-op providers, and the
// instrumented packages treat a no-op (or nil) tracer provider as "tracing
// off" and skip all their tracing work. Metrics are on whenever an OTLP
// endpoint is (or Options.MetricReaders is set), and exported every
// OTEL_METRIC_EXPORT_INTERVAL to the same endpoint as the spans; the first
// meter provider also reports the Go runtime's metrics (metrics.go).
//
// No span is lost silently. Each exporter sits behind the SDK's batch span
// processor and an admission gate (delivery.go): while exports succeed, a
// span's End waits for room in the queue instead of dropping the span;
// while they fail, spans beyond the queue are dropped. Every span is
// counted as exported, dropped, failed or unflushed at Shutdown
// (SpanStats), and losses are logged at warning level while the process
// runs and at Shutdown.
//
// The environment read here:
//
//	OTEL_SDK_DISABLED=true                     everything off
//	OTEL_TRACES_EXPORTER=otlp|none             default otlp when an endpoint is set
//	OTEL_METRICS_EXPORTER=otlp|none            default otlp when an endpoint is set
//	OTEL_EXPORTER_OTLP_ENDPOINT                e.g. http://localhost:4317 (grpc) or http://localhost:4318
//	OTEL_EXPORTER_OTLP_TRACES_ENDPOINT         for traces only
//	OTEL_EXPORTER_OTLP_METRICS_ENDPOINT        for metrics only
//	OTEL_EXPORTER_OTLP_PROTOCOL                grpc | http/protobuf (default http/protobuf)
//	OTEL_EXPORTER_OTLP_TRACES_PROTOCOL         for traces only
//	OTEL_EXPORTER_OTLP_METRICS_PROTOCOL        for metrics only
//	OTEL_METRIC_EXPORT_INTERVAL                ms between metric exports (default 60000)
//	OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
//	OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG (read here as the SDK reads them; the providers say which sampler they have, kafkatrace.SamplingPolicy)
//	OTEL_BSP_MAX_QUEUE_SIZE, OTEL_BSP_MAX_EXPORT_BATCH_SIZE (read here too: the gate holds the queue to its size)
//	OTEL_BSP_*, OTEL_EXPORTER_OTLP_HEADERS, _INSECURE, _TIMEOUT ... (read by the SDK and exporters)
//	OTEL_METRIC_EXPORT_TIMEOUT, OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE (read by the SDK and exporters)
package telemetry

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/northpole-workshop/northpole/otel/otlpwire"
)

// Protocols of OTEL_EXPORTER_OTLP_PROTOCOL that we support.
const (
	ProtocolGRPC         = "grpc"
	ProtocolHTTPProtobuf = "http/protobuf"
)

// Options adjust what the environment says. The zero value reads only the
// environment.
type Options struct {
	// SpanProcessors receive the spans of every service, in addition to the
	// OTLP exporter (if any). Giving one turns tracing on even without an
	// OTLP endpoint: the demo's in-process service map is one.
	SpanProcessors []sdktrace.SpanProcessor
	// Exporter replaces the OTLP span exporter the environment would build
	// (benchmarks use a discarding one). It turns tracing on.
	Exporter sdktrace.SpanExporter
	// Exporters receive every span as well, each through its own batch
	// processor with the same delivery and accounting as the OTLP exporter
	// (the demo's in-process service map is one). They turn tracing on.
	Exporters []NamedExporter
	// Log receives the warnings about lost spans (and, at info level, the
	// totals at Shutdown). Nil sends the warnings to the OpenTelemetry error
	// handler, which LogErrors points at a logger: a command that sets
	// nothing up still says when it loses spans.
	Log *slog.Logger
	// ReportEvery is how often lost spans are logged while the process
	// runs (Shutdown logs the totals); zero means every 10 s.
	ReportEvery time.Duration
	// Sampler replaces OTEL_TRACES_SAMPLER. The SDK then decides every
	// span, as instrumentation cannot know the decision of a sampler it
	// does not know before it starts one: with OTEL_TRACES_SAMPLER's
	// samplers a record nobody samples costs kafkatrace no span at all.
	Sampler sdktrace.Sampler
	// MetricReaders, when set, gives each service's meter provider these
	// readers beside the OTLP one (if any); a reader serves one provider,
	// so it is called once per service. It turns metrics on even without
	// an OTLP endpoint: tests read with a ManualReader.
	MetricReaders func(service string) []sdkmetric.Reader
	// Getenv reads the environment; nil means os.Getenv. Only the variables
	// this package interprets go through it: the SDK and the exporters read
	// theirs (endpoint details, headers, batch sizes) from the process
	// environment.
	Getenv func(string) string
}

// Telemetry holds the providers of one process.
type Telemetry struct {
	opts     Options
	getenv   func(string) string
	tracesOn bool
	// processors are shared by every tracer provider: one batch can carry
	// spans of several services, which is what lets a SigNoz collector join
	// a parent in one service with its child in another (see docs).
	processors []sdktrace.SpanProcessor
	shared     []sdktrace.SpanProcessor
	// exporters are the processors in front of each exporter, whose counts
	// SpanStats reports and the reporter logs.
	exporters []*deliveryProcessor
	log       *slog.Logger
	stopLog   chan struct{}
	logDone   chan struct{}

	metricsOn      bool
	metricExporter sdkmetric.Exporter // nil: no OTLP metrics
	metricInterval time.Duration

	mu        sync.Mutex
	closed    bool
	tracers   map[string]tracerProvider
	meters    map[string]*sdkmetric.MeterProvider
	resources map[string]*resource.Resource
	// sampling is OTEL_TRACES_SAMPLER's, unless Options.Sampler replaces it.
	sampling samplerChoice
}

// New reads the environment and builds the span exporter it asks for (if
// any). Providers are made lazily, one per service, by TracerProvider.
// Shutdown flushes and stops them all.
func New(ctx context.Context, o Options) (*Telemetry, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	t := &Telemetry{opts: o, getenv: getenv, tracers: map[string]tracerProvider{},
		meters: map[string]*sdkmetric.MeterProvider{}, resources: map[string]*resource.Resource{}}
	t.log = o.Log
	if t.log == nil {
		t.log = slog.New(errorHandlerLog{})
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return t, nil
	}
	if err := t.startMetrics(ctx); err != nil {
		return nil, err
	}
	tracesExp, err := t.exporterChoice("TRACES")
	if err != nil {
		return nil, err
	}
	exporter := o.Exporter
	if exporter == nil && tracesExp {
		proto, err := t.protocol("TRACES")
		if err != nil {
			return nil, err
		}
		// otlpwire sends what otlptrace's exporter would, through its
		// clients (and so their OTEL_EXPORTER_OTLP_* settings), at about
		// half the CPU per span.
		switch proto {
		case ProtocolGRPC:
			exporter, err = otlpwire.New(ctx, otlptracegrpc.NewClient())
		default:
			exporter, err = otlpwire.New(ctx, otlptracehttp.NewClient())
		}
		if err != nil {
			return nil, fmt.Errorf("telemetry: OTLP %s span exporter: %w", proto, err)
		}
	}
	named := o.Exporters
	if exporter != nil {
		name := "otlp"
		if o.Exporter != nil {
			name = "exporter"
		}
		named = append([]NamedExporter{{Name: name, SpanExporter: exporter}}, named...)
	}
	for _, e := range named {
		p := newDeliveryProcessor(e.Name, e.SpanExporter, getenv)
		t.exporters = append(t.exporters, p)
		t.processors = append(t.processors, p)
	}
	t.processors = append(t.processors, o.SpanProcessors...)
	for _, p := range t.processors {
		t.shared = append(t.shared, stopOnce{p})
	}
	t.tracesOn = len(t.processors) > 0
	if t.tracesOn && o.Sampler == nil {
		t.sampling = samplerFromEnv(getenv)
	}
	if len(t.exporters) > 0 {
		every := o.ReportEvery
		if every <= 0 {
			every = 10 * time.Second
		}
		t.stopLog, t.logDone = make(chan struct{}), make(chan struct{})
		go t.reportLosses(every)
	}
	return t, nil
}

// exporterChoice says whether OTEL_<SIGNAL>_EXPORTER asks for OTLP: "otlp"
// does, "none" does not, and unset does when an OTLP endpoint is configured.
func (t *Telemetry) exporterChoice(signal string) (bool, error) {
	v := strings.ToLower(strings.TrimSpace(t.getenv("OTEL_" + signal + "_EXPORTER")))
	switch v {
	case "otlp":
		return true, nil
	case "none":
		return false, nil
	case "":
		return t.getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || t.getenv("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT") != "", nil
	}
	return false, fmt.Errorf("telemetry: OTEL_%s_EXPORTER=%q is not supported (want otlp or none)", signal, v)
}

func (t *Telemetry) protocol(signal string) (string, error) {
	p := strings.TrimSpace(t.getenv("OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL"))
	if p == "" {
		p = strings.TrimSpace(t.getenv("OTEL_EXPORTER_OTLP_PROTOCOL"))
	}
	switch p {
	case "":
		return ProtocolHTTPProtobuf, nil
	case ProtocolGRPC, ProtocolHTTPProtobuf:
		return p, nil
	}
	return "", fmt.Errorf("telemetry: OTLP protocol %q is not supported (want grpc or http/protobuf)", p)
}

// Enabled reports whether spans go anywhere.
func (t *Telemetry) Enabled() bool { return t != nil && t.tracesOn }

// ServiceName is OTEL_SERVICE_NAME when set, else def. A process that runs one
// component uses it; the embedded demo names each component itself.
func ServiceName(def string) string {
	if s := strings.TrimSpace(os.Getenv("OTEL_SERVICE_NAME")); s != "" {
		return s
	}
	return def
}

// TracerProvider returns the provider of one service (made on first use). It
// is a no-op provider when tracing is off or after Shutdown.
func (t *Telemetry) TracerProvider(service string) trace.TracerProvider {
	if !t.Enabled() {
		return tracenoop.NewTracerProvider()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return tracenoop.NewTracerProvider()
	}
	if tp, ok := t.tracers[service]; ok {
		return tp.tp
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(t.resourceLocked(service))}
	sampler := t.opts.Sampler
	if sampler == nil {
		sampler = t.sampling.sampler
	}
	opts = append(opts, sdktrace.WithSampler(sampler))
	for _, p := range t.shared {
		opts = append(opts, sdktrace.WithSpanProcessor(p))
	}
	sdk := sdktrace.NewTracerProvider(opts...)
	var tp trace.TracerProvider = sdk
	if t.opts.Sampler == nil {
		tp = &provider{TracerProvider: sdk, sampling: t.sampling}
	}
	t.tracers[service] = tracerProvider{sdk: sdk, tp: tp}
	return tp
}

// tracerProvider is a service's provider, as handed out (tp) and as shut
// down (sdk).
type tracerProvider struct {
	sdk *sdktrace.TracerProvider
	tp  trace.TracerProvider
}

// resourceLocked is the environment's resource (OTEL_RESOURCE_ATTRIBUTES)
// with this service's name and an instance id fresh for this Telemetry,
// made once per service (t.mu held): SigNoz's Kafka pages group consumers by
// service.instance.id, and a service's spans and metrics name the same one.
func (t *Telemetry) resourceLocked(service string) *resource.Resource {
	if r, ok := t.resources[service]; ok {
		return r
	}
	r, err := resource.New(context.Background(),
		resource.WithFromEnv(),
		resource.WithTelemetrySDK(),
		resource.WithHost(),
		resource.WithProcessPID(),
		resource.WithAttributes(semconv.ServiceName(service), semconv.ServiceInstanceID(instanceID())),
	)
	if err != nil {
		// A partial resource (say, a malformed OTEL_RESOURCE_ATTRIBUTES) is
		// still usable; say what was wrong once per service.
		otel.Handle(fmt.Errorf("telemetry: resource of %s: %w", service, err))
	}
	t.resources[service] = r
	return r
}

func instanceID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Shutdown flushes every provider and exporter (spans and metrics) and stops
// them. Spans started and measurements made afterwards are dropped.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	tracers, meters := t.tracers, t.meters
	t.mu.Unlock()
	if t.stopLog != nil {
		close(t.stopLog)
		<-t.logDone
	}
	var errs []error
	for name, tp := range tracers {
		if err := tp.sdk.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("telemetry: flush spans of %s: %w", name, err))
		}
	}
	for _, p := range t.processors {
		if err := p.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("telemetry: stop span processor: %w", err))
		}
	}
	errs = append(errs, t.shutdownMetrics(ctx, meters)...)
	for _, p := range t.exporters {
		s := p.Stats()
		if s.Lost() > 0 {
			t.log.Warn("telemetry: spans lost", statsAttrs(s)...)
		} else {
			t.log.Info("telemetry: every span exported", statsAttrs(s)...)
		}
	}
	return errors.Join(errs...)
}

// stopOnce lets several tracer providers share one span processor: a
// provider's Shutdown leaves it alone, and Telemetry.Shutdown stops it (which
// flushes it) once every provider is done. A flush per provider would only
// repeat that flush, and wait on a failing backend once per provider.
type stopOnce struct{ sdktrace.SpanProcessor }

func (stopOnce) Shutdown(context.Context) error { return nil }

// SpanStats are the counts of each exporter, the OTLP one first: final
// after Shutdown, so far before it. Nil when no exporter is configured.
func (t *Telemetry) SpanStats() []SpanStats {
	if t == nil {
		return nil
	}
	out := make([]SpanStats, len(t.exporters))
	for i, p := range t.exporters {
		out[i] = p.Stats()
	}
	return out
}

// reportLosses warns, every interval until Shutdown, about the spans each
// exporter lost since the last warning: a long-running packer whose backend
// is down keeps saying so.
func (t *Telemetry) reportLosses(every time.Duration) {
	defer close(t.logDone)
	tick := time.NewTicker(every)
	defer tick.Stop()
	reported := make([]int64, len(t.exporters))
	for {
		select {
		case <-t.stopLog:
			return
		case <-tick.C:
		}
		for i, p := range t.exporters {
			s := p.Stats()
			if lost := s.Lost(); lost > reported[i] {
				t.log.Warn("telemetry: spans lost, the exporter is failing",
					append([]any{"lost_since_last_report", lost - reported[i]}, statsAttrs(s)...)...)
				reported[i] = lost
			}
		}
	}
}

func statsAttrs(s SpanStats) []any {
	return []any{"exporter", s.Exporter, "lost", s.Lost(), "ended", s.Ended, "exported", s.Exported,
		"dropped_queue_full", s.Dropped, "failed_exports", s.Failed, "unflushed", s.Unflushed,
		"waited_for_queue", s.Waited, "queue", s.Queue}
}

// errorHandlerLog hands warnings to the OpenTelemetry error handler, one
// error per record, its attributes in the text.
type errorHandlerLog struct{ attrs []slog.Attr }

func (errorHandlerLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h errorHandlerLog) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	add := func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	otel.Handle(errors.New(b.String()))
	return nil
}

func (h errorHandlerLog) WithAttrs(as []slog.Attr) slog.Handler {
	return errorHandlerLog{attrs: append(slices.Clip(h.attrs), as...)}
}

// WithGroup is not needed by the few warnings sent here: a group's
// attributes are printed without its name.
func (h errorHandlerLog) WithGroup(string) slog.Handler { return h }

// LogErrors sends the SDK's internal errors (failed exports, bad
// environment), and the lost-span warnings of a Telemetry made without
// Options.Log, to log at warning level instead of the standard logger.
func LogErrors(log *slog.Logger) {
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("opentelemetry", "err", err)
	}))
}

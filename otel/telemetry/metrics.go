package telemetry

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/runtime"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// DefaultMetricInterval is the time between two exports of the metrics when
// OTEL_METRIC_EXPORT_INTERVAL is not set: the SDK's default, and the step of
// SigNoz's charts.
const DefaultMetricInterval = 60 * time.Second

// startMetrics reads the metrics part of the environment and builds the
// OTLP metric exporter it asks for (if any).
func (t *Telemetry) startMetrics(ctx context.Context) error {
	on, err := t.exporterChoice("METRICS")
	if err != nil {
		return err
	}
	t.metricInterval = DefaultMetricInterval
	if v := strings.TrimSpace(t.getenv("OTEL_METRIC_EXPORT_INTERVAL")); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return fmt.Errorf("telemetry: OTEL_METRIC_EXPORT_INTERVAL=%q is not a positive number of milliseconds", v)
		}
		t.metricInterval = time.Duration(ms) * time.Millisecond
	}
	if on {
		proto, err := t.protocol("METRICS")
		if err != nil {
			return err
		}
		var exp sdkmetric.Exporter
		switch proto {
		case ProtocolGRPC:
			exp, err = otlpmetricgrpc.New(ctx)
		default:
			exp, err = otlpmetrichttp.New(ctx)
		}
		if err != nil {
			return fmt.Errorf("telemetry: OTLP %s metric exporter: %w", proto, err)
		}
		t.metricExporter = exp
	}
	t.metricsOn = t.metricExporter != nil || t.opts.MetricReaders != nil
	return nil
}

// MetricsEnabled reports whether metrics go anywhere.
func (t *Telemetry) MetricsEnabled() bool { return t != nil && t.metricsOn }

// MeterProvider returns the meter provider of one service (made on first
// use), with the resource of its tracer provider. It is a no-op provider when
// metrics are off or after Shutdown: instruments made from it cost a call
// that does nothing.
//
// The first provider made also reports the Go runtime's metrics (go.memory.*,
// go.goroutine.count, ...): a process has one runtime, and the demo, which
// runs every component in one process, would otherwise report it once per
// service and a dashboard that sums over services would count it four times.
func (t *Telemetry) MeterProvider(service string) metric.MeterProvider {
	if !t.MetricsEnabled() {
		return metricnoop.NewMeterProvider()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return metricnoop.NewMeterProvider()
	}
	if mp, ok := t.meters[service]; ok {
		return mp
	}
	opts := []sdkmetric.Option{sdkmetric.WithResource(t.resourceLocked(service))}
	if t.metricExporter != nil {
		// One exporter (one connection) serves every service; each
		// service's reader collects its own provider.
		opts = append(opts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(sharedExporter{t.metricExporter},
			sdkmetric.WithInterval(t.metricInterval))))
	}
	if t.opts.MetricReaders != nil {
		for _, r := range t.opts.MetricReaders(service) {
			opts = append(opts, sdkmetric.WithReader(r))
		}
	}
	mp := sdkmetric.NewMeterProvider(opts...)
	if len(t.meters) == 0 {
		if err := runtime.Start(runtime.WithMeterProvider(mp)); err != nil {
			t.log.Warn("telemetry: no Go runtime metrics", "service", service, "err", err)
		}
	}
	t.meters[service] = mp
	return mp
}

// sharedExporter lets the periodic readers of several meter providers share
// one exporter: a reader's Shutdown leaves it alone, and Telemetry.Shutdown
// stops it once every reader has flushed.
type sharedExporter struct{ sdkmetric.Exporter }

func (sharedExporter) Shutdown(context.Context) error { return nil }

// shutdownMetrics flushes every meter provider (its readers export what they
// hold) and then stops the shared exporter.
func (t *Telemetry) shutdownMetrics(ctx context.Context, meters map[string]*sdkmetric.MeterProvider) []error {
	var errs []error
	for name, mp := range meters {
		if err := mp.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("telemetry: flush metrics of %s: %w", name, err))
		}
	}
	if t.metricExporter != nil {
		if err := t.metricExporter.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("telemetry: stop metric exporter: %w", err))
		}
	}
	return errs
}

package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/otel/servicemap"
	"github.com/northpole-workshop/northpole/otel/telemetry"
	"github.com/northpole-workshop/northpole/processors/sleigh"
)

// demoTraceOptions are the demo's flags about tracing and the sleigh.
type demoTraceOptions struct {
	serviceMap bool
}

func bindDemoTracing(f *pflag.FlagSet, o *demoTraceOptions) {
	o.serviceMap = true
	f.BoolVar(&o.serviceMap, "servicemap", o.serviceMap, "trace every component in process and print the service map it draws (OTEL_* may send the spans elsewhere too)")
}

// demoTracing runs the demo's telemetry (one service.name per component,
// all sharing the span processors: the OTLP exporter when OTEL_* asks for
// one, and the in-process service map) and the sleigh.
type demoTracing struct {
	tel     *telemetry.Telemetry
	stop    func()
	b       *servicemap.Builder
	sleigh  *sleigh.Sleigh
	cancel  context.CancelFunc
	done    chan error
	drained bool // done was read
	stopped bool
}

func startDemoTracing(ctx context.Context, o demoTraceOptions) (*demoTracing, error) {
	d := &demoTracing{}
	var opts telemetry.Options
	if o.serviceMap {
		d.b = servicemap.NewBuilder(servicemap.Options{})
		opts.SpanProcessors = []sdktrace.SpanProcessor{sdktrace.NewBatchSpanProcessor(servicemap.Exporter{B: d.b})}
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

// startSleigh runs the sleigh on the packer's packed topic until finish.
func (d *demoTracing) startSleigh(ctx context.Context, kc kafkaconf.Config, packedTopic, group string, partitions int32) error {
	cfg := sleigh.DefaultConfig()
	cfg.Kafka, cfg.Topic, cfg.Group, cfg.Partitions = kc, packedTopic, group+"-sleigh", partitions
	cfg.Tracer = d.provider(serviceSleigh)
	s, err := sleigh.New(cfg, slog.Default())
	if err != nil {
		return err
	}
	if err := s.EnsureTopics(ctx); err != nil {
		return err
	}
	sctx, cancel := context.WithCancel(ctx)
	d.sleigh, d.cancel, d.done = s, cancel, make(chan error, 1)
	go func() { d.done <- s.Run(sctx) }()
	return nil
}

// finish waits until the sleigh's manifest holds every packed pair, stops
// the sleigh, flushes the spans and prints the service map (also written as
// Mermaid and SVG under outDir, when given).
func (d *demoTracing) finish(ctx context.Context, w io.Writer, packed int, outDir string) error {
	var errs error
	if d.sleigh != nil {
		m, err := d.waitManifest(ctx, packed)
		switch {
		case err != nil:
			errs = err
		case m.Pairs != packed:
			errs = fmt.Errorf("sleigh: the manifest holds %d pairs, the packed topic %d", m.Pairs, packed)
		default:
			c := d.sleigh.Counts()
			fmt.Fprintf(w, "sleigh manifest: %d pairs in %d size classes, one per packed key (%d re-sent records skipped, %d conflicts)\n",
				m.Pairs, len(m.Sizes), c.Repeats, c.Conflicts)
		}
		d.cancel()
		if err := <-d.done; err != nil && errs == nil {
			errs = err
		}
		d.drained = true
	}
	d.close()
	if d.b == nil {
		return errs
	}
	g := d.b.Graph()
	fmt.Fprintln(w)
	if err := g.WriteText(w); err != nil {
		return err
	}
	if outDir != "" {
		if err := writeServicemap(g, filepath.Join(outDir, "servicemap.mmd"), filepath.Join(outDir, "servicemap.svg"), false, io.Discard); err != nil {
			return err
		}
		fmt.Fprintf(w, "wrote %s/servicemap.{mmd,svg}\n", outDir)
	}
	return errs
}

// waitManifest polls the manifest until it has want pairs (the sleigh reads
// the packed topic, then its view reads the sleigh's table).
func (d *demoTracing) waitManifest(ctx context.Context, want int) (sleigh.Manifest, error) {
	deadline := time.Now().Add(60 * time.Second)
	for {
		m, err := d.sleigh.Manifest()
		if err == nil && m.Pairs >= want {
			return m, nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return m, fmt.Errorf("sleigh: manifest: %w", err)
			}
			return m, nil
		}
		select {
		case <-ctx.Done():
			return m, fmt.Errorf("waiting for the sleigh: %w", ctx.Err())
		case err := <-d.done:
			d.done <- err
			return m, fmt.Errorf("sleigh stopped early: %w", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// close stops the sleigh (if finish did not) and flushes the telemetry.
func (d *demoTracing) close() {
	if d.stopped {
		return
	}
	d.stopped = true
	if d.cancel != nil {
		d.cancel()
		if !d.drained {
			<-d.done
		}
	}
	d.stop()
}

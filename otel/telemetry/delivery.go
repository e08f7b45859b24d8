package telemetry

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// SpanStats counts what became of the sampled spans that reached one
// exporter. While the process runs, Pending (queued or being exported) is
// what the other fields leave unaccounted; after Shutdown it is zero.
type SpanStats struct {
	// Exporter names the destination: "otlp", "exporter" (Options.Exporter)
	// or a NamedExporter's name.
	Exporter string
	// Queue is how many spans may wait for export at once
	// (OTEL_BSP_MAX_QUEUE_SIZE).
	Queue int
	// Ended is every sampled span that ended while the processor ran.
	Ended int64
	// Exported is the spans of exports the exporter reported as done. A
	// backend's partial rejection is not seen here: the OTLP exporters
	// report it only to the OpenTelemetry error handler (LogErrors).
	Exported int64
	// Waited is the spans whose End waited for room in the queue (the
	// exporter was slower than the spans came, and the caller slowed down).
	Waited int64
	// Dropped is the spans refused because the queue was full while the
	// exporter was failing.
	Dropped int64
	// Failed is the spans of exports that returned an error.
	Failed int64
	// Unflushed is the spans still queued when Shutdown's context ended.
	Unflushed int64
}

// Lost is every span that will never reach the exporter's backend.
func (s SpanStats) Lost() int64 { return s.Dropped + s.Failed + s.Unflushed }

// Pending is the spans queued or being exported.
func (s SpanStats) Pending() int64 {
	return s.Ended - s.Exported - s.Dropped - s.Failed - s.Unflushed
}

// NamedExporter is an exporter that receives every span, named in SpanStats
// and in warnings.
type NamedExporter struct {
	Name string
	sdktrace.SpanExporter
}

// The SDK's batch span processor drops a span when its queue is full and
// says so only in a debug log, so a burst (the demo at 100 % sampling, a
// packer catching up on a backlog) loses spans although the backend is
// fine. deliveryProcessor puts an admission gate in front of it that holds
// the queue's spans (queued, batched or in an export) to the queue's size:
// while the exporter succeeds, End waits for room (back-pressure, nothing
// lost); while it fails (backend down), End drops and counts instead, so a
// dead backend stalls the caller for one failing export at most: at once
// for a refused connection, else the OTLP exporters' retries until
// OTEL_EXPORTER_OTLP_TIMEOUT (gRPC, 10 s) or OTEL_BSP_EXPORT_TIMEOUT (HTTP,
// 30 s). The batch processor itself blocks rather than drops, which the
// gate makes momentary.
type deliveryProcessor struct {
	name     string
	capacity int64
	bsp      sdktrace.SpanProcessor

	// inQueue is the spans admitted whose export has not returned.
	inQueue atomic.Int64
	failing atomic.Bool
	stopped atomic.Bool
	stopCh  chan struct{}

	mu   sync.Mutex
	room *sync.Cond // inQueue fell, failing or stopped changed

	ended, exported, waited, dropped, failed atomic.Int64
	final                                    *SpanStats // set by Shutdown, under mu
}

// retryPause bounds the pause after a failed export: an OTLP/HTTP exporter
// refused a connection fails at once, and without a pause the processor
// would encode and fail batch after batch as fast as spans come.
var retryPause = struct{ first, max time.Duration }{time.Second, 30 * time.Second}

func newDeliveryProcessor(name string, exp sdktrace.SpanExporter, getenv func(string) string) *deliveryProcessor {
	queue := envInt(getenv, "OTEL_BSP_MAX_QUEUE_SIZE", sdktrace.DefaultMaxQueueSize)
	batch := min(envInt(getenv, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", sdktrace.DefaultMaxExportBatchSize), queue)
	p := &deliveryProcessor{name: name, capacity: int64(queue), stopCh: make(chan struct{})}
	p.room = sync.NewCond(&p.mu)
	// The queue size and batch size are given explicitly so that the gate
	// and the SDK agree on them; the SDK reads the delays and timeouts of
	// OTEL_BSP_* itself.
	p.bsp = sdktrace.NewBatchSpanProcessor(&countingExporter{p: p, next: exp},
		sdktrace.WithMaxQueueSize(queue), sdktrace.WithMaxExportBatchSize(batch), sdktrace.WithBlocking())
	return p
}

// envInt reads a positive integer; anything else is the default (the SDK
// would take zero, an unbuffered queue, and panic on a negative size).
func envInt(getenv func(string) string, key string, def int) int {
	n, err := strconv.Atoi(strings.TrimSpace(getenv(key)))
	if err != nil || n <= 0 {
		return def
	}
	return n
}

func (p *deliveryProcessor) OnStart(ctx context.Context, s sdktrace.ReadWriteSpan) {
	p.bsp.OnStart(ctx, s)
}

func (p *deliveryProcessor) OnEnd(s sdktrace.ReadOnlySpan) {
	// The batch processor exports sampled spans only; a recorded but
	// unsampled span was never meant to leave the process.
	if !s.SpanContext().IsSampled() {
		return
	}
	p.ended.Add(1)
	if !p.admit() {
		p.dropped.Add(1)
		return
	}
	p.bsp.OnEnd(s)
}

// admit takes a place in the queue, waiting for one while the exporter
// succeeds; false means the span is to be dropped.
func (p *deliveryProcessor) admit() bool {
	waited := false
	for {
		if p.inQueue.Add(1) <= p.capacity {
			return true
		}
		// Only an export frees a place, and it signals room under mu, so a
		// full queue seen under mu cannot miss its wake-up.
		p.inQueue.Add(-1)
		if p.failing.Load() || p.stopped.Load() {
			return false
		}
		if !waited {
			waited = true
			p.waited.Add(1)
		}
		p.mu.Lock()
		for p.inQueue.Load() >= p.capacity && !p.failing.Load() && !p.stopped.Load() {
			p.room.Wait()
		}
		p.mu.Unlock()
	}
}

// exportDone accounts for one export of n spans.
func (p *deliveryProcessor) exportDone(n int, err error) {
	if err != nil {
		p.failed.Add(int64(n))
	} else {
		p.exported.Add(int64(n))
	}
	p.mu.Lock()
	p.inQueue.Add(-int64(n))
	p.failing.Store(err != nil)
	p.room.Broadcast()
	p.mu.Unlock()
}

func (p *deliveryProcessor) ForceFlush(ctx context.Context) error { return p.bsp.ForceFlush(ctx) }

// Shutdown exports what is queued (until ctx ends), stops the exporter and
// freezes the counts: what is still queued then is Unflushed.
func (p *deliveryProcessor) Shutdown(ctx context.Context) error {
	p.mu.Lock()
	if p.final != nil {
		p.mu.Unlock()
		return nil
	}
	p.stopped.Store(true)
	close(p.stopCh)
	p.room.Broadcast()
	p.mu.Unlock()
	err := p.bsp.Shutdown(ctx)
	s := p.snapshot()
	s.Unflushed = s.Pending()
	p.mu.Lock()
	p.final = &s
	p.mu.Unlock()
	if err != nil {
		return fmt.Errorf("telemetry: %s: %w", p.name, err)
	}
	return nil
}

// Stats are the counts so far (final after Shutdown).
func (p *deliveryProcessor) Stats() SpanStats {
	p.mu.Lock()
	final := p.final
	p.mu.Unlock()
	if final != nil {
		return *final
	}
	return p.snapshot()
}

func (p *deliveryProcessor) snapshot() SpanStats {
	// Exports are read before ended: a span counted as exported has always
	// been counted as ended, so Pending is never negative.
	s := SpanStats{Exporter: p.name, Queue: int(p.capacity),
		Exported: p.exported.Load(), Failed: p.failed.Load(), Dropped: p.dropped.Load(), Waited: p.waited.Load()}
	s.Ended = p.ended.Load()
	return s
}

// countingExporter tells the processor how each export went, and pauses
// the batch processor's worker after a failure (see retryPause).
type countingExporter struct {
	p     *deliveryProcessor
	next  sdktrace.SpanExporter
	pause time.Duration // the batch processor serializes ExportSpans calls
}

func (e *countingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.next.ExportSpans(ctx, spans)
	e.p.exportDone(len(spans), err)
	if err == nil {
		e.pause = 0
		return nil
	}
	e.pause = min(max(2*e.pause, retryPause.first), retryPause.max)
	t := time.NewTimer(e.pause)
	defer t.Stop()
	select {
	case <-t.C:
	case <-e.p.stopCh:
	}
	return err
}

func (e *countingExporter) Shutdown(ctx context.Context) error { return e.next.Shutdown(ctx) }

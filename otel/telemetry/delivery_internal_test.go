package telemetry

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// switchExporter fails while down is set, and takes a little time per
// export, so that a burst fills a small queue.
type switchExporter struct{ down atomic.Bool }

func (e *switchExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	time.Sleep(time.Millisecond)
	if e.down.Load() {
		return errors.New("backend down")
	}
	return nil
}

func (*switchExporter) Shutdown(context.Context) error { return nil }

// TestDeliveryAcrossAnOutage: a backend that is up gets every span (spans
// wait for room in a small queue); while it is down spans are dropped and
// counted; once it is back, spans wait again and none is dropped. Every
// span is accounted for at the end.
func TestDeliveryAcrossAnOutage(t *testing.T) {
	defer func(p struct{ first, max time.Duration }) { retryPause = p }(retryPause)
	retryPause.first, retryPause.max = 5*time.Millisecond, 20*time.Millisecond
	exp := &switchExporter{}
	getenv := func(k string) string {
		return map[string]string{"OTEL_BSP_MAX_QUEUE_SIZE": "64", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "16"}[k]
	}
	tel, err := New(context.Background(), Options{Exporter: exp, Getenv: getenv, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	tr := tel.TracerProvider("packer").Tracer("t")
	end := func(n int) {
		for range n {
			_, s := tr.Start(context.Background(), "process toys")
			s.End()
		}
	}
	stats := func() SpanStats { return tel.SpanStats()[0] }

	end(1000)
	if err := tel.exporters[0].ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := stats(); s.Exported != 1000 || s.Lost() != 0 || s.Waited == 0 {
		t.Fatalf("backend up: %+v, want 1000 exported after waiting, none lost", s)
	}

	exp.down.Store(true)
	end(1000)
	down := stats()
	if down.Dropped == 0 || down.Exported != 1000 {
		t.Fatalf("backend down: %+v, want drops and nothing more exported", down)
	}

	exp.down.Store(false)
	// The first export that succeeds ends the outage; one more span makes
	// sure the flush has something to export.
	end(1)
	if err := tel.exporters[0].ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	back := stats()
	end(1000)
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := stats()
	if s.Dropped != back.Dropped || s.Exported != back.Exported+1000 || s.Waited == back.Waited {
		t.Errorf("backend back: %+v after %+v, want 1000 more exported after waiting, no more drops", s, back)
	}
	if s.Ended != 3001 || s.Exported+s.Lost() != s.Ended || s.Pending() != 0 {
		t.Errorf("final %+v: every span must be exported or lost", s)
	}
}

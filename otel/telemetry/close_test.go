package telemetry_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/northpole-workshop/northpole/otel/telemetry"
)

// failingExporter accepts every span and fails to shut down.
type failingExporter struct{}

func (failingExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (failingExporter) Shutdown(context.Context) error                             { return errors.New("backend gone") }

// TestCloseLogsWhatShutdownReports: Close flushes and stops like Shutdown,
// and says in the log, not to its caller, when spans may be lost; a nil
// Telemetry and a second Close do nothing.
func TestCloseLogsWhatShutdownReports(t *testing.T) {
	var log bytes.Buffer
	tel, err := telemetry.New(context.Background(), telemetry.Options{Exporter: failingExporter{}, Getenv: env(nil),
		Log: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	_, span := tel.TracerProvider("svc").Tracer("test").Start(context.Background(), "op")
	span.End()
	tel.Close()
	if !strings.Contains(log.String(), "spans or metrics may be lost") || !strings.Contains(log.String(), "backend gone") {
		t.Errorf("Close logged:\n%s", log.String())
	}
	log.Reset()
	tel.Close()
	if log.Len() != 0 {
		t.Errorf("a second Close logged:\n%s", log.String())
	}
	(*telemetry.Telemetry)(nil).Close()
}

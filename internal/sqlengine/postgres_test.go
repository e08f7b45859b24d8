package sqlengine_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/northpole-workshop/northpole/internal/sqlengine"
	"github.com/northpole-workshop/northpole/internal/testsupport/testpostgres"
)

// TestWithTracerMakesClientSpans: a reader opened with WithTracer makes a
// CLIENT span per query, with the database system SigNoz draws its
// service -> database edge from; without it, none.
func TestWithTracerMakesClientSpans(t *testing.T) {
	dsn := testpostgres.DSN(t)
	ctx := context.Background()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	for _, traced := range []bool{true, false} {
		var opts []sqlengine.Option
		if traced {
			opts = append(opts, sqlengine.WithTracer(tp))
		}
		db, err := sqlengine.OpenReader(ctx, dsn, opts...)
		if err != nil {
			t.Fatal(err)
		}
		var one int
		if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
	var selects int
	for _, s := range rec.Ended() {
		if s.Name() != "SELECT" && s.Name() != "SELECT postgres" {
			continue
		}
		selects++
		system := ""
		for _, a := range s.Attributes() {
			if a.Key == "db.system" {
				system = a.Value.AsString()
			}
		}
		if s.SpanKind() != trace.SpanKindClient || system != "postgresql" {
			t.Errorf("span %q: kind %v, db.system %q; want a CLIENT span of postgresql", s.Name(), s.SpanKind(), system)
		}
	}
	if selects != 1 {
		names := []string{}
		for _, s := range rec.Ended() {
			names = append(names, s.Name())
		}
		t.Fatalf("%d SELECT spans (all spans: %v), want 1: the traced query only", selects, names)
	}
}

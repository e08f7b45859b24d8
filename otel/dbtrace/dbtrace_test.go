package dbtrace

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/northpole-workshop/northpole/internal/testsupport/testpostgres"
)

func TestOperation(t *testing.T) {
	for q, want := range map[string]string{
		"select 1":                                 "SELECT",
		"  WITH x AS (SELECT 1) SELECT * FROM x":   "WITH",
		"-- the packed set\nSELECT toy_id":         "SELECT",
		"/* a */ /* b */ insert into t values (1)": "INSERT",
		"CREATE MATERIALIZED VIEW v AS SELECT 1":   "CREATE",
		"":                                         "",
		"-- only a comment":                        "",
	} {
		if got := Operation(q); got != want {
			t.Errorf("Operation(%q) = %q, want %q", q, got, want)
		}
	}
}

func TestQuerySpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tr := New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)), DB{System: "postgresql", Namespace: "northpole", Host: "127.0.0.1", Port: 5432})
	if err := tr.Query(context.Background(), "SELECT * FROM packed", func(ctx context.Context) error {
		if !trace.SpanFromContext(ctx).IsRecording() {
			t.Error("fn does not run inside the span")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	boom := &pgconn.PgError{Code: "42P01", Message: "relation does not exist"}
	if err := tr.Query(context.Background(), "SELECT * FROM nope", func(context.Context) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("Query returned %v, want fn's error", err)
	}
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans", len(spans))
	}
	attrs := func(s sdktrace.ReadOnlySpan) map[string]string {
		m := map[string]string{}
		for _, a := range s.Attributes() {
			m[string(a.Key)] = a.Value.String()
		}
		return m
	}
	ok := spans[0]
	if ok.Name() != "SELECT northpole" || ok.SpanKind() != trace.SpanKindClient {
		t.Errorf("span %q kind %v", ok.Name(), ok.SpanKind())
	}
	for k, v := range map[string]string{"db.system.name": "postgresql", "db.system": "postgresql", "db.namespace": "northpole",
		"db.operation.name": "SELECT", "db.query.text": "SELECT * FROM packed", "server.address": "127.0.0.1", "server.port": "5432"} {
		if got := attrs(ok)[k]; got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	bad := spans[1]
	if bad.Status().Code != codes.Error || attrs(bad)["db.response.status_code"] != "42P01" || attrs(bad)["error.type"] != "42P01" {
		t.Errorf("failed query: status %v attrs %v", bad.Status(), attrs(bad))
	}
}

func TestOffIsFree(t *testing.T) {
	if New(nil, DB{}) != nil || New(noop.NewTracerProvider(), DB{}) != nil || NewPgxTracer(nil, SystemPostgreSQL) != nil {
		t.Fatal("off should give nil")
	}
	var tr *Tracer
	called := false
	if err := tr.Query(context.Background(), "SELECT 1", func(context.Context) error { called = true; return nil }); err != nil || !called {
		t.Fatal("nil tracer must still run the query")
	}
	// A pgx tracer without a connection (pgx always passes one) still works.
	rec := tracetest.NewSpanRecorder()
	pt := NewPgxTracer(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)), SystemPostgreSQL)
	ctx := pt.TraceQueryStart(context.Background(), nil, pgx.TraceQueryStartData{SQL: "select 1"})
	pt.TraceQueryEnd(ctx, nil, pgx.TraceQueryEndData{CommandTag: pgconn.NewCommandTag("SELECT 1")})
	if n := len(rec.Ended()); n != 1 {
		t.Errorf("pgx tracer made %d spans", n)
	}
}

// TestPgxTracerOnAServer: on a real PostgreSQL (NORTHPOLE_TEST_POSTGRES, or
// skipped), the connect, a query and a COPY each get a CLIENT span with the
// system the caller named and the server's address; a RisingWave tracer
// labels them risingwave.
func TestPgxTracerOnAServer(t *testing.T) {
	dsn := testpostgres.DSN(t)
	ctx := context.Background()
	for _, system := range []string{SystemPostgreSQL, SystemRisingWave} {
		rec := tracetest.NewSpanRecorder()
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Tracer = NewPgxTracer(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)), system)
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "CREATE TEMPORARY TABLE traced (n int)"); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.CopyFrom(ctx, pgx.Identifier{"traced"}, []string{"n"}, pgx.CopyFromRows([][]any{{1}, {2}})); err != nil {
			t.Fatal(err)
		}
		conn.Close(ctx)
		names := map[string]bool{}
		for _, s := range rec.Ended() {
			names[s.Name()] = true
			got := map[string]string{}
			for _, a := range s.Attributes() {
				got[string(a.Key)] = a.Value.String()
			}
			if s.SpanKind() != trace.SpanKindClient || got["db.system.name"] != system || got["server.address"] != cfg.Host {
				t.Errorf("%s: span %q kind %v attributes %v; want a CLIENT span of %s at %s", system, s.Name(), s.SpanKind(), got, system, cfg.Host)
			}
			if s.Name() == "COPY traced" && (got["db.collection.name"] != "traced" || got["db.response.returned_rows"] != "2") {
				t.Errorf("%s: COPY span attributes %v", system, got)
			}
		}
		for _, want := range []string{"connect", "CREATE " + cfg.Database, "COPY traced"} {
			if !names[want] {
				t.Errorf("%s: no span %q among %v", system, want, names)
			}
		}
	}
}

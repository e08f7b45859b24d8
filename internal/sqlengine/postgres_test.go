package sqlengine_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/northpole-workshop/northpole/internal/contract"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/sqlengine"
	"github.com/northpole-workshop/northpole/internal/testsupport/testpostgres"
)

// recordingTracer is a pgx tracer that notes what it is asked to trace.
type recordingTracer struct {
	mu     sync.Mutex
	seen   []string
	copies []string
}

func (r *recordingTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, d.SQL)
	return ctx
}

func (r *recordingTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (r *recordingTracer) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceCopyFromStartData) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.copies = append(r.copies, strings.Join(d.TableName, "."))
	return ctx
}

func (r *recordingTracer) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}

// TestWithTracerTracesEveryStatement: the tracer the caller gives reaches
// every connection, a reader's query and an engine's COPY load alike;
// without one, nothing is traced.
func TestWithTracerTracesEveryStatement(t *testing.T) {
	dsn := testpostgres.DSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rec := &recordingTracer{}
	db, err := sqlengine.OpenReader(ctx, dsn, sqlengine.WithTracer(rec))
	if err != nil {
		t.Fatal(err)
	}
	var one int
	if err := db.QueryRowContext(ctx, "SELECT 1 AS traced").Scan(&one); err != nil {
		t.Fatal(err)
	}
	db.Close()
	untraced, err := sqlengine.OpenReader(ctx, dsn, sqlengine.WithTracer(nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := untraced.QueryRowContext(ctx, "SELECT 1 AS untraced").Scan(&one); err != nil {
		t.Fatal(err)
	}
	untraced.Close()
	if !slices.Contains(rec.seen, "SELECT 1 AS traced") || slices.Contains(rec.seen, "SELECT 1 AS untraced") {
		t.Errorf("traced statements %q: want the traced reader's query and not the other's", rec.seen)
	}

	schema := "tracer_" + strings.ReplaceAll(strings.ToLower(t.Name()), "/", "_")
	e, err := sqlengine.OpenPostgres(ctx, dsn, schema, nil, sqlengine.WithTracer(rec))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = sqlengine.DropSchema(ctx, e.DB(), schema)
		e.Close()
	}()
	in := []record.Input{{Stream: record.Toys, Topic: "toys", Partition: 0, Offset: 0, Key: []byte("M"),
		Value: []byte(`{"toy_id":"t1","kind":"k","size":"M","elf":"e","made_at":"2026-12-24T10:00:01Z"}`)}}
	if _, err := e.Compute(ctx, in, contract.DefaultParams()); err != nil {
		t.Fatal(err)
	}
	if len(rec.copies) != 1 {
		t.Errorf("COPY loads traced: %q, want the one of the inputs", rec.copies)
	}
}

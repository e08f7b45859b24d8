// Package dbtrace makes the CLIENT spans of database queries, named and
// attributed by the OTel database semantic conventions, for the compare job
// (service "compare") and any other SQL client here.
//
// Two ways in: Query wraps any call (database/sql, a driver of its own), and
// PgxTracer plugs into pgx v5 (ConnConfig.Tracer), which then traces every
// Query, QueryRow and Exec by itself.
//
// Each span carries db.system.name (current conventions) and db.system (what
// SigNoz reads to draw its service -> database edge), so the service map gets
// an edge compare -> postgresql. A nil or no-op provider costs nothing.
package dbtrace

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ScopeName is the instrumentation scope of these spans.
const ScopeName = "github.com/northpole-workshop/northpole/otel/dbtrace"

// LegacySystemKey is the pre-1.26 name of db.system.name; SigNoz's service
// map reads it.
const LegacySystemKey = attribute.Key("db.system")

// maxQueryText bounds db.query.text: long generated SQL would bloat every span.
const maxQueryText = 4096

// DB describes the database a client talks to.
type DB struct {
	// System is db.system.name: "postgresql", "sqlite", "risingwave"...
	System string
	// Namespace is the database name (db.namespace), optional.
	Namespace string
	// Host and Port of the server (server.address, server.port), optional.
	Host string
	Port int
}

// Tracer makes query spans for one database. A nil *Tracer does nothing.
type Tracer struct {
	tracer trace.Tracer
	db     DB
	base   []attribute.KeyValue
}

// New returns nil when tp is nil or a no-op provider.
func New(tp trace.TracerProvider, db DB) *Tracer {
	if !enabled(tp) {
		return nil
	}
	return newTracer(tp.Tracer(ScopeName), db)
}

func newTracer(tracer trace.Tracer, db DB) *Tracer {
	base := []attribute.KeyValue{semconv.DBSystemNameKey.String(db.System), LegacySystemKey.String(db.System)}
	if db.Namespace != "" {
		base = append(base, semconv.DBNamespace(db.Namespace))
	}
	if db.Host != "" {
		base = append(base, semconv.ServerAddress(db.Host))
	}
	if db.Port > 0 {
		base = append(base, semconv.ServerPort(db.Port))
	}
	return &Tracer{tracer: tracer, db: db, base: base}
}

// Start begins the CLIENT span of one query; end it with End.
func (t *Tracer) Start(ctx context.Context, query string) (context.Context, trace.Span) {
	if t == nil {
		return ctx, trace.SpanFromContext(ctx)
	}
	op := Operation(query)
	name := t.db.System
	if op != "" {
		name = op
		if t.db.Namespace != "" {
			name += " " + t.db.Namespace
		}
	}
	text := query
	if len(text) > maxQueryText {
		text = text[:maxQueryText]
	}
	attrs := append(append(make([]attribute.KeyValue, 0, len(t.base)+2), t.base...), semconv.DBQueryText(text))
	if op != "" {
		attrs = append(attrs, semconv.DBOperationName(op))
	}
	return t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

// End ends a query span with its outcome: an error sets the status, error.type
// and, for PostgreSQL errors, db.response.status_code (the SQLSTATE).
func End(span trace.Span, err error) {
	if span == nil || !span.IsRecording() {
		return
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			span.SetAttributes(semconv.DBResponseStatusCode(pgErr.Code), semconv.ErrorTypeKey.String(pgErr.Code))
		} else {
			span.SetAttributes(semconv.ErrorTypeKey.String("_OTHER"))
		}
	}
	span.End()
}

// Query runs fn under the span of query: the generic helper for any client.
//
//	err := t.Query(ctx, sql, func(ctx context.Context) error {
//		rows, err := db.QueryContext(ctx, sql)
//		...
//	})
func (t *Tracer) Query(ctx context.Context, query string, fn func(context.Context) error) error {
	ctx, span := t.Start(ctx, query)
	err := fn(ctx)
	End(span, err)
	return err
}

// Operation is the first SQL keyword of query, upper case ("SELECT",
// "WITH", "CREATE"), or "" when there is none. Comments are skipped.
func Operation(query string) string {
	q := strings.TrimSpace(query)
	for {
		switch {
		case strings.HasPrefix(q, "--"):
			if i := strings.IndexByte(q, '\n'); i >= 0 {
				q = strings.TrimSpace(q[i+1:])
				continue
			}
			return ""
		case strings.HasPrefix(q, "/*"):
			if i := strings.Index(q, "*/"); i >= 0 {
				q = strings.TrimSpace(q[i+2:])
				continue
			}
			return ""
		}
		break
	}
	end := strings.IndexFunc(q, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') })
	if end < 0 {
		end = len(q)
	}
	return strings.ToUpper(q[:end])
}

// The db.system.name of the servers northpole's clients talk to:
// PostgreSQL's is the conventions'; RisingWave has none there, and speaks
// PostgreSQL's protocol, but the map must tell the two apart.
const (
	SystemPostgreSQL = "postgresql"
	SystemRisingWave = "risingwave"
)

// PgxTracer traces a pgx connection: every query, each COPY and the
// connect get a CLIENT span (pgx.QueryTracer, pgx.CopyFromTracer,
// pgx.ConnectTracer), labelled with the server's system.
type PgxTracer struct{ t *Tracer }

var (
	_ pgx.QueryTracer    = (*PgxTracer)(nil)
	_ pgx.CopyFromTracer = (*PgxTracer)(nil)
	_ pgx.ConnectTracer  = (*PgxTracer)(nil)
)

// NewPgxTracer is the tracer of connections to a server of system
// (SystemPostgreSQL, SystemRisingWave), to set as pgx.ConnConfig.Tracer; nil
// (an interface that is nil, so that pgx calls nothing) when tp is nil or a
// no-op provider. The database name and server come from each connection's
// config.
func NewPgxTracer(tp trace.TracerProvider, system string) pgx.QueryTracer {
	if !enabled(tp) {
		return nil
	}
	return &PgxTracer{t: New(tp, DB{System: system})}
}

type pgxSpanKey struct{}

// of is the tracer for a connection of config cc (nil: none known).
func (p *PgxTracer) of(cc *pgx.ConnConfig) *Tracer {
	if cc == nil {
		return p.t
	}
	return newTracer(p.t.tracer, DB{System: p.t.db.System, Namespace: cc.Database, Host: cc.Host, Port: int(cc.Port)})
}

// onConn is the tracer for conn (nil: none known).
func (p *PgxTracer) onConn(conn *pgx.Conn) *Tracer {
	if conn == nil {
		return p.t
	}
	return p.of(conn.Config())
}

// end ends the span ctx carries: with the rows a statement that did not
// fail returned or wrote, or with its error.
func end(ctx context.Context, tag pgconn.CommandTag, err error) {
	span, _ := ctx.Value(pgxSpanKey{}).(trace.Span)
	if span != nil && err == nil {
		span.SetAttributes(attribute.Int64("db.response.returned_rows", tag.RowsAffected()))
	}
	End(span, err)
}

func (p *PgxTracer) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	ctx, span := p.onConn(conn).Start(ctx, data.SQL)
	return context.WithValue(ctx, pgxSpanKey{}, span)
}

func (p *PgxTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	end(ctx, data.CommandTag, data.Err)
}

// TraceCopyFromStart starts the span of a COPY ... FROM STDIN into
// data.TableName (pgx's CopyFrom), named as the conventions name an
// operation on a collection: "COPY <table>".
func (p *PgxTracer) TraceCopyFromStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceCopyFromStartData) context.Context {
	t := p.onConn(conn)
	table := strings.Join(data.TableName, ".")
	attrs := append(append(make([]attribute.KeyValue, 0, len(t.base)+3), t.base...),
		semconv.DBOperationName("COPY"), semconv.DBCollectionName(table), semconv.DBQueryText("COPY "+table+" FROM STDIN"))
	ctx, span := t.tracer.Start(ctx, "COPY "+table, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return context.WithValue(ctx, pgxSpanKey{}, span)
}

func (p *PgxTracer) TraceCopyFromEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceCopyFromEndData) {
	end(ctx, data.CommandTag, data.Err)
}

// TraceConnectStart starts the span of a connect, "connect" with the
// server's attributes: a server that does not answer shows on the map.
func (p *PgxTracer) TraceConnectStart(ctx context.Context, data pgx.TraceConnectStartData) context.Context {
	t := p.of(data.ConnConfig)
	ctx, span := t.tracer.Start(ctx, "connect", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(t.base...))
	return context.WithValue(ctx, pgxSpanKey{}, span)
}

func (p *PgxTracer) TraceConnectEnd(ctx context.Context, data pgx.TraceConnectEndData) {
	span, _ := ctx.Value(pgxSpanKey{}).(trace.Span)
	End(span, data.Err)
}

// enabled: nil and the no-op provider record nothing, so pgx gets no tracer
// and a query costs nothing more.
func enabled(tp trace.TracerProvider) bool {
	switch tp.(type) {
	case nil, noop.TracerProvider, *noop.TracerProvider:
		return false
	}
	return true
}

package sqlengine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"go.opentelemetry.io/otel/trace"

	"github.com/northpole-workshop/northpole/internal/contractsql"
	"github.com/northpole-workshop/northpole/otel/dbtrace"
)

// OpenPostgres connects to PostgreSQL (a libpq URL or key=value DSN, through
// pgx) as a batch engine whose relations live in schema, which it creates if
// needed. The connections' search_path is schema, so that the shared text's
// unqualified names resolve there. A nil log discards the engine's log.
func OpenPostgres(ctx context.Context, dsn, schema string, log *slog.Logger, opts ...Option) (*Engine, error) {
	if err := ValidSchema(schema); err != nil {
		return nil, err
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres DSN: %w", err)
	}
	cfg.RuntimeParams["search_path"] = schema
	for _, o := range opts {
		o(cfg)
	}
	db := stdlib.OpenDB(*cfg)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to postgres %s:%d: %w", cfg.Host, cfg.Port, err)
	}
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("postgres: create schema %s: %w", schema, err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Engine{db: db, dialect: Postgres, schema: schema, log: log}, nil
}

// Option adjusts the connection config of OpenPostgres and OpenReader.
type Option func(*pgx.ConnConfig)

// WithTracer makes a CLIENT span of every query (otel/dbtrace), so that the
// service map shows the client -> postgresql edge. A nil or no-op provider
// leaves the connections untraced.
func WithTracer(tp trace.TracerProvider) Option {
	return func(c *pgx.ConnConfig) {
		if t := dbtrace.NewPgxTracer(tp); t != nil {
			c.Tracer = t
		}
	}
}

// OpenReader connects to a PostgreSQL-protocol server (PostgreSQL or
// RisingWave) only to read result relations, changing nothing.
func OpenReader(ctx context.Context, dsn string, opts ...Option) (*sql.DB, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("SQL DSN: %w", err)
	}
	for _, o := range opts {
		o(cfg)
	}
	db := stdlib.OpenDB(*cfg)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to %s:%d: %w", cfg.Host, cfg.Port, err)
	}
	return db, nil
}

// DropSchema drops schema and everything in it. Tests use it to clean up.
func DropSchema(ctx context.Context, db *sql.DB, schema string) error {
	if err := ValidSchema(schema); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
		return fmt.Errorf("postgres: drop schema %s: %w", schema, err)
	}
	return nil
}

// copyPostgres loads rows with COPY, through the pgx connection underneath
// database/sql: INSERTs one by one would dominate a run's time.
func (e *Engine) copyPostgres(ctx context.Context, rows []Row) error {
	conn, err := e.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("get connection: %w", err)
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return errors.New("the postgres connection is not a pgx connection")
		}
		src := make([][]any, len(rows))
		for i, r := range rows {
			src[i] = r.values()
		}
		n, err := sc.Conn().CopyFrom(ctx, pgx.Identifier{e.schema, contractsql.Input}, inputColumns, pgx.CopyFromRows(src))
		if err != nil {
			return fmt.Errorf("copy: %w", err)
		}
		if n != int64(len(rows)) {
			return fmt.Errorf("copy: %d of %d rows written", n, len(rows))
		}
		return nil
	})
}

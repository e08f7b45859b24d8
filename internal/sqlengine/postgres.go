package sqlengine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/northpole-workshop/northpole/internal/contractsql"
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

// WithTracer sets the connections' tracer, which the caller makes (for
// example otel/dbtrace's, which draws the client -> server edge of the
// service map); pgx also calls its CopyFromTracer and ConnectTracer methods
// when it has them. A nil tracer leaves the connections untraced.
func WithTracer(t pgx.QueryTracer) Option {
	return func(c *pgx.ConnConfig) {
		if t != nil {
			c.Tracer = t
		}
	}
}

// IsRisingWave reports whether the server at dsn is RisingWave, which
// speaks PostgreSQL's protocol and says who it is in version().
func IsRisingWave(ctx context.Context, dsn string) (bool, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return false, fmt.Errorf("SQL DSN: %w", err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return false, fmt.Errorf("connect to %s:%d: %w", cfg.Host, cfg.Port, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var v string
	if err := conn.QueryRow(ctx, "SELECT version()").Scan(&v); err != nil {
		return false, fmt.Errorf("ask the server's version: %w", err)
	}
	return strings.Contains(v, "RisingWave"), nil
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

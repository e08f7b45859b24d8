package compare

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/trace"

	"github.com/northpole-workshop/northpole/internal/contract"
	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
	"github.com/northpole-workshop/northpole/internal/sqlengine"
	"github.com/northpole-workshop/northpole/otel/dbtrace"
	"github.com/northpole-workshop/northpole/processors/packer"
	"github.com/northpole-workshop/northpole/processors/packer/readback"
)

// Config says what Run compares.
type Config struct {
	// Kafka holds Goka's result topics and the input topics.
	Kafka  kafkaconf.Config
	Topics packer.Topics
	// Params are the W and L Goka ran with: the embedded and loaded engines
	// run the SQL with them, and the reference explains differences with
	// them.
	contract.Params
	// DSN names a PostgreSQL-protocol server holding the result relations
	// (RisingWave's materialized views, or a PostgreSQL loaded earlier) in
	// Schema. Empty: the embedded SQLite runs the shared SQL on the input
	// topics.
	DSN string
	// Load, with DSN: load the input topics into tables in Schema of that
	// PostgreSQL (dropping northpole's relations there first) and run the
	// shared SQL there.
	Load   bool
	Schema string
	// Tracer, when set, traces every query to the DSN's server (CLIENT
	// spans, otel/dbtrace).
	Tracer trace.TracerProvider
}

// Validate reports why Run cannot compare, or nil.
func (c Config) Validate() error {
	var errs []error
	if err := c.Params.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Load && c.DSN == "" {
		errs = append(errs, errors.New("compare: load needs a DSN, sql (the PostgreSQL to load into)"))
	}
	if c.DSN != "" {
		// Parsing connects to nothing: a DSN that is not one fails here,
		// before Kafka is read, rather than after.
		if _, err := pgx.ParseConfig(c.DSN); err != nil {
			errs = append(errs, fmt.Errorf("compare: sql: %w", err))
		}
	}
	if err := sqlengine.ValidSchema(c.Schema); err != nil {
		errs = append(errs, err)
	}
	if err := c.Kafka.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Result is what Run found: the comparison, and what it was made of.
type Result struct {
	Comparison Comparison
	// Goka and SQL are the two sides' five sets, Inputs the input records.
	Goka, SQL results.Set
	Inputs    []record.Input
	Params    contract.Params
	// Reference are Goka's differences from the batch reference
	// (contract.Compute in mode ClosedOnly): none when they are equal.
	Reference []results.Diff
}

// Run reads Goka's five result topics (deduplicated by key) and the input
// topics, computes or reads the SQL engine's five sets (see Config), and
// compares them (Build), and Goka's with the reference's. A key Goka wrote
// with two different values (a toy in two boxes of one window) makes the comparison
// unequal even if the first values read match the SQL. A nil log discards
// the SQL engines' logs.
func Run(ctx context.Context, cfg Config, log *slog.Logger) (Result, error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	rb, err := readback.Read(ctx, cfg.Kafka, cfg.Topics)
	if err != nil {
		return Result{}, err
	}
	inputs := rb.Inputs()
	sqlSet, engine, err := sqlSide(ctx, cfg, inputs, log)
	if err != nil {
		return Result{}, err
	}
	c := Build(rb.Goka, sqlSet, inputs, cfg.Params)
	c.GokaConflicts = rb.Raw.Conflicts
	c.Equal = c.Equal && rb.Raw.Conflicts == 0
	t := cfg.Topics
	c.Goka = fmt.Sprintf("Goka (topics %s, %s, %s, %s, %s at %s)", t.Packed, t.Unpacked, t.Spare, t.Late, t.Dead, strings.Join(cfg.Kafka.Brokers, ","))
	c.SQL = engine
	return Result{Comparison: c, Goka: rb.Goka, SQL: sqlSet, Inputs: inputs, Params: cfg.Params,
		Reference: results.Compare(rb.Goka, contract.Compute(inputs, cfg.Params, contract.ClosedOnly))}, nil
}

// sqlSide computes or reads the SQL engine's five sets, and describes the
// engine.
func sqlSide(ctx context.Context, cfg Config, inputs []record.Input, log *slog.Logger) (results.Set, string, error) {
	switch {
	case cfg.DSN == "":
		set, err := EmbeddedSQL(ctx, inputs, cfg.Params, log)
		return set, "the embedded SQLite (the shared contract SQL on the input topics)", err
	case cfg.Load:
		e, err := sqlengine.OpenPostgres(ctx, cfg.DSN, cfg.Schema, log, sqlengine.WithTracer(dbtrace.NewPgxTracer(cfg.Tracer, dbtrace.SystemPostgreSQL)))
		if err != nil {
			return results.Set{}, "", err
		}
		defer e.Close()
		set, err := e.Compute(ctx, inputs, cfg.Params)
		return set, fmt.Sprintf("PostgreSQL at %s (the input topics loaded into schema %s, the shared contract SQL run there)", dsnHost(cfg.DSN), cfg.Schema), err
	default:
		// The relations may be RisingWave's views or a PostgreSQL's tables:
		// the spans, and so the map, name which.
		system := dbtrace.SystemPostgreSQL
		if rw, err := sqlengine.IsRisingWave(ctx, cfg.DSN); err != nil {
			return results.Set{}, "", err
		} else if rw {
			system = dbtrace.SystemRisingWave
		}
		db, err := sqlengine.OpenReader(ctx, cfg.DSN, sqlengine.WithTracer(dbtrace.NewPgxTracer(cfg.Tracer, system)))
		if err != nil {
			return results.Set{}, "", err
		}
		defer db.Close()
		set, err := sqlengine.ReadResults(ctx, db, cfg.Schema)
		if err != nil {
			return results.Set{}, "", fmt.Errorf("%w (did the RisingWave script, or loading the inputs, create them in schema %s?)", err, cfg.Schema)
		}
		return set, fmt.Sprintf("the result relations in schema %s at %s (%s)", cfg.Schema, dsnHost(cfg.DSN), serverName(ctx, db)), nil
	}
}

// EmbeddedSQL runs the shared SQL on the embedded SQLite over inputs: the SQL
// side of Run without a DSN, and of the demo.
func EmbeddedSQL(ctx context.Context, inputs []record.Input, p contract.Params, log *slog.Logger) (results.Set, error) {
	e, err := sqlengine.OpenSQLite(ctx, log)
	if err != nil {
		return results.Set{}, err
	}
	defer e.Close()
	return e.Compute(ctx, inputs, p)
}

// dsnHost is the DSN without its password, for people.
func dsnHost(dsn string) string {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return "(unparsable DSN)"
	}
	return fmt.Sprintf("%s:%d/%s", cfg.Host, cfg.Port, cfg.Database)
}

// serverName says which server answered: RisingWave's version() names it.
func serverName(ctx context.Context, db *sql.DB) string {
	var v string
	if err := db.QueryRowContext(ctx, "SELECT version()").Scan(&v); err != nil {
		return "server version unknown"
	}
	if len(v) > 60 {
		v = v[:60] + "..."
	}
	return v
}

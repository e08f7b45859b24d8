package sqlengine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/northpole-workshop/northpole/internal/contract"
	"github.com/northpole-workshop/northpole/internal/contractsql"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
)

// Dialect names a batch engine.
type Dialect string

const (
	Postgres Dialect = "postgres"
	SQLite   Dialect = "sqlite"
)

// Engine is one batch SQL engine holding np_input and the contract's
// relations. It is not safe for concurrent use.
type Engine struct {
	db      *sql.DB
	dialect Dialect
	// schema qualifies every name the engine creates or reads ("main" for
	// SQLite). The shared text itself is unqualified: on PostgreSQL the
	// connection's search_path is set to schema.
	schema string
	log    *slog.Logger
	// cleanup removes what the engine keeps beside its connection (the
	// embedded SQLite's folder); nil when nothing.
	cleanup func() error

	mu       sync.Mutex
	executed []string
}

var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// ValidSchema reports why s cannot be used as a schema name, or nil. Names are
// restricted to lowercase identifiers so that they never need quoting.
func ValidSchema(s string) error {
	if !schemaName.MatchString(s) {
		return fmt.Errorf("schema %q: want a lowercase SQL identifier ([a-z_][a-z0-9_]*, at most 63 characters)", s)
	}
	return nil
}

// Dialect is the engine's dialect.
func (e *Engine) Dialect() Dialect { return e.dialect }

// DB is the engine's connection pool.
func (e *Engine) DB() *sql.DB { return e.db }

// Close closes the connection pool and removes the engine's files.
func (e *Engine) Close() error {
	err := e.db.Close()
	if e.cleanup != nil {
		err = errors.Join(err, e.cleanup())
	}
	return err
}

// exec runs stmt. The embedded SQLite's driver panics when SQLite runs out
// of its memory; that becomes an error here, which names the limit, so
// that a caller can say which input was too large instead of crashing.
func (e *Engine) exec(ctx context.Context, stmt string) (err error) {
	if e.dialect == SQLite {
		defer func() {
			if r := recover(); r != nil {
				oom, ok := r.(error)
				if !ok || !strings.Contains(oom.Error(), "out of memory") {
					panic(r)
				}
				err = fmt.Errorf("%w: the embedded SQLite ran out of its memory (%d MiB); "+
					"compare on PostgreSQL (compare --sql DSN) for inputs this large", oom, sqliteMemory>>20)
			}
		}()
	}
	_, err = e.db.ExecContext(ctx, stmt)
	return err
}

// Executed returns every statement the engine has run that creates a relation
// of the shared text, in order. The drift test compares them across engines.
func (e *Engine) Executed() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.executed)
}

// Compute loads inputs, builds the contract's relations for p and reads the
// five result sets: the whole batch run of one engine. The SQL reports
// unpacked and spare rows only for closed windows, so the result is to be
// compared with contract.Compute in mode contract.ClosedOnly.
func (e *Engine) Compute(ctx context.Context, inputs []record.Input, p contract.Params) (results.Set, error) {
	if err := e.Load(ctx, inputs); err != nil {
		return results.Set{}, err
	}
	if err := e.Build(ctx, p); err != nil {
		return results.Set{}, err
	}
	return ReadResults(ctx, e.db, e.schema)
}

// Load (re)creates np_input and fills it with the normalized inputs. Any
// relation of an earlier Build is dropped first.
func (e *Engine) Load(ctx context.Context, inputs []record.Input) error {
	began := time.Now()
	if err := e.dropAll(ctx); err != nil {
		return err
	}
	if _, err := e.db.ExecContext(ctx, e.inputDDL()); err != nil {
		return fmt.Errorf("%s: create %s: %w", e.dialect, contractsql.Input, err)
	}
	rows := make([]Row, len(inputs))
	for i, in := range inputs {
		if !in.Stream.Valid() {
			return fmt.Errorf("%s: load input %s/%d@%d: stream %q is neither %q nor %q",
				e.dialect, in.Topic, in.Partition, in.Offset, in.Stream, record.Toys, record.Boxes)
		}
		rows[i] = Normalize(in)
	}
	var err error
	if e.dialect == Postgres {
		err = e.copyPostgres(ctx, rows)
	} else {
		err = e.insertRows(ctx, rows)
	}
	if err != nil {
		return fmt.Errorf("%s: load %d records into %s: %w", e.dialect, len(rows), contractsql.Input, err)
	}
	e.log.Debug("loaded inputs", "engine", e.dialect, "records", len(rows), "took", time.Since(began))
	return nil
}

// Build creates every relation of the shared text, in order, as a table made
// from its SELECT: the batch counterpart of RisingWave's materialized views.
// Materializing each step keeps the cost of reading the five results linear
// in the steps, instead of re-running the whole chain for each one.
func (e *Engine) Build(ctx context.Context, p contract.Params) error {
	rels, err := contractsql.Contract(p)
	if err != nil {
		return err
	}
	for _, r := range rels {
		began := time.Now()
		stmt := contractsql.CreateStatement("TABLE", r)
		if err := e.exec(ctx, stmt); err != nil {
			return fmt.Errorf("%s: create %s (shared text %s): %w", e.dialect, r.Name, contractsql.Hash(r.Body), err)
		}
		e.mu.Lock()
		e.executed = append(e.executed, stmt)
		e.mu.Unlock()
		if cols, ok := indexes[e.dialect][r.Name]; ok {
			idx := "CREATE INDEX " + r.Name + "_lookup ON " + r.Name + " " + cols
			if err := e.exec(ctx, idx); err != nil {
				return fmt.Errorf("%s: index %s: %w", e.dialect, r.Name, err)
			}
		}
		// PostgreSQL plans each step with the sizes of the tables before it,
		// and a table just created has none: it would guess one row, and
		// join np_reach's windows with every block of their size before
		// matching levels and blocks (quadratic). ANALYZE gives it the sizes.
		if e.dialect == Postgres {
			if _, err := e.db.ExecContext(ctx, "ANALYZE "+r.Name); err != nil {
				return fmt.Errorf("%s: analyze %s: %w", e.dialect, r.Name, err)
			}
		}
		e.log.Debug("built relation", "engine", e.dialect, "relation", r.Name, "took", time.Since(began))
	}
	return nil
}

// indexes are physical tuning per engine, no semantics: SQLite runs a join
// on a table without an index on its columns as a scan of that table per
// row of the other, which is quadratic in the lines and windows: the
// anti-joins of np_unpacked and np_spare (NOT EXISTS an item of the same
// rank), np_closed's joins with np_reached, np_unpacked's and np_spare's
// with np_closed, np_reach's with np_blocks and np_reached's with np_reach.
// PostgreSQL plans them as hash joins and needs none.
var indexes = map[Dialect]map[string]string{
	SQLite: {
		"np_blocks":  "(line, lvl, blk)",
		"np_reach":   "(stream, line, window_start, kpartition)",
		"np_reached": "(stream, line, window_start)",
		"np_items":   "(stream, line, window_start, rnk)",
		"np_closed":  "(line, window_start)",
	},
}

// dropAll drops np_input and every relation of the shared text, so that Load
// can be called again on the same schema.
func (e *Engine) dropAll(ctx context.Context) error {
	rels, err := contractsql.Contract(contract.Params{Window: time.Second})
	if err != nil {
		return err
	}
	names := []string{contractsql.Input}
	for _, r := range rels {
		names = append(names, r.Name)
	}
	slices.Reverse(names)
	for _, n := range names {
		// Every relation is a table here; RisingWave's are views, but an
		// Engine never touches RisingWave.
		if _, err := e.db.ExecContext(ctx, "DROP TABLE IF EXISTS "+e.qualify(n)); err != nil {
			return fmt.Errorf("%s: drop %s: %w", e.dialect, n, err)
		}
	}
	return nil
}

func (e *Engine) qualify(name string) string { return e.schema + "." + name }

func (e *Engine) inputDDL() string {
	// The columns of np_input; see Row. Types differ only where the engines
	// do: bytea/blob for ids, boolean/integer for flags.
	if e.dialect == Postgres {
		return `CREATE TABLE ` + e.qualify(contractsql.Input) + ` (
  stream text NOT NULL, kpartition bigint NOT NULL, koffset bigint NOT NULL,
  rkey text, obj boolean NOT NULL, made_at text, size text, id bytea, hb boolean NOT NULL)`
	}
	return `CREATE TABLE ` + e.qualify(contractsql.Input) + ` (
  stream TEXT NOT NULL, kpartition INTEGER NOT NULL, koffset INTEGER NOT NULL,
  rkey TEXT, obj INTEGER NOT NULL, made_at TEXT, size TEXT, id BLOB, hb INTEGER NOT NULL)`
}

var inputColumns = []string{"stream", "kpartition", "koffset", "rkey", "obj", "made_at", "size", "id", "hb"}

func (r Row) values() []any {
	var id any // a nil []byte would also mean NULL, but say it explicitly
	if r.ID != nil {
		id = r.ID
	}
	return []any{r.Stream, r.Partition, r.Offset, ptr(r.Key), r.Object, ptr(r.MadeAt), ptr(r.Size), id, r.Heartbeat}
}

func ptr(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

// insertRows loads rows with one prepared INSERT in one transaction.
func (e *Engine) insertRows(ctx context.Context, rows []Row) (err error) {
	tx, err := e.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, tx.Rollback())
		}
	}()
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO `+e.qualify(contractsql.Input)+
		` (stream, kpartition, koffset, rkey, obj, made_at, size, id, hb) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("prepare insert: %w", err)
	}
	defer stmt.Close()
	for _, r := range rows {
		if _, err := stmt.ExecContext(ctx, r.values()...); err != nil {
			return fmt.Errorf("insert %s/%d@%d: %w", r.Stream, r.Partition, r.Offset, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

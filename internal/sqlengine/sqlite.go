package sqlengine

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"log/slog"
	"regexp"
	"sync"

	"modernc.org/sqlite"
)

var registerOnce sync.Once

// registerFunctions gives SQLite the one function of the shared text it lacks:
// regexp_count(text, pattern), as in PostgreSQL 15 and RisingWave (number of
// non-overlapping matches; NULL when either argument is NULL). SQLite has no
// regular expressions of its own; Go's regexp (RE2) and PostgreSQL's and
// RisingWave's engines agree on the one pattern the text uses (ASCII
// classes, alternation, anchors), which the edge-case tests check.
func registerFunctions() {
	registerOnce.Do(func() {
		var mu sync.Mutex
		cache := map[string]*regexp.Regexp{}
		sqlite.MustRegisterDeterministicScalarFunction("regexp_count", 2,
			func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
				if args[0] == nil || args[1] == nil {
					return nil, nil
				}
				text, ok1 := args[0].(string)
				pattern, ok2 := args[1].(string)
				if !ok1 || !ok2 {
					return nil, fmt.Errorf("regexp_count: want text arguments, got %T and %T", args[0], args[1])
				}
				mu.Lock()
				re, ok := cache[pattern]
				mu.Unlock()
				if !ok {
					var err error
					if re, err = regexp.Compile(pattern); err != nil {
						return nil, fmt.Errorf("regexp_count: pattern %q: %w", pattern, err)
					}
					mu.Lock()
					cache[pattern] = re
					mu.Unlock()
				}
				return int64(len(re.FindAllStringIndex(text, -1))), nil
			})
	})
}

// OpenSQLite opens a new, empty in-memory SQLite database: no server, no cgo.
// A nil log discards the engine's log.
func OpenSQLite(ctx context.Context, log *slog.Logger) (*Engine, error) {
	registerFunctions()
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		return nil, fmt.Errorf("open embedded sqlite: %w", err)
	}
	// Each connection to ":memory:" is its own database: keep exactly one,
	// forever.
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open embedded sqlite: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Engine{db: db, dialect: SQLite, schema: "main", log: log}, nil
}

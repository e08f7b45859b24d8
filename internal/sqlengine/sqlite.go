package sqlengine

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"sync"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/driver"
)

// regexpCount is the one function of the shared text SQLite lacks:
// regexp_count(text, pattern), as in PostgreSQL 15 and RisingWave (number of
// non-overlapping matches; NULL when either argument is NULL). SQLite has no
// regular expressions of its own; Go's regexp (RE2) and PostgreSQL's and
// RisingWave's engines agree on the one pattern the text uses (ASCII
// classes, alternation, anchors), which the edge-case tests check.
type regexpCount struct {
	mu    sync.Mutex
	cache map[string]*regexp.Regexp
}

func (f *regexpCount) call(ctx sqlite3.Context, args ...sqlite3.Value) {
	if args[0].Type() == sqlite3.NULL || args[1].Type() == sqlite3.NULL {
		ctx.ResultNull()
		return
	}
	if args[0].Type() != sqlite3.TEXT || args[1].Type() != sqlite3.TEXT {
		ctx.ResultError(fmt.Errorf("regexp_count: want text arguments, got %v and %v", args[0].Type(), args[1].Type()))
		return
	}
	text, pattern := args[0].Text(), args[1].Text()
	f.mu.Lock()
	re, ok := f.cache[pattern]
	f.mu.Unlock()
	if !ok {
		var err error
		if re, err = regexp.Compile(pattern); err != nil {
			ctx.ResultError(fmt.Errorf("regexp_count: pattern %q: %w", pattern, err))
			return
		}
		f.mu.Lock()
		f.cache[pattern] = re
		f.mu.Unlock()
	}
	ctx.ResultInt64(int64(len(re.FindAllStringIndex(text, -1))))
}

// OpenSQLite opens a new, empty in-memory SQLite database: no server, no cgo
// (github.com/ncruces/go-sqlite3: SQLite's C compiled to WebAssembly, then
// translated to Go). A nil log discards the engine's log.
func OpenSQLite(ctx context.Context, log *slog.Logger) (*Engine, error) {
	fn := &regexpCount{cache: map[string]*regexp.Regexp{}}
	db, err := driver.Open(":memory:", func(c *sqlite3.Conn) error {
		return c.CreateFunction("regexp_count", 2, sqlite3.DETERMINISTIC|sqlite3.INNOCUOUS, fn.call)
	})
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

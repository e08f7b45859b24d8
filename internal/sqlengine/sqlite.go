package sqlengine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
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

// sqliteMemory bounds the embedded SQLite's memory (its WebAssembly memory,
// allocated as it grows): tables live on disk, this is for sorts, indexes
// being built and the page cache.
const sqliteMemory = 2 << 30

// OpenSQLite opens a new, empty SQLite database in a temporary folder that
// Close removes: no server, no cgo (github.com/ncruces/go-sqlite3: SQLite's
// C compiled to WebAssembly, then translated to Go). On disk rather than in
// memory, because SQLite's WebAssembly memory is bounded (sqliteMemory): with
// 40,000 lines the contract's tables alone would take most of it. A nil log discards the engine's log.
func OpenSQLite(ctx context.Context, log *slog.Logger) (*Engine, error) {
	dir, err := os.MkdirTemp("", "northpole-sqlite-")
	if err != nil {
		return nil, fmt.Errorf("open embedded sqlite: %w", err)
	}
	fn := &regexpCount{cache: map[string]*regexp.Regexp{}}
	// A scratch database: nothing to recover after a crash, so no journal
	// and no syncs; sorts and temporary tables in files too.
	dsn := "file:" + filepath.Join(dir, "contract.db") +
		"?_pragma=journal_mode(off)&_pragma=synchronous(off)&_pragma=temp_store(file)&_pragma=cache_size(-65536)"
	db, err := driver.Open(dsn, func(c *sqlite3.Conn) error {
		return c.CreateFunction("regexp_count", 2, sqlite3.DETERMINISTIC|sqlite3.INNOCUOUS, fn.call)
	})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("open embedded sqlite: %w", err), os.RemoveAll(dir))
	}
	// One connection, so that every statement sees the tables of the one
	// before without a transaction of its own.
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	cleanup := func() error { return os.RemoveAll(dir) }
	// The connection's WebAssembly memory: the driver's default, 256 MiB,
	// ran out at np_blocks with 40,000 lines and 250,000 records;
	// sqliteMemory was enough for 654,127 records of 40,000 lines.
	if err := db.PingContext(sqlite3.WithMaxMemory(ctx, sqliteMemory)); err != nil {
		return nil, errors.Join(fmt.Errorf("open embedded sqlite: %w", err), db.Close(), cleanup())
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Engine{db: db, dialect: SQLite, schema: "main", log: log, cleanup: cleanup}, nil
}

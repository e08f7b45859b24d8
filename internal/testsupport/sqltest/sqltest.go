// Package sqltest runs the contract's SQL on every batch engine and holds
// the result against the reference, for the SQL tests of every layer.
package sqltest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/contract"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
	"github.com/northpole-workshop/northpole/internal/sqlengine"
	"github.com/northpole-workshop/northpole/internal/testsupport/testpostgres"
)

// OpenSQLite opens an embedded engine that lives until t ends.
func OpenSQLite(t testing.TB) *sqlengine.Engine {
	t.Helper()
	e, err := sqlengine.OpenSQLite(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// OpenPostgres opens a PostgreSQL engine in a schema of its own, dropped when
// t ends. It skips t without $NORTHPOLE_TEST_POSTGRES (fails it in CI).
func OpenPostgres(t testing.TB) *sqlengine.Engine {
	t.Helper()
	dsn := testpostgres.DSN(t)
	schema := testpostgres.Schema("np_test")
	e, err := sqlengine.OpenPostgres(context.Background(), dsn, schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sqlengine.DropSchema(context.Background(), e.DB(), schema); err != nil {
			t.Errorf("clean up: %v", err)
		}
		e.Close()
	})
	return e
}

// Engines are the batch engines every SQL test runs on.
var Engines = []struct {
	Name string
	Open func(testing.TB) *sqlengine.Engine
}{
	{"sqlite", OpenSQLite},
	{"postgres", OpenPostgres},
}

// EachEngine runs f as a subtest per engine. Without PostgreSQL only its
// subtest skips.
func EachEngine(t *testing.T, f func(t *testing.T, e *sqlengine.Engine)) {
	t.Helper()
	for _, eng := range Engines {
		t.Run(eng.Name, func(t *testing.T) {
			// The engines share nothing: run them side by side.
			t.Parallel()
			f(t, eng.Open(t))
		})
	}
}

// RunAndCompare computes inputs on e and checks the result against the
// reference with ClosedOnly (what the SQL computes). It returns the SQL result.
func RunAndCompare(t *testing.T, e *sqlengine.Engine, inputs []record.Input, w, l time.Duration) results.Set {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := contract.Params{Window: w, Lateness: l}
	got, err := e.Compute(ctx, inputs, p)
	if err != nil {
		t.Fatal(err)
	}
	want := contract.Compute(inputs, p, contract.ClosedOnly)
	if d := Differences(got, want); len(d) > 0 {
		t.Errorf("%s differs from the reference (W=%v L=%v, %d inputs):\n  %s", e.Dialect(), w, l, len(inputs), strings.Join(d, "\n  "))
	}
	return got
}

// Differences are the rows in which got differs from want, and the dead
// letters whose reasons differ: a row for row comparison, dead reasons included
// (results.Compare leaves them out, as engines are compared in production;
// here the SQL must also use the same reason as record.Parse).
func Differences(got, want results.Set) []string {
	var out []string
	for _, d := range results.Compare(got, want) {
		out = append(out, fmt.Sprintf("%s: only SQL %v, only reference %v", d.Set, d.OnlyA, d.OnlyB))
	}
	reasons := func(s results.Set) map[string]string {
		m := map[string]string{}
		for _, d := range s.Dead {
			m[fmt.Sprintf("%s/%d@%d", d.Stream, d.Partition, d.Offset)] = d.Reason
		}
		return m
	}
	g, w := reasons(got), reasons(want)
	for _, k := range slices.Sorted(maps.Keys(g)) {
		if wr, ok := w[k]; ok && wr != g[k] {
			out = append(out, fmt.Sprintf("dead %s: SQL reason %q, reference %q", k, g[k], wr))
		}
	}
	return out
}

// IDReuse counts, in s, the late rows whose (stream, size, id) has another
// late row, and the (stream, size, id)s that are items (packed, unpacked or
// spare) in more than one window: outcomes of the contract's second version,
// where ids are unique within a window only and late comes before duplicate.
func IDReuse(s results.Set) (lateCopies, reused int) {
	type sid struct{ stream, size, id string }
	lates := map[sid]int{}
	for _, l := range s.Late {
		lates[sid{l.Stream, l.Size, l.ID}]++
	}
	for _, n := range lates {
		if n > 1 {
			lateCopies += n
		}
	}
	windows := map[sid]map[string]bool{}
	item := func(k sid, w string) {
		if windows[k] == nil {
			windows[k] = map[string]bool{}
		}
		windows[k][w] = true
	}
	for _, p := range s.Packed {
		item(sid{string(record.Toys), p.Size, p.ToyID}, p.WindowStart)
		item(sid{string(record.Boxes), p.Size, p.BoxID}, p.WindowStart)
	}
	for _, u := range s.Unpacked {
		item(sid{string(record.Toys), u.Size, u.ToyID}, u.WindowStart)
	}
	for _, b := range s.Spare {
		item(sid{string(record.Boxes), b.Size, b.BoxID}, b.WindowStart)
	}
	for _, ws := range windows {
		if len(ws) > 1 {
			reused++
		}
	}
	return lateCopies, reused
}

package sqlengine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/contract"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
	"github.com/northpole-workshop/northpole/internal/sqlengine"
	"github.com/northpole-workshop/northpole/internal/testsupport/plans"
	"github.com/northpole-workshop/northpole/internal/testsupport/testpostgres"
)

// openSQLite opens an embedded engine that lives until t ends.
func openSQLite(t testing.TB) *sqlengine.Engine {
	t.Helper()
	e, err := sqlengine.OpenSQLite(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// openPostgres opens a PostgreSQL engine in a schema of its own, dropped when
// t ends. It skips t without $NORTHPOLE_TEST_POSTGRES (fails it in CI).
func openPostgres(t testing.TB) *sqlengine.Engine {
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

// engines are the batch engines every SQL test runs on.
var engines = []struct {
	name string
	open func(testing.TB) *sqlengine.Engine
}{
	{"sqlite", openSQLite},
	{"postgres", openPostgres},
}

// eachEngine runs f as a subtest per engine. Without PostgreSQL only its
// subtest skips.
func eachEngine(t *testing.T, f func(t *testing.T, e *sqlengine.Engine)) {
	t.Helper()
	for _, eng := range engines {
		t.Run(eng.name, func(t *testing.T) {
			// The engines share nothing: run them side by side.
			t.Parallel()
			f(t, eng.open(t))
		})
	}
}

// runAndCompare computes inputs on e and checks the result against the
// reference with ClosedOnly (what the SQL computes). It returns the SQL result.
func runAndCompare(t *testing.T, e *sqlengine.Engine, inputs []record.Input, w, l time.Duration) results.Set {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := contract.Params{Window: w, Lateness: l}
	got, err := e.Compute(ctx, inputs, p)
	if err != nil {
		t.Fatal(err)
	}
	want := contract.Compute(inputs, p, contract.ClosedOnly)
	if d := plans.Differences(got, want); len(d) > 0 {
		t.Errorf("%s differs from the reference (W=%v L=%v, %d inputs):\n  %s", e.Dialect(), w, l, len(inputs), strings.Join(d, "\n  "))
	}
	return got
}

package sqlengine_test

import (
	"context"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/contract"
	"github.com/northpole-workshop/northpole/internal/contractsql"
	"github.com/northpole-workshop/northpole/internal/sqlengine"
	"github.com/northpole-workshop/northpole/internal/testsupport/sqltest"
	"github.com/northpole-workshop/northpole/risingwave"
)

// TestEnginesRunTheSameText: what each engine actually executed, relation by
// relation, is the shared text, and the same for SQLite, PostgreSQL and the
// RisingWave script. Any per-engine rewrite of the text fails here.
func TestEnginesRunTheSameText(t *testing.T) {
	p := contract.Params{Window: 3 * time.Second, Lateness: 1500 * time.Millisecond}
	want, err := contractsql.Contract(p)
	if err != nil {
		t.Fatal(err)
	}
	o := risingwave.DefaultScriptOptions()
	o.Params = p
	script, err := risingwave.Script(o)
	if err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T, engine string, got []contractsql.Relation) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s created %d relations of the shared text, want %d", engine, len(got), len(want))
		}
		for i := range want {
			if got[i].Name != want[i].Name || contractsql.Hash(got[i].Body) != contractsql.Hash(want[i].Body) {
				t.Errorf("%s relation %d: %s with text %s, want %s with text %s",
					engine, i, got[i].Name, contractsql.Hash(got[i].Body), want[i].Name, contractsql.Hash(want[i].Body))
			}
		}
	}
	check(t, "risingwave script", risingwave.ScriptRelations(script))

	// Each engine equal to the shared text means all equal to each other.
	sqltest.EachEngine(t, func(t *testing.T, e *sqlengine.Engine) {
		if _, err := e.Compute(context.Background(), nil, p); err != nil {
			t.Fatal(err)
		}
		var rels []contractsql.Relation
		for _, stmt := range e.Executed() {
			name, body, ok := contractsql.SplitCreate(stmt)
			if !ok {
				t.Fatalf("%s executed a statement not made by contractsql.CreateStatement: %.80q", e.Dialect(), stmt)
			}
			rels = append(rels, contractsql.Relation{Name: name, Body: body})
		}
		check(t, string(e.Dialect()), rels)
	})
}

package risingwave

import (
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/contractsql"
)

var update = flag.Bool("update", false, "rewrite risingwave.sql from the embedded SQL")

// TestScriptRunsTheSharedText: the RisingWave script creates every relation
// of the shared text, in order, with the text unchanged.
func TestScriptRunsTheSharedText(t *testing.T) {
	o := DefaultScriptOptions()
	o.Window, o.Lateness = 2*time.Second, 0
	script, err := Script(o)
	if err != nil {
		t.Fatal(err)
	}
	want, err := contractsql.Contract(o.Params)
	if err != nil {
		t.Fatal(err)
	}
	got := ScriptRelations(script)
	if len(got) != len(want) {
		t.Fatalf("the script creates %d contract relations, the shared text has %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Name != want[i].Name || contractsql.Hash(got[i].Body) != contractsql.Hash(want[i].Body) {
			t.Errorf("relation %d: script has %s (%s), shared text %s (%s)", i, got[i].Name, contractsql.Hash(got[i].Body), want[i].Name, contractsql.Hash(want[i].Body))
		}
	}
	for _, s := range []string{"FORMAT PLAIN ENCODE BYTES", "INCLUDE partition AS kpartition", "INCLUDE offset AS koffset",
		"topic = 'toys'", "properties.bootstrap.server = 'localhost:9092'", "CREATE MATERIALIZED VIEW np_input AS",
		"psql -v ON_ERROR_STOP=1 "} {
		if !strings.Contains(script, s) {
			t.Errorf("the script lacks %q", s)
		}
	}
}

// TestStatements: the default script splits into its two sources, np_input
// and one view per contract relation, each a statement without comments or
// semicolon, in the order the script creates them.
func TestStatements(t *testing.T) {
	script, err := Script(DefaultScriptOptions())
	if err != nil {
		t.Fatal(err)
	}
	rels, err := contractsql.Contract(DefaultScriptOptions().Params)
	if err != nil {
		t.Fatal(err)
	}
	stmts := Statements(script)
	var want []string
	for _, n := range []string{"SOURCE np_toys_source", "SOURCE np_boxes_source", MaterializedView + " " + contractsql.Input} {
		want = append(want, "CREATE "+n+" ")
	}
	for _, r := range rels {
		want = append(want, "CREATE "+MaterializedView+" "+r.Name+" AS")
	}
	if len(stmts) != len(want) {
		t.Fatalf("%d statements, want %d", len(stmts), len(want))
	}
	for i, s := range stmts {
		if !strings.HasPrefix(s, want[i]) || strings.HasSuffix(s, ";") {
			t.Errorf("statement %d begins %.60q, want %q and no final semicolon", i, s, want[i])
		}
	}
}

func TestScriptRefusesQuotes(t *testing.T) {
	o := DefaultScriptOptions()
	o.ToysTopic = "toys'; DROP TABLE x; --"
	if _, err := Script(o); err == nil {
		t.Error("a topic with a quote was accepted")
	}
}

// TestCheckedInScriptIsCurrent: risingwave.sql is the script for the
// defaults; it must be regenerated when the SQL changes:
//
//	go test ./risingwave -run TestCheckedInScriptIsCurrent -update
func TestCheckedInScriptIsCurrent(t *testing.T) {
	want, err := Script(DefaultScriptOptions())
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("risingwave.sql", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("risingwave.sql")
	if err != nil {
		t.Fatalf("read risingwave.sql: %v (generate it with -update)", err)
	}
	if string(got) != want {
		t.Error("risingwave.sql is stale: run go test ./risingwave -run TestCheckedInScriptIsCurrent -update")
	}
}

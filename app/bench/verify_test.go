package bench

import (
	"bytes"
	"strings"
	"testing"
)

// TestWriteChecks: every checked run says what its check found, a run not
// checked says nothing, and a run that differs is named with its counts.
func TestWriteChecks(t *testing.T) {
	rs := []Result{
		{Variant: Variant{Name: "real"}, Round: 1, Check: &Verification{Equal: true, Rows: 1200}},
		{Variant: Variant{Name: "hop"}, Round: 1},
		{Variant: Variant{Name: "real"}, Round: 2, Check: &Verification{Differences: 2, Conflicts: 1, Rows: 1200}},
	}
	var out bytes.Buffer
	writeChecks(&out, rs)
	want := "round 1: results of real against the batch reference: equal, 1200 rows\n" +
		"round 2: results of real against the batch reference: DIFFERS (2 rows, 1 conflicts), 1200 rows\n"
	if out.String() != want {
		t.Errorf("checks:\n%s\nwant:\n%s", out.String(), want)
	}
	if err := rs[2].Check.mismatch(); err == nil || !strings.Contains(err.Error(), "2 rows differ, 1 keys") {
		t.Errorf("mismatch of a differing run: %v", err)
	}
	if err := rs[0].Check.mismatch(); err != nil {
		t.Errorf("mismatch of an equal run: %v", err)
	}
}

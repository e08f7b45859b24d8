package main

import (
	"strings"
	"testing"

	"github.com/northpole-workshop/northpole/internal/demo"
	"github.com/northpole-workshop/northpole/internal/results"
)

// TestPrintDiffs: rows that differ from the reference are printed as their
// JSON, not as Go values.
func TestPrintDiffs(t *testing.T) {
	goka := results.Set{Packed: []results.Packed{{ToyID: "t1", BoxID: "b1", Size: "M", WindowStart: "2026-12-24T10:00:00Z"}}}
	ref := results.Set{Dead: []results.Dead{{Stream: "toys", Partition: 2, Offset: 9, Reason: "no id"}}}
	r := demo.Report{Reference: results.Compare(goka, ref)}
	var b strings.Builder
	printDiffs(&b, r)
	out := b.String()
	for _, want := range []string{
		"packed: 1 row only in Goka, 0 only in the reference",
		`only in goka:      {"toy_id":"t1","box_id":"b1","size":"M","window_start":"2026-12-24T10:00:00Z"}`,
		`only in reference: {"stream":"toys","partition":2,"offset":9,"reason":"no id"}`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("printDiffs lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "ToyID:") || strings.Contains(out, "{Stream:") {
		t.Errorf("printDiffs printed Go values:\n%s", out)
	}
}

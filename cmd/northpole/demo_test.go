package main

import (
	"strings"
	"testing"

	"github.com/northpole-workshop/northpole/internal/app/demo"
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

// TestPrintDiffsOfReusedIDsAndLateCopies: a toy id packed in two windows is
// two rows, each printed with its window; two late copies of one id are two
// rows, each printed with its partition and offset.
func TestPrintDiffsOfReusedIDsAndLateCopies(t *testing.T) {
	goka := results.Set{
		Packed: []results.Packed{
			{ToyID: "t1", BoxID: "b1", Size: "M", WindowStart: "2026-12-24T10:00:00Z"},
			{ToyID: "t1", BoxID: "b2", Size: "M", WindowStart: "2026-12-24T10:00:10Z"},
		},
		Late: []results.Late{
			{Stream: "toys", Partition: 1, Offset: 7, ID: "x", Size: "M", MadeAt: "2026-12-24T10:00:01Z"},
			{Stream: "toys", Partition: 1, Offset: 9, ID: "x", Size: "M", MadeAt: "2026-12-24T10:00:02Z"},
		},
	}
	ref := results.Set{Packed: goka.Packed[:1], Late: goka.Late[:1]}
	var b strings.Builder
	printDiffs(&b, demo.Report{Reference: results.Compare(goka, ref)})
	out := b.String()
	for _, want := range []string{
		"packed: 1 row only in Goka, 0 only in the reference",
		`only in goka:      {"toy_id":"t1","box_id":"b2","size":"M","window_start":"2026-12-24T10:00:10Z"}`,
		"late: 1 row only in Goka, 0 only in the reference",
		`only in goka:      {"stream":"toys","partition":1,"offset":9,"id":"x","size":"M","made_at":"2026-12-24T10:00:02Z"}`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("printDiffs lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, `"offset":7`) || strings.Contains(out, `"box_id":"b1"`) {
		t.Errorf("printDiffs printed a row both sides have:\n%s", out)
	}
}

package demo_test

import (
	"strings"
	"testing"

	"github.com/northpole-workshop/northpole/app/demo"
	"github.com/northpole-workshop/northpole/internal/results"
)

// TestWriteDiffs: rows that differ from the reference are printed as their
// JSON, not as Go values.
func TestWriteDiffs(t *testing.T) {
	goka := results.Set{Packed: []results.Packed{{ToyID: "t1", BoxID: "b1", Line: "M", Size: "M", WindowStart: "2026-12-24T10:00:00Z"}}}
	ref := results.Set{Dead: []results.Dead{{Stream: "toys", Partition: 2, Offset: 9, Reason: "no id"}}}
	r := demo.Result{Reference: results.Compare(goka, ref)}
	var b strings.Builder
	r.WriteDiffs(&b, 10, "--out DIR writes every row")
	out := b.String()
	for _, want := range []string{
		"packed: 1 row only in Goka, 0 only in the reference",
		`only in goka:      {"toy_id":"t1","box_id":"b1","line":"M","size":"M","window_start":"2026-12-24T10:00:00Z"}`,
		`only in reference: {"stream":"toys","partition":2,"offset":9,"reason":"no id"}`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("WriteDiffs lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "ToyID:") || strings.Contains(out, "{Stream:") {
		t.Errorf("WriteDiffs printed Go values:\n%s", out)
	}
}

// TestWriteDiffsOfReusedIDsAndLateCopies: a toy id packed in two windows is
// two rows, each printed with its window; two late copies of one id are two
// rows, each printed with its partition and offset.
func TestWriteDiffsOfReusedIDsAndLateCopies(t *testing.T) {
	goka := reusedIDsAndLateCopies()
	ref := results.Set{Packed: goka.Packed[:1], Late: goka.Late[:1]}
	var b strings.Builder
	demo.Result{Reference: results.Compare(goka, ref)}.WriteDiffs(&b, 10, "--out DIR writes every row")
	out := b.String()
	for _, want := range []string{
		"packed: 1 row only in Goka, 0 only in the reference",
		`only in goka:      {"toy_id":"t1","box_id":"b2","line":"M","size":"M","window_start":"2026-12-24T10:00:10Z"}`,
		"late: 1 row only in Goka, 0 only in the reference",
		`only in goka:      {"stream":"toys","partition":1,"offset":9,"id":"x","line":"M","size":"M","made_at":"2026-12-24T10:00:02Z"}`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("WriteDiffs lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, `"offset":7`) || strings.Contains(out, `"box_id":"b1"`) {
		t.Errorf("WriteDiffs printed a row both sides have:\n%s", out)
	}
}

// TestWriteDiffsCuts: past maxRows a side's rows are counted, with the hint
// that says how to see them.
func TestWriteDiffsCuts(t *testing.T) {
	goka := results.Set{Spare: []results.Spare{{BoxID: "b1", Line: "S", Size: "S"}, {BoxID: "b2", Size: "S"}, {BoxID: "b3", Size: "S"}}}
	var b strings.Builder
	demo.Result{Reference: results.Compare(goka, results.Set{})}.WriteDiffs(&b, 2, "see all")
	if out := b.String(); strings.Count(out, "only in goka:") != 2 || !strings.Contains(out, "  ... 1 more only in goka (see all)\n") {
		t.Errorf("two rows and a count of the third wanted:\n%s", out)
	}
}

// TestSummaryWriteText: the summary's table has a row per size class, the
// dead letters without a size and all; the verdicts follow.
func TestSummaryWriteText(t *testing.T) {
	s := demo.Summary{
		Inputs: map[string]demo.StreamInputs{"toys": {Records: 10, Heartbeats: 4, Bad: 1}, "boxes": {Records: 9, Heartbeats: 4, Duplicates: 2}},
		BySize: map[string]results.Counts{"M": {Packed: 5, Dead: 1}}, DeadWithoutSize: 2,
		Results: results.Counts{Packed: 5, Dead: 3}, DeadBy: map[string]int{"malformed json": 2, "duplicate": 1},
		Reference: "equal", SQLCheck: "different", Seconds: 1.5,
	}
	var b strings.Builder
	s.WriteText(&b, "here")
	out := b.String()
	for _, want := range []string{
		"Packed on here in 1.5s: 10 toys + 4 heartbeats and 9 boxes + 4 heartbeats read back from Kafka; among the toys and boxes 1 bad record and 2 duplicates (dead letters).",
		"no size", "dead letters: 3 (duplicate 1, malformed json 2)",
		"reference check: the Goka results equal", "SQL check: the contract's SQL on the embedded SQLite DIFFERS",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

package demo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/app/demo"
	"github.com/northpole-workshop/northpole/app/harness"
	"github.com/northpole-workshop/northpole/internal/results"
	"github.com/northpole-workshop/northpole/producers"
)

// TestFreshPrefix: the prefix of a demo on a given Kafka is one the harness
// takes, and demos a millisecond apart get different ones.
func TestFreshPrefix(t *testing.T) {
	now := time.Date(2026, 12, 24, 23, 59, 59, 999_000_000, time.FixedZone("CET", 3600))
	p := demo.FreshPrefix(now)
	if p != "demo-20261224-225959.999" {
		t.Errorf("FreshPrefix = %q, want the UTC time to the ms", p)
	}
	if err := harness.ValidPrefix(p); err != nil {
		t.Error(err)
	}
	if demo.FreshPrefix(now.Add(time.Millisecond)) == p {
		t.Error("two demos a millisecond apart share their topics")
	}
}

// TestRun: the demo on its in-process Kafka equals the reference and the
// embedded SQL, the sleigh holds every packed pair, and WriteFiles writes the
// same rows under goka/ and sql/.
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := harness.DefaultConfig()
	c.Toys.Count, c.Boxes.Count = 300, 300
	for _, e := range []*producers.Config{&c.Toys, &c.Boxes} {
		e.Disorder, e.LateRate, e.DupRate, e.BadRate = 2*time.Second, 0.02, 0.02, 0.02
	}
	d, err := demo.New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Where() != "in-process Kafka (kfake)" {
		t.Errorf("Where() = %q", d.Where())
	}
	r, err := d.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Reference) > 0 || !r.SQLComparison.Equal || r.Summary.Reference != "equal" || r.Summary.SQLCheck != "equal" {
		t.Errorf("the demo's checks: reference %v, SQL %+v", r.Reference, r.SQLComparison.Differences)
	}
	s := r.Summary
	if toys := s.Inputs["toys"]; toys.Records != 300 || toys.Records+toys.Heartbeats != len(r.Run.Toys) || toys.Bad == 0 ||
		s.Results.Packed != len(r.Run.Goka.Packed) || s.Results.Packed < 10 || s.Results.Dead == 0 {
		t.Errorf("summary %+v", s)
	}
	dead := s.DeadWithoutSize
	for _, c := range s.BySize {
		dead += c.Dead
	}
	if dead != s.Results.Dead || s.DeadWithoutSize == s.Results.Dead {
		t.Errorf("dead letters: %d in all, %d by size and without one (%d without)", s.Results.Dead, dead, s.DeadWithoutSize)
	}
	m, _, err := d.FinishSleigh(ctx, len(r.Run.Goka.Packed))
	if err != nil || m.Pairs != len(r.Run.Goka.Packed) {
		t.Errorf("sleigh: %d pairs, %v; want %d", m.Pairs, err, len(r.Run.Goka.Packed))
	}
	dir := t.TempDir()
	if err := demo.WriteFiles(dir, r); err != nil {
		t.Fatal(err)
	}
	for _, set := range results.SetNames {
		g, err := os.ReadFile(filepath.Join(dir, "goka", set+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		s, err := os.ReadFile(filepath.Join(dir, "sql", set+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		gl, sl := strings.Split(string(g), "\n"), strings.Split(string(s), "\n")
		if set == "dead" {
			gl = deadPositions(t, g)
			sl = deadPositions(t, s)
		}
		slices.Sort(gl)
		slices.Sort(sl)
		if !slices.Equal(gl, sl) {
			t.Errorf("%s: goka/ and sql/ files differ (%d and %d lines)", set, len(gl), len(sl))
		}
		if set == "packed" && len(sl) < 10 {
			t.Errorf("sql/packed.jsonl has %d lines: the demo packed almost nothing", len(sl))
		}
	}
	// goka/dead.jsonl holds the dead letters as on their topic: the
	// reason's detail and the raw record too.
	g, err := os.ReadFile(filepath.Join(dir, "goka", "dead.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	withDetail, withValue := 0, 0
	for line := range bytes.Lines(g) {
		var dl struct {
			Detail      string
			Value       *string
			ValueBase64 []byte `json:"value_base64"`
		}
		if err := json.Unmarshal(line, &dl); err != nil {
			t.Fatal(err)
		}
		if dl.Detail != "" {
			withDetail++
		}
		if dl.Value != nil || dl.ValueBase64 != nil {
			withValue++
		}
	}
	if withDetail == 0 || withValue != len(r.Run.Goka.Dead) {
		t.Errorf("goka/dead.jsonl: %d of %d dead letters with a detail, %d with the raw value", withDetail, len(r.Run.Goka.Dead), withValue)
	}
	for _, f := range []string{"input/toys.jsonl", "input/boxes.jsonl", "summary.json"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestWriteFilesKeepsEveryRow: goka/ and sql/ hold a row per result row,
// a toy id packed in two windows as two rows with their windows, and two
// late copies of one id as two rows with their partitions and offsets.
func TestWriteFilesKeepsEveryRow(t *testing.T) {
	set := reusedIDsAndLateCopies()
	r := demo.Result{SQL: set}
	r.Run.Goka = set
	dir := t.TempDir()
	if err := demo.WriteFiles(dir, r); err != nil {
		t.Fatal(err)
	}
	for _, side := range []string{"goka", "sql"} {
		for file, want := range map[string][]string{
			"packed.jsonl": {
				`{"toy_id":"t1","box_id":"b1","line":"M","size":"M","window_start":"2026-12-24T10:00:00Z"}`,
				`{"toy_id":"t1","box_id":"b2","line":"M","size":"M","window_start":"2026-12-24T10:00:10Z"}`,
			},
			"late.jsonl": {
				`{"stream":"toys","partition":1,"offset":7,"id":"x","line":"M","size":"M","made_at":"2026-12-24T10:00:01Z"}`,
				`{"stream":"toys","partition":1,"offset":9,"id":"x","line":"M","size":"M","made_at":"2026-12-24T10:00:02Z"}`,
			},
		} {
			b, err := os.ReadFile(filepath.Join(dir, side, file))
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
			for i := range got {
				got[i] = canonJSON(t, got[i])
			}
			for i := range want {
				want[i] = canonJSON(t, want[i])
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s/%s:\n  %s\nwant\n  %s", side, file, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
		}
	}
}

// TestNewRefusesBadConfig: a configuration that cannot work is refused
// before anything runs, and it is not a StartError.
func TestNewRefusesBadConfig(t *testing.T) {
	c := harness.DefaultConfig()
	c.Packer.Partitions = 0
	_, err := demo.New(c, nil)
	if err == nil || !strings.Contains(err.Error(), "partitions") {
		t.Fatalf("New with 0 partitions: %v", err)
	}
	var se *demo.StartError
	if errors.As(err, &se) {
		t.Errorf("a configuration error is a StartError: %v", err)
	}
	c = harness.DefaultConfig()
	c.Toys.Count, c.Boxes.Count = 0, -1
	c.Packer.Window = 0
	_, err = demo.New(c, nil)
	for _, want := range []string{"demo: toys must be at least 1, got 0", "demo: boxes must be at least 1, got -1", "window must be positive"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New with no toys, no boxes and no window: %v, want it to say %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "count and duration") {
		t.Errorf("the demo's counts are said twice, once as the elves' count or duration: %v", err)
	}
}

// canonJSON is the JSON document line with its members in one order.
func canonJSON(t *testing.T, line string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(line), &v); err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// deadPositions are the dead rows of a dead.jsonl as "stream/partition@offset
// reason" lines: what the packer's dead letters and the SQL's rows share.
func deadPositions(t *testing.T, jsonl []byte) []string {
	t.Helper()
	var out []string
	for line := range bytes.Lines(jsonl) {
		var d struct {
			Stream    string `json:"stream"`
			Partition int32  `json:"partition"`
			Offset    int64  `json:"offset"`
			Reason    string `json:"reason"`
		}
		if err := json.Unmarshal(line, &d); err != nil {
			t.Fatalf("dead.jsonl line %q: %v", line, err)
		}
		out = append(out, fmt.Sprintf("%s/%d@%d %s", d.Stream, d.Partition, d.Offset, d.Reason))
	}
	slices.Sort(out)
	return out
}

// reusedIDsAndLateCopies is a result set with a toy id packed in two
// windows and two late copies of one id.
func reusedIDsAndLateCopies() results.Set {
	return results.Set{
		Packed: []results.Packed{
			{ToyID: "t1", BoxID: "b1", Line: "M", Size: "M", WindowStart: "2026-12-24T10:00:00Z"},
			{ToyID: "t1", BoxID: "b2", Line: "M", Size: "M", WindowStart: "2026-12-24T10:00:10Z"},
		},
		Late: []results.Late{
			{Stream: "toys", Partition: 1, Offset: 7, ID: "x", Line: "M", Size: "M", MadeAt: "2026-12-24T10:00:01Z"},
			{Stream: "toys", Partition: 1, Offset: 9, ID: "x", Line: "M", Size: "M", MadeAt: "2026-12-24T10:00:02Z"},
		},
	}
}

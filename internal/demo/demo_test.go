package demo_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/compare"
	"github.com/northpole-workshop/northpole/internal/demo"
	"github.com/northpole-workshop/northpole/internal/pipeline"
	"github.com/northpole-workshop/northpole/producers"
)

// TestRun: the demo on its in-process Kafka equals the reference and the
// embedded SQL, the sleigh holds every packed pair, and WriteFiles writes the
// same rows under goka/ and sql/.
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := pipeline.DefaultConfig()
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
	if !r.Equal() || r.Summary.Reference != "equal" || r.Summary.SQLCheck != "equal" {
		t.Errorf("the demo's checks: reference %v, SQL %+v", r.Reference, r.SQLComparison.Differences)
	}
	if s := r.Summary; s.Inputs["toys"] != len(r.Run.Toys) || s.Results.Packed != len(r.Run.Goka.Packed) || s.Results.Packed < 10 || s.Results.Dead == 0 {
		t.Errorf("summary %+v", s)
	}
	m, _, err := d.FinishSleigh(ctx, len(r.Run.Goka.Packed))
	if err != nil || m.Pairs != len(r.Run.Goka.Packed) {
		t.Errorf("sleigh: %d pairs, %v; want %d", m.Pairs, err, len(r.Run.Goka.Packed))
	}
	dir := t.TempDir()
	if err := demo.WriteFiles(dir, r); err != nil {
		t.Fatal(err)
	}
	for _, set := range compare.SetNames {
		g, err := os.ReadFile(filepath.Join(dir, "goka", set+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		s, err := os.ReadFile(filepath.Join(dir, "sql", set+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		gl, sl := strings.Split(string(g), "\n"), strings.Split(string(s), "\n")
		slices.Sort(gl)
		slices.Sort(sl)
		if !slices.Equal(gl, sl) {
			t.Errorf("%s: goka/ and sql/ files differ (%d and %d lines)", set, len(gl), len(sl))
		}
		if set == "packed" && len(sl) < 10 {
			t.Errorf("sql/packed.jsonl has %d lines: the demo packed almost nothing", len(sl))
		}
	}
	for _, f := range []string{"input/toys.jsonl", "input/boxes.jsonl", "summary.json"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestNewRefusesBadConfig: a configuration that cannot work is refused
// before anything runs, and it is not a StartError.
func TestNewRefusesBadConfig(t *testing.T) {
	c := pipeline.DefaultConfig()
	c.Packer.Partitions = 0
	_, err := demo.New(c, nil)
	if err == nil || !strings.Contains(err.Error(), "partitions") {
		t.Fatalf("New with 0 partitions: %v", err)
	}
	var se *demo.StartError
	if errors.As(err, &se) {
		t.Errorf("a configuration error is a StartError: %v", err)
	}
}

package demo_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/northpole-workshop/northpole/app/demo"
	"github.com/northpole-workshop/northpole/app/report"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
)

// TestCheckMetrics: the metrics' counts are compared with the records read
// back, rows and dead letters only when no output record was written
// twice; the verdict and the counts are in the text, summary.json and
// report.html.
func TestCheckMetrics(t *testing.T) {
	run := func() demo.Result {
		var r demo.Result
		r.Summary.Topics = map[string]string{"toys": "p-toys", "boxes": "p-boxes"}
		r.Summary.DeadBy = map[string]int{"duplicate": 1}
		r.Run.Toys = make([]record.Input, 3)
		r.Run.Boxes = make([]record.Input, 2)
		r.Run.Goka.Packed = make([]results.Packed, 1)
		r.Run.Goka.Dead = make([]results.Dead, 1)
		return r
	}
	counts := func() demo.MetricCounts {
		return demo.MetricCounts{
			Sent: map[string]int64{"p-toys": 3, "p-boxes": 2}, Consumed: map[string]int64{"p-toys": 3, "p-boxes": 2},
			Rows: map[string]int64{"packed": 1, "dead": 1}, DeadLetters: map[string]int64{"duplicate": 1}, Loaded: 1,
		}
	}
	const all = "toy-elves sent toys 3; box-elves sent boxes 2; packer consumed toys 3, boxes 2; " +
		"packer rows packed 1, unpacked 0, spare 0, late 0, dead 1; packer dead letters duplicate 1; sleigh loaded pairs 1"
	r := run()
	c := r.CheckMetrics(counts())
	var text strings.Builder
	c.WriteText(&text)
	if !c.Equal() || r.Summary.Metrics == nil || r.Summary.Metrics.Check != "equal" ||
		text.String() != "metrics: "+all+"\n  equal to the records read back\n" {
		t.Errorf("equal counts: %+v, text:\n%s", r.Summary.Metrics, text.String())
	}

	// A record the packer consumed twice, and a dead letter of a reason
	// the topic does not hold.
	m := counts()
	m.Consumed["p-boxes"] = 3
	m.DeadLetters["no id"] = 1
	r = run()
	c = r.CheckMetrics(m)
	want := "DIFFERENT from the records read back: packer consumed boxes 3 for 2 read back, packer dead letters no id 1 for 0 read back (" + demo.MetricsDiffer + ")"
	if c.Equal() || r.Summary.Metrics.Check != "different" || c.Verdict() != want {
		t.Errorf("differing counts: %q, verdict %q", r.Summary.Metrics.Check, c.Verdict())
	}

	// Redelivered output: the rows count writes, the sets keys.
	m = counts()
	m.Rows["packed"] = 2
	r = run()
	r.Run.Raw.Duplicates = 1
	c = r.CheckMetrics(m)
	if !c.Equal() || !strings.Contains(c.Verdict(), "rows and dead letters not compared: 1 output record repeated") {
		t.Errorf("with a redelivered row: %q", c.Verdict())
	}

	r = run()
	r.CheckMetrics(counts())
	dir := t.TempDir()
	if err := demo.WriteFiles(dir, r); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Metrics struct {
			Check  string `json:"check"`
			Counts []struct {
				Service  string `json:"service"`
				What     string `json:"what"`
				Of       string `json:"of"`
				Count    int64  `json:"count"`
				ReadBack *int64 `json:"read_back"`
			} `json:"counts"`
		} `json:"metrics"`
	}
	if err := json.Unmarshal(b, &s); err != nil || s.Metrics.Check != "equal" || len(s.Metrics.Counts) != 11 ||
		s.Metrics.Counts[0].Service != "toy-elves" || s.Metrics.Counts[0].Count != 3 || s.Metrics.Counts[0].ReadBack == nil || *s.Metrics.Counts[0].ReadBack != 3 {
		t.Errorf("summary.json: %+v (%v)\n%s", s, err, b)
	}
	if err := demo.WriteReport(dir, r, "here", nil); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, report.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "<b>equal</b>: the OpenTelemetry metrics vs the records read back<br>toy-elves sent toys 3; ") ||
		!strings.Contains(string(page), "sleigh loaded pairs 1: equal to the records read back</div>") {
		t.Errorf("report.html lacks the metrics check")
	}

	// Without metrics, no verdict.
	var none demo.Result
	if b, _ := json.Marshal(none.Summary); strings.Contains(string(b), "metrics") {
		t.Errorf("a summary without metrics: %s", b)
	}
}

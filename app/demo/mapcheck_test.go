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
	"github.com/northpole-workshop/northpole/otel/backend/servicemap"
	"github.com/northpole-workshop/northpole/otel/telemetry"
)

// TestCheckMap: the map's edges into the packer and the sleigh equal the
// records read back, or else the verdict says different; either way it is
// in summary.json and on report.html.
func TestCheckMap(t *testing.T) {
	var r demo.Result
	r.Run.Toys = make([]record.Input, 3)
	r.Run.Boxes = make([]record.Input, 2)
	r.Run.Goka.Packed = make([]results.Packed, 1)
	graph := func(toys int) servicemap.Graph {
		return servicemap.Graph{Edges: []servicemap.Edge{
			{From: telemetry.ServiceToyElves, To: telemetry.ServicePacker, Kind: "service", Calls: toys},
			{From: telemetry.ServiceBoxElves, To: telemetry.ServicePacker, Kind: "service", Calls: 2},
			{From: telemetry.ServicePacker, To: telemetry.ServiceSleigh, Kind: "service", Calls: 1},
			{From: telemetry.ServicePacker, To: "kafka", Kind: "messaging", Calls: 9},
		}}
	}
	edges := r.CheckMap(graph(3))
	if !edges.Equal() || r.Summary.MapCheck != "equal" || len(r.Summary.MapEdges) != 3 {
		t.Errorf("equal map: %v, summary %q %v", edges, r.Summary.MapCheck, r.Summary.MapEdges)
	}
	want := "toy-elves -> packer 3 calls for 3 records read back from the toys topic, " +
		"box-elves -> packer 2 calls for 2 records read back from the boxes topic, packer -> sleigh 1 call for 1 pair packed"
	if edges.String() != want {
		t.Errorf("edges say %q, want %q", edges, want)
	}
	var line strings.Builder
	edges.WriteText(&line)
	if line.String() != "map check: "+want+": equal\n" {
		t.Errorf("the check says %q", line.String())
	}

	// A lost span of the packer's.
	edges = r.CheckMap(graph(2))
	if edges.Equal() || r.Summary.MapCheck != "different" || r.Summary.MapEdges[0].Calls != 2 || r.Summary.MapEdges[0].Want != 3 {
		t.Errorf("a span lost: %v, summary %q %+v", edges, r.Summary.MapCheck, r.Summary.MapEdges)
	}
	line.Reset()
	edges.WriteText(&line)
	if !strings.HasSuffix(line.String(), ": DIFFERENT ("+demo.MapDiffers+")\n") {
		t.Errorf("the check says %q", line.String())
	}
	dir := t.TempDir()
	if err := demo.WriteFiles(dir, r); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		MapCheck string `json:"map_check"`
		MapEdges []struct {
			From  string `json:"from"`
			Calls int    `json:"calls"`
			Want  int    `json:"want"`
		} `json:"map_edges"`
	}
	if err := json.Unmarshal(b, &s); err != nil || s.MapCheck != "different" || len(s.MapEdges) != 3 || s.MapEdges[0].Calls != 2 || s.MapEdges[0].Want != 3 {
		t.Errorf("summary.json: %+v (%v)\n%s", s, err, b)
	}
	g := graph(2)
	if err := demo.WriteReport(dir, r, "here", &g); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, report.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "<b>DIFFERENT</b>: the service map vs the records read back<br>toy-elves -&gt; packer 2 calls for 3 records") {
		t.Errorf("report.html lacks the map check")
	}

	// Without a map, no verdict.
	var none demo.Result
	if b, _ := json.Marshal(none.Summary); strings.Contains(string(b), "map_") {
		t.Errorf("a summary without a map check: %s", b)
	}
}

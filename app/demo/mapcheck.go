package demo

import (
	"fmt"
	"io"
	"strings"

	"github.com/northpole-workshop/northpole/internal/english"
	"github.com/northpole-workshop/northpole/otel/backend/servicemap"
	"github.com/northpole-workshop/northpole/otel/telemetry"
)

// MapEdge is an edge of the service map that the demo checks against what
// it read back: each of To's process spans is one call, and To processes
// each record From's service wrote once, unless a span was lost or a record
// redelivered.
type MapEdge struct {
	From  string `json:"from"`
	To    string `json:"to"`
	Calls int    `json:"calls"`
	// Want is how many records of Unit (singular) To processed, Of saying
	// which: 2000 "record" "read back from the toys topic".
	Want int    `json:"want"`
	Unit string `json:"unit"`
	Of   string `json:"of"`
}

// String is the edge against its records, for people.
func (e MapEdge) String() string {
	return fmt.Sprintf("%s -> %s %s for %s %s", e.From, e.To, english.Count(e.Calls, "call"), english.Count(e.Want, e.Unit), e.Of)
}

// MapEdges are the edges the demo checks: into the packer from both elves,
// one process span per input record, and into the sleigh, one per packed
// pair.
type MapEdges []MapEdge

// Equal reports whether every edge has the calls its records want.
func (es MapEdges) Equal() bool {
	for _, e := range es {
		if e.Calls != e.Want {
			return false
		}
	}
	return true
}

// String lists the edges against their records, for people.
func (es MapEdges) String() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.String()
	}
	return strings.Join(parts, ", ")
}

// WriteText says whether the map's edges equal the records read back, for
// people: "map check: <edges>: equal", or DIFFERENT and what that means.
func (es MapEdges) WriteText(w io.Writer) {
	verdict := "equal"
	if !es.Equal() {
		verdict = "DIFFERENT (" + MapDiffers + ")"
	}
	fmt.Fprintf(w, "map check: %s: %s\n", es, verdict)
}

// MapDiffers says what edges that differ from the records mean.
const MapDiffers = "spans lost, or records redelivered"

// CheckMap compares the service map g, drawn from every span of the run,
// with the records the run read back, and puts the verdict in r.Summary
// (MapCheck, MapEdges) and so in summary.json and report.html.
func (r *Result) CheckMap(g servicemap.Graph) MapEdges {
	edges := MapEdges{
		{From: telemetry.ServiceToyElves, To: telemetry.ServicePacker, Want: len(r.Run.Toys), Unit: "record", Of: "read back from the toys topic"},
		{From: telemetry.ServiceBoxElves, To: telemetry.ServicePacker, Want: len(r.Run.Boxes), Unit: "record", Of: "read back from the boxes topic"},
		{From: telemetry.ServicePacker, To: telemetry.ServiceSleigh, Want: len(r.Run.Goka.Packed), Unit: "pair", Of: "packed"},
	}
	for i, e := range edges {
		got, _ := g.Edge(e.From, e.To)
		edges[i].Calls = got.Calls
	}
	r.Summary.MapEdges = edges
	r.Summary.MapCheck = "equal"
	if !edges.Equal() {
		r.Summary.MapCheck = "different"
	}
	return edges
}

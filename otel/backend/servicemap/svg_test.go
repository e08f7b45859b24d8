package servicemap

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// svgShapes are the label boxes, node boxes and arrow ends of a rendered map,
// read back from its SVG text.
type svgShapes struct {
	labels, nodes []box
	ends          []point // each arrow's last point, where its head is drawn
	texts         []string
}

func parseSVG(t *testing.T, svg []byte) svgShapes {
	t.Helper()
	var s svgShapes
	dec := xml.NewDecoder(bytes.NewReader(svg))
	num := func(se xml.StartElement, name string) float64 {
		for _, a := range se.Attr {
			if a.Name.Local == name {
				v, err := strconv.ParseFloat(a.Value, 64)
				if err != nil {
					t.Fatalf("%s=%q: %v", name, a.Value, err)
				}
				return v
			}
		}
		t.Fatalf("<%s> has no %s", se.Name.Local, name)
		return 0
	}
	attr := func(se xml.StartElement, name string) string {
		for _, a := range se.Attr {
			if a.Name.Local == name {
				return a.Value
			}
		}
		return ""
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch se := tok.(type) {
		case xml.StartElement:
			r := func() box { return box{num(se, "x"), num(se, "y"), num(se, "width"), num(se, "height")} }
			switch {
			case se.Name.Local == "rect" && attr(se, "class") == "label":
				s.labels = append(s.labels, r())
			case se.Name.Local == "rect" && strings.HasPrefix(attr(se, "class"), "node"):
				s.nodes = append(s.nodes, r())
			case se.Name.Local == "path" && attr(se, "class") == "edge":
				f := strings.FieldsFunc(attr(se, "d"), func(r rune) bool { return r == ' ' || r == ',' || r == 'M' || r == 'Q' })
				if len(f) != 6 {
					t.Fatalf("edge path %q", attr(se, "d"))
				}
				x, _ := strconv.ParseFloat(f[4], 64)
				y, _ := strconv.ParseFloat(f[5], 64)
				s.ends = append(s.ends, point{x, y})
			}
		case xml.CharData:
			s.texts = append(s.texts, string(se))
		}
	}
	return s
}

// demoGraph is the demo's map: four services and kafka, every service
// writing to or reading from kafka, two elves into the packer.
func demoGraph() Graph {
	ms := time.Millisecond
	return Graph{
		Nodes: []Node{{Name: "box-elves", Spans: 4160}, {Name: "packer", Spans: 8160}, {Name: "sleigh", Spans: 1776}, {Name: "toy-elves", Spans: 4160}, {Name: "kafka", System: true}},
		Edges: []Edge{
			{From: "box-elves", To: "packer", Kind: "service", Calls: 2080, Errors: 38, P50: 7 * time.Microsecond, P99: 74 * time.Microsecond},
			{From: "packer", To: "sleigh", Kind: "service", Calls: 1776, P50: 10 * time.Microsecond, P99: 78 * time.Microsecond},
			{From: "toy-elves", To: "packer", Kind: "service", Calls: 2080, Errors: 47, P50: 7 * time.Microsecond, P99: 94 * time.Microsecond},
			{From: "box-elves", To: "kafka", Kind: "messaging", Calls: 2080, P50: 55 * ms, P99: 73 * ms},
			{From: "packer", To: "kafka", Kind: "messaging", Calls: 6384, Errors: 241, P50: 7 * time.Microsecond, P99: 75 * time.Microsecond},
			{From: "sleigh", To: "kafka", Kind: "messaging", Calls: 1776, P50: 10 * time.Microsecond, P99: 78 * time.Microsecond},
			{From: "toy-elves", To: "kafka", Kind: "messaging", Calls: 2080, P50: 48 * ms, P99: 107 * ms},
		},
		Spans: 14096,
	}
}

// TestSVGLabelsApartAndArrowsEndApart renders maps and reads the SVG back:
// no label box overlaps another label or a service box, no two arrows end
// at one point (the dashed arrows into kafka used to end in one blob), and
// the legend says what red and dashed mean.
func TestSVGLabelsApartAndArrowsEndApart(t *testing.T) {
	crowded := demoGraph()
	// Five more services fanning into the packer and into kafka.
	for i := range 5 {
		name := fmt.Sprintf("extra-elves-%d", i)
		crowded.Nodes = append(crowded.Nodes, Node{Name: name, Spans: 10})
		crowded.Edges = append(crowded.Edges,
			Edge{From: name, To: "packer", Kind: "service", Calls: 123456, Errors: 7890, P50: time.Second, P99: 2 * time.Second},
			Edge{From: name, To: "kafka", Kind: "messaging", Calls: 123456, P50: time.Second, P99: 2 * time.Second})
	}
	crowded.Nodes = append(crowded.Nodes, Node{Name: "postgresql", System: true})
	crowded.Edges = append(crowded.Edges, Edge{From: "sleigh", To: "postgresql", Kind: "database", Calls: 3, P50: time.Millisecond, P99: time.Millisecond},
		Edge{From: "sleigh", To: "packer", Kind: "service", Calls: 1, P50: time.Millisecond, P99: time.Millisecond})
	for _, c := range []struct {
		name  string
		g     Graph
		apart float64 // the least distance between two arrows' ends
	}{{"demo", demoGraph(), 10}, {"crowded: seven arrows into one side", crowded, 5}} {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := c.g.WriteSVG(&buf); err != nil {
				t.Fatal(err)
			}
			s := parseSVG(t, buf.Bytes())
			if len(s.labels) != len(c.g.Edges) || len(s.ends) != len(c.g.Edges) {
				t.Fatalf("%d labels and %d arrows for %d edges", len(s.labels), len(s.ends), len(c.g.Edges))
			}
			for i, a := range s.labels {
				for j := i + 1; j < len(s.labels); j++ {
					if a.overlaps(s.labels[j]) {
						t.Errorf("label %d %+v overlaps label %d %+v", i, a, j, s.labels[j])
					}
				}
				for _, n := range s.nodes {
					if a.overlaps(n) {
						t.Errorf("label %d %+v overlaps node %+v", i, a, n)
					}
				}
			}
			for i, a := range s.ends {
				for j := i + 1; j < len(s.ends); j++ {
					if b := s.ends[j]; math.Hypot(a.x-b.x, a.y-b.y) < c.apart {
						t.Errorf("arrows %d and %d end within %v px: %v and %v", i, j, c.apart, a, b)
					}
				}
			}
			text := strings.Join(s.texts, " ")
			for _, want := range []string{"red: some of its spans have status ERROR", "dashed, to a cylinder", "dead letters"} {
				if !strings.Contains(text, want) {
					t.Errorf("legend lacks %q", want)
				}
			}
		})
	}
}

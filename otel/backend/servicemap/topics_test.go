package servicemap

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// onTopic is s naming messaging system sys and topic dest ("" for none).
func onTopic(s Span, sys, dest string) Span {
	s.Messaging, s.Destination = sys, dest
	return s
}

// hop is one record through the workshop in trace tr: an elf's send, the
// packer's process and send packed, the sleigh's process.
func hop(tr byte, elves, input string) []Span {
	ms := time.Millisecond
	return []Span{
		onTopic(sp(tr, 1, 0, elves, KindProducer, 50*ms, false), "kafka", input),
		onTopic(sp(tr, 2, 1, "packer", KindConsumer, 2*ms, false), "kafka", input),
		onTopic(sp(tr, 3, 2, "packer", KindProducer, ms, false), "kafka", "packed"),
		onTopic(sp(tr, 4, 3, "sleigh", KindConsumer, 3*ms, false), "kafka", "packed"),
	}
}

type wantEdge struct {
	kind          string
	calls, errors int
}

// TestTopicGraph: the map with topics draws each topic between the services
// whose PRODUCER spans name it and those whose CONSUMER spans do, counting
// records, whether or not the parent spans arrived (or in which batch);
// everything else is drawn as in the SigNoz map.
func TestTopicGraph(t *testing.T) {
	ms := time.Millisecond
	deadLetter := onTopic(sp(7, 5, 2, "packer", KindProducer, ms, true), "kafka", "dead-letters")
	for _, c := range []struct {
		name      string
		batches   [][]Span // one Add each
		sameBatch bool
		edges     map[[2]string]wantEdge
		topics    []string // the topic nodes' names
		orphans   int
		cross     int
	}{
		{
			name:    "the workshop: elves -> toys, boxes -> packer -> packed -> sleigh",
			batches: [][]Span{slices.Concat(hop(1, "toy-elves", "toys"), hop(2, "toy-elves", "toys"), hop(3, "box-elves", "boxes"))},
			edges: map[[2]string]wantEdge{
				{"toy-elves", "kafka/toys"}:  {"produce", 2, 0},
				{"box-elves", "kafka/boxes"}: {"produce", 1, 0},
				{"kafka/toys", "packer"}:     {"consume", 2, 0},
				{"kafka/boxes", "packer"}:    {"consume", 1, 0},
				{"packer", "kafka/packed"}:   {"produce", 3, 0},
				{"kafka/packed", "sleigh"}:   {"consume", 3, 0},
			},
			topics: []string{"kafka/boxes", "kafka/packed", "kafka/toys"},
		},
		{
			name:    "an error span counts on its topic's edge",
			batches: [][]Span{append(hop(7, "toy-elves", "toys")[:2], deadLetter)},
			edges: map[[2]string]wantEdge{
				{"toy-elves", "kafka/toys"}:      {"produce", 1, 0},
				{"kafka/toys", "packer"}:         {"consume", 1, 0},
				{"packer", "kafka/dead-letters"}: {"produce", 1, 1},
			},
			topics: []string{"kafka/dead-letters", "kafka/toys"},
		},
		{
			name:    "a record whose send span never arrived is still read from its topic",
			batches: [][]Span{hop(1, "toy-elves", "toys")[1:2]},
			edges:   map[[2]string]wantEdge{{"kafka/toys", "packer"}: {"consume", 1, 0}},
			topics:  []string{"kafka/toys"},
			orphans: 1,
		},
		{
			name:      "same batch: a hop across two batches keeps its topic edges",
			batches:   [][]Span{hop(1, "toy-elves", "toys")[:1], hop(1, "toy-elves", "toys")[1:2]},
			sameBatch: true,
			edges: map[[2]string]wantEdge{
				{"toy-elves", "kafka/toys"}: {"produce", 1, 0},
				{"kafka/toys", "packer"}:    {"consume", 1, 0},
			},
			topics: []string{"kafka/toys"},
			cross:  1,
		},
		{
			name: "spans without a topic, or neither PRODUCER nor CONSUMER, go to their system",
			batches: [][]Span{{
				onTopic(sp(1, 1, 0, "toy-elves", KindClient, ms, false), "kafka", ""),
				onTopic(sp(1, 2, 1, "packer", KindConsumer, ms, false), "kafka", ""),
				onTopic(sp(1, 3, 2, "packer", KindClient, ms, false), "kafka", "packed"),
			}},
			edges: map[[2]string]wantEdge{
				{"toy-elves", "packer"}: {"service", 1, 0},
				{"toy-elves", "kafka"}:  {"messaging", 1, 0},
				{"packer", "kafka"}:     {"messaging", 2, 0},
			},
		},
		{
			name: "a service and a topic of one name, one topic name in two systems: four nodes",
			batches: [][]Span{{
				onTopic(sp(1, 1, 0, "orders", KindProducer, ms, false), "kafka", "orders"),
				onTopic(sp(1, 2, 1, "billing", KindConsumer, ms, false), "kafka", "orders"),
				onTopic(sp(2, 1, 0, "orders", KindProducer, ms, false), "rabbitmq", "orders"),
			}},
			edges: map[[2]string]wantEdge{
				{"orders", "kafka/orders"}:    {"produce", 1, 0},
				{"kafka/orders", "billing"}:   {"consume", 1, 0},
				{"orders", "rabbitmq/orders"}: {"produce", 1, 0},
			},
			topics: []string{"kafka/orders", "rabbitmq/orders"},
		},
		{
			name: "service edges that no topic carries stay, and so do databases",
			batches: [][]Span{{
				sp(1, 1, 0, "sleigh", KindClient, ms, false),
				sp(1, 2, 1, "api", KindServer, 2*ms, false),
				onTopic(sp(1, 3, 2, "api", KindProducer, ms, false), "kafka", "manifests"),
				onTopic(sp(1, 4, 3, "printer", KindConsumer, ms, false), "kafka", "manifests"),
				{TraceID: [16]byte{1}, SpanID: [8]byte{7: 5}, ParentSpanID: [8]byte{7: 4}, Service: "printer", Kind: KindClient, Duration: ms, DB: "postgresql"},
			}},
			edges: map[[2]string]wantEdge{
				{"sleigh", "api"}:              {"service", 1, 0},
				{"api", "kafka/manifests"}:     {"produce", 1, 0},
				{"kafka/manifests", "printer"}: {"consume", 1, 0},
				{"printer", "postgresql"}:      {"database", 1, 0},
			},
			topics: []string{"kafka/manifests"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := NewBuilder(Options{SameBatch: c.sameBatch})
			for _, spans := range c.batches {
				b.Add(spans)
			}
			g := b.TopicGraph()
			got := map[[2]string]wantEdge{}
			for _, e := range g.Edges {
				got[[2]string{e.From, e.To}] = wantEdge{e.Kind, e.Calls, e.Errors}
			}
			if fmt.Sprint(got) != fmt.Sprint(c.edges) {
				t.Errorf("edges\n got %v\nwant %v", got, c.edges)
			}
			var topics []string
			for _, n := range g.Nodes {
				if n.Topic != "" {
					topics = append(topics, n.Name)
					if n.Name != n.Messaging+"/"+n.Topic || n.Spans != 0 || n.System {
						t.Errorf("topic node %+v", n)
					}
				}
			}
			if !slices.Equal(topics, c.topics) {
				t.Errorf("topic nodes %v, want %v", topics, c.topics)
			}
			if g.Orphans != c.orphans || g.CrossBatch != c.cross {
				t.Errorf("orphans %d, cross-batch %d; want %d, %d", g.Orphans, g.CrossBatch, c.orphans, c.cross)
			}
		})
	}
}

// TestDefaultGraphKeepsSigNozsKafkaNode: the same spans without topics give
// SigNoz's map: service to service, and every messaging span to kafka.
func TestDefaultGraphKeepsSigNozsKafkaNode(t *testing.T) {
	b := NewBuilder(Options{})
	b.Add(hop(1, "toy-elves", "toys"))
	g := b.Graph()
	var edges []string
	for _, e := range g.Edges {
		edges = append(edges, e.From+">"+e.To+":"+e.Kind)
	}
	want := []string{"packer>sleigh:service", "toy-elves>packer:service", "packer>kafka:messaging", "sleigh>kafka:messaging", "toy-elves>kafka:messaging"}
	if !slices.Equal(edges, want) {
		t.Errorf("edges %v, want %v", edges, want)
	}
	for _, n := range g.Nodes {
		if n.Topic != "" {
			t.Errorf("topic node %+v in the default map", n)
		}
	}
}

// topicDemo is a small demo's map with topics.
func topicDemo() Graph {
	b := NewBuilder(Options{})
	b.Add(slices.Concat(hop(1, "toy-elves", "toys"), hop(2, "box-elves", "boxes"),
		[]Span{onTopic(sp(2, 5, 2, "packer", KindProducer, time.Millisecond, true), "kafka", "dead-letters")}))
	return b.TopicGraph()
}

func TestMermaidWithTopics(t *testing.T) {
	var buf bytes.Buffer
	if err := topicDemo().WriteMermaid(&buf); err != nil {
		t.Fatal(err)
	}
	want := `graph LR
  n0["box-elves"]
  n1["packer"]
  n2["sleigh"]
  n3["toy-elves"]
  n4(["boxes"])
  n5(["dead-letters"])
  n6(["packed"])
  n7(["toys"])
  n0 -->|"1 record, p50 50ms, p99 50ms"| n4
  n1 -->|"1 record, 1 error, p50 1ms, p99 1ms"| n5
  n1 -->|"2 records, p50 1ms, p99 1ms"| n6
  n3 -->|"1 record, p50 50ms, p99 50ms"| n7
  n4 -->|"1 record, p50 2ms, p99 2ms"| n1
  n6 -->|"2 records, p50 3ms, p99 3ms"| n2
  n7 -->|"1 record, p50 2ms, p99 2ms"| n1
`
	if buf.String() != want {
		t.Errorf("mermaid:\n%s\nwant:\n%s", buf.String(), want)
	}
}

// TestSVGWithTopics: topics are stadiums in the columns between their
// writers and readers (toy-elves, toys, packer, packed, sleigh from left to
// right), labels stay apart, and the legend explains the lines the map has,
// and only those.
func TestSVGWithTopics(t *testing.T) {
	g := topicDemo()
	var buf bytes.Buffer
	if err := g.WriteSVG(&buf); err != nil {
		t.Fatal(err)
	}
	s := parseSVG(t, buf.Bytes())
	if len(s.labels) != len(g.Edges) || len(s.nodes) != len(g.Nodes) {
		t.Fatalf("%d labels for %d edges, %d nodes for %d", len(s.labels), len(g.Edges), len(s.nodes), len(g.Nodes))
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
	d := g.draw()
	x := func(name string) float64 { return d.nodes[name].x }
	if !(x("toy-elves") < x("kafka/toys") && x("kafka/toys") < x("packer") && x("packer") < x("kafka/packed") && x("kafka/packed") < x("sleigh")) {
		t.Errorf("columns: toy-elves %v, toys %v, packer %v, packed %v, sleigh %v", x("toy-elves"), x("kafka/toys"), x("packer"), x("kafka/packed"), x("sleigh"))
	}
	text := strings.Join(s.texts, " ")
	for _, want := range []string{"toys", "dead-letters", "kafka topic", "2 records, p50 3ms, p99 3ms", "A → topic → B: records", "red: some of its spans"} {
		if !strings.Contains(text, want) {
			t.Errorf("svg lacks %q", want)
		}
	}
	// Nothing here is a service edge or goes to a system.
	for _, absent := range []string{"A → B: spans of service B", "dashed, to a cylinder"} {
		if strings.Contains(text, absent) {
			t.Errorf("the legend explains %q, which the map does not have", absent)
		}
	}
	if n := strings.Count(buf.String(), `class="node topic"`); n != 4 {
		t.Errorf("%d topic stadiums, want 4", n)
	}

	buf.Reset()
	if err := demoGraph().WriteSVG(&buf); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "A → topic → B") {
		t.Error("the legend of a map without topics explains topics")
	}
}

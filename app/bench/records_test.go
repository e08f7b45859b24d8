package bench

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lovoo/goka"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/processors/packer"
)

// TestTopicUsesOfThePacker: the kinds and readers derived from the packer's
// graph are its design (docs/ARCHITECTURE.md): the inputs and the loop
// read once, the clock table read by none (a group table is read only to
// recover).
func TestTopicUsesOfThePacker(t *testing.T) {
	c := packer.DefaultConfig()
	c.Kafka = kafkaconf.Config{Brokers: []string{"k:9092"}}
	p, err := packer.New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range topicUses([]*goka.GroupGraph{p.Graph()}) {
		got = append(got, fmt.Sprintf("%s %s %d", u.kind, u.topic, u.readers))
	}
	want := []string{
		"inputs boxes 1", "inputs toys 1",
		"loops packer-clock-loop 1",
		"tables packer-clock-table 0",
		"outputs dead-letters 0", "outputs late 0", "outputs packed 0", "outputs spare 0", "outputs unpacked 0",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("topic uses:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	hop := topicUses([]*goka.GroupGraph{hopGraph(HopConfig{Group: "h", Toys: "toys", Boxes: "boxes"})})
	if len(hop) != 3 || hop[2] != (topicUse{"h-table", KindTables, 0}) {
		t.Errorf("the hop's topics %+v, want the inputs and its table, read by none", hop)
	}
}

func TestKindRecords(t *testing.T) {
	uses := []topicUse{
		{"in", KindInputs, 1}, {"loop", KindLoops, 1}, {"t1", KindTables, 1}, {"t2", KindTables, 0}, {"out", KindOutputs, 0},
	}
	before := map[string]int64{"loop": 10} // written before the run
	after := map[string]int64{"in": 100, "loop": 210, "t1": 100, "t2": 50, "out": 25}
	got := kindRecords(uses, before, after, 100)
	want := map[string][2]float64{ // written, read per event
		KindInputs: {1, 1}, KindLoops: {2, 2}, KindEvents: {0, 0}, KindTables: {1.5, 1}, KindOutputs: {0.25, 0},
	}
	if len(got) != len(Kinds) {
		t.Fatalf("%d kinds, want %d", len(got), len(Kinds))
	}
	for i, k := range got {
		if k.Kind != Kinds[i] {
			t.Errorf("kind %d is %s, want %s", i, k.Kind, Kinds[i])
		}
		if w := want[k.Kind]; k.WrittenPerEvent != w[0] || k.ReadPerEvent != w[1] {
			t.Errorf("%s: written/read per event %v/%v, want %v/%v", k.Kind, k.WrittenPerEvent, k.ReadPerEvent, w[0], w[1])
		}
	}
	if tables := got[3]; tables.Written != 150 || tables.Read != 100 || strings.Join(tables.Topics, ",") != "t1,t2" {
		t.Errorf("tables %+v", tables)
	}
}

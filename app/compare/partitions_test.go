package compare

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/northpole-workshop/northpole/internal/record"
)

func TestSpreads(t *testing.T) {
	rec := func(stream record.Stream, part int32, key, value string) record.Input {
		return record.Input{Stream: stream, Topic: string(stream), Partition: part, Key: []byte(key), Value: []byte(value)}
	}
	toy := func(part int32, line string) record.Input {
		size, _, _ := record.SplitLine(line)
		return rec(record.Toys, part, line, fmt.Sprintf(`{"toy_id":"t","size":%q,"made_at":"2026-12-24T10:00:00Z"}`, size))
	}
	box := func(part int32, size string) record.Input {
		return rec(record.Boxes, part, size, fmt.Sprintf(`{"box_id":"b","size":%q,"made_at":"2026-12-24T10:00:00Z"}`, size))
	}
	heartbeat := rec(record.Toys, 3, "S", `{"heartbeat":true,"size":"S","made_at":"2026-12-24T10:00:00Z"}`)
	cases := []struct {
		name   string
		inputs []record.Input
		want   string
	}{
		{"none", nil, ""},
		{"every size in one partition", []record.Input{toy(0, "S"), toy(0, "S"), toy(1, "M"), box(1, "S"), box(0, "M")}, ""},
		{"a size in a partition of its own but not its hash's is fine", []record.Input{toy(3, "S"), toy(3, "S")}, ""},
		{"invalid records do not count", []record.Input{toy(0, "S"), rec(record.Toys, 1, "S", `{"size":"S"`), rec(record.Toys, 2, "S", `{"toy_id":"x","size":"M","made_at":"2026-12-24T10:00:00Z"}`)}, ""},
		{"one size over two partitions", []record.Input{toy(0, "S"), toy(0, "S"), toy(2, "S"), toy(1, "M")}, "toys S 0:2 2:1"},
		{"heartbeats count", []record.Input{toy(0, "S"), heartbeat}, "toys S 0:1 3:1"},
		{"lines of one size in partitions of their own are fine", []record.Input{toy(0, "M"), toy(1, "M/h1"), toy(2, "M/h2"), toy(2, "M/h2")}, ""},
		{"one line over two partitions, in size and line order", []record.Input{toy(0, "M/h2"), toy(1, "M/h2"), toy(1, "M/h1"), toy(3, "M/h1"), toy(0, "S/h"), toy(1, "S/h"), toy(1, "M")},
			"toys S/h 0:1 1:1; toys M/h1 1:1 3:1; toys M/h2 0:1 1:1"},
		{"a bad line is a dead letter, wherever it is", []record.Input{toy(0, "M/H"), toy(1, "M/H")}, ""},
		{"the streams apart, in size order", []record.Input{box(0, "XL"), box(1, "XL"), box(1, "XL"), toy(1, "M"), toy(0, "M"), box(0, "S"), box(2, "S"), box(0, "M")},
			"boxes S 0:1 2:1; boxes XL 0:1 1:2; toys M 0:1 1:1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, s := range Spreads(c.inputs) {
				line := s.Stream + " " + s.Line
				for _, p := range s.Partitions {
					line += fmt.Sprintf(" %d:%d", p.Partition, p.Records)
				}
				got = append(got, line)
			}
			if g := strings.Join(got, "; "); g != c.want {
				t.Errorf("Spreads = %q, want %q", g, c.want)
			}
		})
	}
}

// TestWriteTextWarnsOfSpreads: the text says what is wrong and how to fix it
// next to the verdict, equal or not, and nothing when the topics are fine.
func TestWriteTextWarnsOfSpreads(t *testing.T) {
	spread := []Spread{{Stream: "toys", Line: "M/h1", Size: "M", Partitions: []PartitionRecords{{0, 1447}, {3, 1}}}}
	for _, c := range []struct {
		name   string
		cmp    Comparison
		warned bool
	}{
		{"equal, no spread", Comparison{Equal: true}, false},
		{"different, no spread", Comparison{Differences: []Difference{{Set: "dead", OnlyIn: "sql", Row: struct{}{}}}}, false},
		{"equal with a spread", Comparison{Equal: true, PartitionSpread: spread}, true},
		{"different with a spread", Comparison{Differences: []Difference{{Set: "dead", OnlyIn: "sql", Row: struct{}{}}}, PartitionSpread: spread}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			WriteText(&b, c.cmp, 10, "")
			out := b.String()
			for _, s := range []string{"mis-partitioned", "toys of line M/h1: partition 0: 1447 records, partition 3: 1 record", "-X topic.partitioner=fnv1a", "FNV-1a"} {
				if strings.Contains(out, s) != c.warned {
					t.Errorf("text contains %q: %v, want %v\n%s", s, !c.warned, c.warned, out)
				}
			}
			if c.warned && strings.Index(out, "mis-partitioned") > strings.Index(out, "only in") && strings.Contains(out, "only in") {
				t.Errorf("the warning comes after the differing rows, not next to the verdict:\n%s", out)
			}
		})
	}
}

package compare

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/northpole-workshop/northpole/internal/english"
	"github.com/northpole-workshop/northpole/internal/record"
)

// PartitionRecords is how many valid records of one (stream, line) one
// partition holds.
type PartitionRecords struct {
	Partition int32 `json:"partition"`
	Records   int   `json:"records"`
}

// Spread is a (stream, line) whose valid records are in more than one
// partition of its topic. The contract orders the records of a (stream, line)
// by offset, assuming they share one partition (keying by line does that when
// every producer hashes keys alike); across partitions no order is defined,
// so Goka, which takes records as it reads them, and the SQL and the
// reference, which sort by (partition, offset), may rank them differently.
type Spread struct {
	Stream     string             `json:"stream"`
	Line       string             `json:"line"`
	Size       string             `json:"size"`
	Partitions []PartitionRecords `json:"partitions"`
}

// Spreads finds every (stream, line) of inputs whose valid records
// (heartbeats included: they move the clock) are in more than one
// partition, in stream, size and line order. Invalid records are dead
// letters by their position alone, so where they are does not matter.
func Spreads(inputs []record.Input) []Spread {
	type streamLine struct{ stream, line, size string }
	parts := map[streamLine]map[int32]int{}
	for _, in := range inputs {
		r, err := record.Parse(in.Stream, in.Key, in.Value)
		if err != nil {
			continue
		}
		k := streamLine{string(in.Stream), r.Line, r.Size}
		if parts[k] == nil {
			parts[k] = map[int32]int{}
		}
		parts[k][in.Partition]++
	}
	out := []Spread{}
	for k, ps := range parts {
		if len(ps) < 2 {
			continue
		}
		s := Spread{Stream: k.stream, Line: k.line, Size: k.size}
		for p, n := range ps {
			s.Partitions = append(s.Partitions, PartitionRecords{p, n})
		}
		slices.SortFunc(s.Partitions, func(a, b PartitionRecords) int { return cmp.Compare(a.Partition, b.Partition) })
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Spread) int {
		return cmp.Or(cmp.Compare(a.Stream, b.Stream), cmp.Compare(record.SizeRank(a.Size), record.SizeRank(b.Size)), cmp.Compare(a.Line, b.Line))
	})
	return out
}

// writeSpreads explains spreads (none: nothing): what is wrong with the
// input topics, what it does to the comparison, and how to fix it.
func writeSpreads(w io.Writer, spreads []Spread) {
	if len(spreads) == 0 {
		return
	}
	fmt.Fprintln(w, "\nWARNING: the input topics are mis-partitioned: records of one (stream, line) are in more than one partition")
	for _, s := range spreads {
		var ps []string
		for _, p := range s.Partitions {
			ps = append(ps, fmt.Sprintf("partition %d: %s", p.Partition, english.Count(p.Records, "record")))
		}
		fmt.Fprintf(w, "  %s of line %s: %s\n", s.Stream, s.Line, strings.Join(ps, ", "))
	}
	fmt.Fprint(w, `The contract takes the records of each (stream, line) in offset order within ONE
partition. Across partitions there is no order: Goka takes them as it reads them, the
SQL engines and the reference by (partition, offset), so ranks, lateness and duplicates
of those lines can differ, and rows that differ for that reason are not an engine's bug.
Fix: every producer keys each record by its line (its size, or size/hall) and
partitions the key with FNV-1a, as the
elves, sarama and goka do (kcat and other librdkafka clients: -X topic.partitioner=fnv1a);
then produce again into fresh topics.
`)
}

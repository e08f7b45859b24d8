package producers

import (
	"fmt"
	"hash/fnv"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/northpole-workshop/northpole/internal/record"
)

// A packing line (contract version 3) is a record's Kafka key: its size
// alone ("M") or its size and hall ("M/hall-7"). Everything the contract
// decides per stream is decided per line, and all records of a line are in
// one partition, so the lines are what the partitions share: four sizes
// alone fill at most four partitions, H halls up to 4H.
//
// internal/record parses and checks lines for the engines; the elves only
// build them, from hall names that are well-formed by construction
// (HallName), so they need none of that here.

// MaxHalls bounds Config.Halls. Every heartbeat tick and the final
// heartbeats write one record per line, 4*Halls of them on each topic, and
// the packer keeps a clock per line: at 10,000 halls that is 40,000
// heartbeats per tick, already far more than the toys of any rate this
// project runs, and 40,000 lines are ten times the partitions a Kafka
// cluster serves well for one topic. More halls would fill no more
// partitions, only more heartbeats.
const MaxHalls = 10_000

// HallName is the name of hall k (1-based): "hall-1", "hall-2", …, a
// well-formed hall by the contract (1 to 32 of a-z, 0-9 and '-', the first a
// letter or a digit).
func HallName(k int) string { return "hall-" + strconv.Itoa(k) }

// halls are the hall names the elves of c spread over: "" alone (keys are
// sizes) when c.Halls is 0.
func (c Config) halls() []string {
	if c.Halls == 0 {
		return []string{""}
	}
	out := make([]string, c.Halls)
	for k := range out {
		out[k] = HallName(k + 1)
	}
	return out
}

// Lines are the keys of every line the elves of c may write, every size in
// every hall, sizes first: the lines that get heartbeats and final
// heartbeats. Sizes of weight 0 are included, so that a line the other
// stream writes still closes on this one.
func (c Config) Lines() []string {
	halls := c.halls()
	out := make([]string, 0, len(record.Sizes)*len(halls))
	for _, s := range record.Sizes {
		for _, h := range halls {
			out = append(out, record.JoinLine(s, h))
		}
	}
	return out
}

// fnv1a is the key hash of goka and sarama's hash partitioner.
func fnv1a(key []byte) uint32 {
	h := fnv.New32a()
	h.Write(key)
	return h.Sum32()
}

// partitionOf is the partition of key among n: what goka, sarama and the
// elves' producer pick, and every other producer of toys and boxes must.
var partitionOf = kgo.SaramaCompatHasher(fnv1a)

// Spread is how the records of a config fall on a topic's partitions.
type Spread struct {
	// Lines per partition, by partition.
	Lines []int
	// Share is each partition's expected fraction of the records, from
	// the size mix (halls share their size's records evenly).
	Share []float64
}

// Spread says where the lines of c fall among partitions partitions.
func (c Config) Spread(partitions int) Spread {
	sp := Spread{Lines: make([]int, partitions), Share: make([]float64, partitions)}
	if partitions <= 0 {
		return sp
	}
	total := 0
	for _, s := range record.Sizes {
		total += c.SizeMix[s]
	}
	halls := c.halls()
	for _, s := range record.Sizes {
		for _, h := range halls {
			p := partitionOf([]byte(record.JoinLine(s, h)), partitions)
			sp.Lines[p]++
			if total > 0 {
				sp.Share[p] += float64(c.SizeMix[s]) / float64(total) / float64(len(halls))
			}
		}
	}
	return sp
}

// Idle is the number of partitions no line falls on: they carry no work.
func (sp Spread) Idle() int {
	n := 0
	for _, l := range sp.Lines {
		if l == 0 {
			n++
		}
	}
	return n
}

// Busiest is the largest partition's share over an even share (1 when the
// work is even, 0 without partitions).
func (sp Spread) Busiest() float64 {
	most := 0.0
	for _, s := range sp.Share {
		most = max(most, s)
	}
	return most * float64(len(sp.Share))
}

// String says it for people: "64 lines over 16 partitions: 16 carry work,
// the busiest 1.6 times an even share".
func (sp Spread) String() string {
	lines := 0
	for _, l := range sp.Lines {
		lines += l
	}
	return fmt.Sprintf("%d lines over %d partitions: %d carry work, the busiest %.1f times an even share",
		lines, len(sp.Lines), len(sp.Lines)-sp.Idle(), sp.Busiest())
}

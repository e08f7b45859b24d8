package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/lovoo/goka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
)

// The kinds of topic a worker's goka groups use, as KindRecords names them.
const (
	KindInputs  = "inputs"  // read by a group, written by none (the elves')
	KindLoops   = "loops"   // a group's loopback stream
	KindEvents  = "events"  // written by one group, read as a stream by another
	KindTables  = "tables"  // a group table (its changelog)
	KindOutputs = "outputs" // written by a group, read by none of them
)

// Kinds are the kinds in the order the bench reports them.
var Kinds = []string{KindInputs, KindLoops, KindEvents, KindTables, KindOutputs}

// topicUse is one topic of a worker: its kind and how many of the groups
// consume it in normal running.
type topicUse struct {
	topic, kind string
	readers     int
}

// topicUses derives every topic of graphs, its kind and its readers from the
// graphs themselves: a group reads its input streams and its loop
// continuously, and its joined and looked-up tables too (goka keeps them up
// to date; a table written as an output and joined is a table); a group table that no group reads that way is read only when a
// partition is recovered, which normal running does not do, so it counts no
// reader. Topics read outside the groups (outputs by their consumers) count
// none either.
func topicUses(graphs []*goka.GroupGraph) []topicUse {
	readers := map[string]int{}
	written := map[string]string{} // topic -> kind, for the topics a group writes
	tables := map[string]bool{}    // joined or looked up
	for _, g := range graphs {
		for _, e := range slices.Concat(g.InputStreams(), g.JointTables(), g.LookupTables()) {
			readers[e.Topic()]++
		}
		for _, e := range slices.Concat(g.JointTables(), g.LookupTables()) {
			tables[e.Topic()] = true
		}
		if l := g.LoopStream(); l != nil {
			readers[l.Topic()]++
			written[l.Topic()] = KindLoops
		}
		if t := g.GroupTable(); t != nil {
			written[t.Topic()] = KindTables
		}
		for _, e := range g.OutputStreams() {
			written[e.Topic()] = KindOutputs
		}
	}
	var out []topicUse
	for topic, kind := range written {
		switch {
		case kind == KindOutputs && tables[topic]:
			// A table that a group writes itself rather than by SetValue
			// (the packer's dedupe entries).
			kind = KindTables
		case kind == KindOutputs && readers[topic] > 0:
			kind = KindEvents
		}
		out = append(out, topicUse{topic, kind, readers[topic]})
	}
	for topic, n := range readers {
		if _, ok := written[topic]; !ok {
			out = append(out, topicUse{topic, KindInputs, n})
		}
	}
	slices.SortFunc(out, func(a, b topicUse) int {
		if c := slices.Index(Kinds, a.kind) - slices.Index(Kinds, b.kind); c != 0 {
			return c
		}
		if a.topic < b.topic {
			return -1
		}
		if a.topic > b.topic {
			return 1
		}
		return 0
	})
	return out
}

// KindRecords are the Kafka records of one kind of topic in a run: written
// is the growth of the topics' end offsets, read is written times the number
// of groups that consume each topic (topicUses).
type KindRecords struct {
	Kind            string   `json:"kind"`
	Topics          []string `json:"topics"`
	Readers         []int    `json:"readers"` // per topic, in the order of Topics
	Written         int64    `json:"written"`
	Read            int64    `json:"read"`
	WrittenPerEvent float64  `json:"written_per_input_event"`
	ReadPerEvent    float64  `json:"read_per_input_event"`
}

// endOffsetsByTopic is the sum of each topic's partitions' end offsets. With
// missingOK a topic that does not exist yet (goka creates the hop worker's
// table when it starts) counts 0.
func endOffsetsByTopic(ctx context.Context, kc kafkaconf.Config, topics []string, missingOK bool) (map[string]int64, error) {
	adm, err := admin(ctx, kc)
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("list end offsets of %v: %w", topics, err)
	}
	n := map[string]int64{}
	var errs []error
	ends.Each(func(o kadm.ListedOffset) {
		switch {
		case o.Err == nil:
			n[o.Topic] += o.Offset
		case !missingOK || !errors.Is(o.Err, kerr.UnknownTopicOrPartition):
			errs = append(errs, fmt.Errorf("end offset of %s/%d: %w", o.Topic, o.Partition, o.Err))
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return n, nil
}

// kindRecords sums, per kind, the records written between the end offsets
// before and after, and what the groups read of them, per input event.
func kindRecords(uses []topicUse, before, after map[string]int64, inputEvents int64) []KindRecords {
	var out []KindRecords
	for _, kind := range Kinds {
		k := KindRecords{Kind: kind}
		for _, u := range uses {
			if u.kind != kind {
				continue
			}
			w := after[u.topic] - before[u.topic]
			k.Topics, k.Readers = append(k.Topics, u.topic), append(k.Readers, u.readers)
			k.Written += w
			k.Read += w * int64(u.readers)
		}
		if inputEvents > 0 {
			k.WrittenPerEvent = float64(k.Written) / float64(inputEvents)
			k.ReadPerEvent = float64(k.Read) / float64(inputEvents)
		}
		out = append(out, k)
	}
	return out
}

func topicsOf(uses []topicUse) []string {
	var ts []string
	for _, u := range uses {
		ts = append(ts, u.topic)
	}
	return ts
}

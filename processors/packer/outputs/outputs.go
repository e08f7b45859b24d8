// Package outputs reads what a packer wrote, from outside it, as its
// consumers do: the five result topics deduplicated by key, the dead letters
// whole (Read); how many records its groups have not yet committed (Lag);
// and waiting until they have consumed everything (WaitQuiet). It is not the
// packer: nothing here runs in processors/packer, and nothing here needs a
// running packer, only the configuration its groups and topics are named in.
//
// It is a package of its own, beside the packer rather than in the harness,
// because it needs only Kafka and the packer's configuration, not the elves,
// the sleigh or a run: the harness reads back through it, and the bench
// measures with it the lag of a packer running in another process. Lag sums,
// over its group and every topic it consumes (packer.Config.GroupInputs: the
// loop included), the records not yet committed.
package outputs

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/results"
	"github.com/northpole-workshop/northpole/internal/topicread"
	"github.com/northpole-workshop/northpole/processors/packer"
)

// Counts counts output records before deduplication by key: the difference is
// what redeliveries (crashes, rebalances) re-sent.
type Counts struct {
	Records    int `json:"records"`
	Duplicates int `json:"duplicates"`
	// Conflicts counts keys that were written with two different values: a
	// toy in two boxes, say. It must be zero.
	Conflicts int `json:"conflicts"`
}

// Results are the packer's five result topics as a consumer reads them.
type Results struct {
	// Set is the five sets, the first record of each key, sorted
	// (results.Set.Sort).
	Set results.Set
	// DeadLetters are the dead-letters topic's records whole (the reason's
	// detail, the raw record), one per key, in the order of Set.Dead: the
	// demo writes them out, and reading the topic once gives both.
	DeadLetters []packer.DeadLetter
	// Raw counts the records before deduplication.
	Raw Counts
}

// Read reads the five result topics of t and deduplicates them by key.
func Read(ctx context.Context, kc kafkaconf.Config, t packer.Topics) (Results, error) {
	var r Results
	s := &r.Set
	if err := readInto(ctx, kc, t.Packed, &r.Raw, &s.Packed); err != nil {
		return r, err
	}
	if err := readInto(ctx, kc, t.Unpacked, &r.Raw, &s.Unpacked); err != nil {
		return r, err
	}
	if err := readInto(ctx, kc, t.Spare, &r.Raw, &s.Spare); err != nil {
		return r, err
	}
	if err := readInto(ctx, kc, t.Late, &r.Raw, &s.Late); err != nil {
		return r, err
	}
	if err := readInto(ctx, kc, t.Dead, &r.Raw, &r.DeadLetters); err != nil {
		return r, err
	}
	slices.SortFunc(r.DeadLetters, func(a, b packer.DeadLetter) int {
		return cmp.Or(cmp.Compare(a.Stream, b.Stream), cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
	for _, d := range r.DeadLetters {
		s.Dead = append(s.Dead, results.Dead{Stream: string(d.Stream), Partition: d.Partition, Offset: d.Offset, Reason: string(d.Reason)})
	}
	s.Sort()
	return r, nil
}

func readInto[T any](ctx context.Context, kc kafkaconf.Config, topic string, raw *Counts, out *[]T) error {
	msgs, err := topicread.All(ctx, kc, topic)
	if err != nil {
		return err
	}
	seen := map[string]string{}
	for _, m := range msgs {
		raw.Records++
		k := string(m.Key)
		if prev, ok := seen[k]; ok {
			raw.Duplicates++
			if prev != string(m.Value) {
				raw.Conflicts++
			}
			continue
		}
		seen[k] = string(m.Value)
		var v T
		if err := json.Unmarshal(m.Value, &v); err != nil {
			return fmt.Errorf("decode %s/%d@%d: %w", m.Topic, m.Partition, m.Offset, err)
		}
		*out = append(*out, v)
	}
	return nil
}

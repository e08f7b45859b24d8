// Package topicread reads whole topics: every partition from its oldest offset
// up to the high watermark seen when the read starts. The demo, the compare
// job and the tests use it to collect inputs and results.
package topicread

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/record"
)

// Message is one record with its position.
type Message struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	Headers   []kgo.RecordHeader
	// Timestamp is the record's Kafka timestamp.
	Timestamp time.Time
}

// All reads topic from start to the current end, ordered by (partition, offset).
// Kafka that cannot be reached at all, or a missing topic, is reported within
// seconds: the client is a fail-fast reader (kafkaconf.Config.NewReaderClient),
// not one that retries for minutes, and the read gives up as soon as ctx is
// done. A broker connection lost during the read is the client's to redial.
func All(ctx context.Context, kc kafkaconf.Config, topic string) ([]Message, error) {
	cl, err := kc.NewReaderClient(ctx)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	admin := kadm.NewClient(cl)
	starts, err := admin.ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("start offsets of %q: %w", topic, err)
	}
	ends, err := admin.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("end offsets of %q: %w", topic, err)
	}
	end := map[int32]int64{} // of each partition that has records
	from := map[int32]kgo.Offset{}
	for p, e := range ends[topic] {
		s := starts[topic][p]
		switch {
		case p == -1: // kadm's entry for a topic that does not exist
			return nil, fmt.Errorf("topic %q: %w", topic, e.Err)
		case e.Err != nil:
			return nil, fmt.Errorf("end offset of %s/%d: %w", topic, p, e.Err)
		case s.Err != nil:
			return nil, fmt.Errorf("start offset of %s/%d: %w", topic, p, s.Err)
		case s.Offset < e.Offset:
			end[p], from[p] = e.Offset, kgo.NewOffset().At(s.Offset)
		}
	}
	if len(end) == 0 {
		return nil, nil
	}
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: from})
	var out []Message
	for len(end) > 0 {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var fetchErr error
		fetches.EachError(func(t string, p int32, err error) {
			fetchErr = fmt.Errorf("read %s/%d: %w", t, p, err)
		})
		if fetchErr != nil {
			return nil, fetchErr
		}
		var done []int32
		fetches.EachRecord(func(r *kgo.Record) {
			e, reading := end[r.Partition]
			if !reading || r.Offset >= e {
				return // written after the read started
			}
			out = append(out, Message{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
				Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp})
			if r.Offset == e-1 {
				delete(end, r.Partition)
				done = append(done, r.Partition)
			}
		})
		cl.RemoveConsumePartitions(map[string][]int32{topic: done})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Partition != out[j].Partition {
			return out[i].Partition < out[j].Partition
		}
		return out[i].Offset < out[j].Offset
	})
	return out, nil
}

// Inputs reads an input topic as the contract's input records of stream.
func Inputs(ctx context.Context, kc kafkaconf.Config, topic string, stream record.Stream) ([]record.Input, error) {
	msgs, err := All(ctx, kc, topic)
	if err != nil {
		return nil, err
	}
	in := make([]record.Input, len(msgs))
	for i, m := range msgs {
		in[i] = record.Input{Stream: stream, Topic: topic, Partition: m.Partition, Offset: m.Offset, Key: m.Key, Value: m.Value}
	}
	return in, nil
}

// Partition calls fn for each record of one partition of topic, from its
// oldest offset to the end it has when the read starts, in order, through cl
// (whose retry settings apply), without holding the records in memory.
// Records deleted while the read runs are skipped: cl starts again from the
// new oldest offset.
func Partition(ctx context.Context, cl *kgo.Client, topic string, partition int32, fn func(*kgo.Record) error) error {
	admin := kadm.NewClient(cl)
	ends, err := admin.ListEndOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("end offsets of %q: %w", topic, err)
	}
	e, ok := ends.Lookup(topic, partition)
	switch {
	case !ok:
		return fmt.Errorf("topic %q has no partition %d", topic, partition)
	case e.Err != nil:
		return fmt.Errorf("end offset of %s/%d: %w", topic, partition, e.Err)
	}
	end := e.Offset
	starts, err := admin.ListStartOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("start offsets of %q: %w", topic, err)
	}
	if s, ok := starts.Lookup(topic, partition); !ok || s.Err != nil || s.Offset >= end {
		return nil // nothing to read (an error here would show in the end offsets too)
	}
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().AtStart()}})
	defer cl.RemoveConsumePartitions(map[string][]int32{topic: {partition}})
	for {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fetches.Err(); err != nil {
			return fmt.Errorf("read %s/%d: %w", topic, partition, err)
		}
		var ferr error
		done := false
		fetches.EachRecord(func(r *kgo.Record) {
			if ferr != nil || done || r.Offset >= end {
				done = true
				return
			}
			ferr = fn(r)
			done = r.Offset == end-1
		})
		if ferr != nil {
			return ferr
		}
		if done {
			return nil
		}
	}
}

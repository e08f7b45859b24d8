// Package kafkaadmin administers northpole's topics and watches consumer
// groups, on franz-go's kadm with kafkaconf's short-lived reader clients:
// topics created and checked (EnsureTopics), their partitions and record
// size limits read, a group's lag measured (GroupLag) and waited for until
// it is zero (WaitQuiet). kafkaconf only configures clients.
package kafkaadmin

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
)

// Topic describes a topic northpole needs.
type Topic struct {
	Name       string
	Partitions int32
	// Replication defaults to 1.
	Replication int16
	Configs     map[string]string
}

// EnsureTopics creates the topics that do not exist and checks that those that
// do have the requested partition count. A mismatch is an error, never fixed
// silently: co-partitioned topics with different counts would break the join.
func EnsureTopics(ctx context.Context, c kafkaconf.Config, topics ...Topic) error {
	cl, err := c.NewReaderClient(ctx)
	if err != nil {
		return err
	}
	defer cl.Close()
	admin := kadm.NewClient(cl)
	for _, t := range topics {
		if err := ctx.Err(); err != nil {
			return err
		}
		repl := t.Replication
		if repl == 0 {
			repl = 1
		}
		var configs map[string]*string
		if len(t.Configs) > 0 {
			configs = make(map[string]*string, len(t.Configs))
			for k, v := range t.Configs {
				configs[k] = &v
			}
		}
		// CreateTopic returns the topic's own error too.
		_, err := admin.CreateTopic(ctx, t.Partitions, repl, configs, t.Name)
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("create topic %q (%d partitions): %w", t.Name, t.Partitions, err)
		}
		if err := waitPartitions(ctx, admin, t.Name, t.Partitions); err != nil {
			return err
		}
	}
	return nil
}

// waitPartitions waits until topic's metadata shows it with a leader for
// every partition, and checks its partition count. A topic just created
// takes a moment to appear on every broker and to get its leaders: a client
// that writes to it before then is told it does not exist, or has no leader,
// and waits for its next metadata refresh (see minMetadataAge).
func waitPartitions(ctx context.Context, admin *kadm.Client, topic string, want int32) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		tds, err := admin.ListTopics(ctx, topic)
		if err == nil {
			err = tds[topic].Err
		}
		if err == nil {
			if got := int32(len(tds[topic].Partitions)); got != want {
				return fmt.Errorf("topic %q exists with %d partitions, but %d are required", topic, got, want)
			}
			err = leaderless(tds[topic])
		}
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topic %q did not become ready (visible, a leader for every partition): %w", topic, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// leaderless reports the first partition of td without a leader.
func leaderless(td kadm.TopicDetail) error {
	for _, p := range td.Partitions.Sorted() {
		switch {
		case p.Err != nil:
			return fmt.Errorf("partition %d: %w", p.Partition, p.Err)
		case p.Leader < 0:
			return fmt.Errorf("partition %d has no leader yet", p.Partition)
		}
	}
	return nil
}

// MaxMessageBytes returns, for each topic, the largest record batch its
// brokers accept (the topic's max.message.bytes, which defaults to the
// broker's message.max.bytes).
func MaxMessageBytes(ctx context.Context, c kafkaconf.Config, topics ...string) (map[string]int, error) {
	cl, err := c.NewReaderClient(ctx)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	configs, err := kadm.NewClient(cl).DescribeTopicConfigs(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("describe config of topics %q: %w", topics, err)
	}
	out := make(map[string]int, len(topics))
	for _, t := range topics {
		rc, err := configs.On(t, nil)
		if err == nil {
			err = rc.Err
		}
		if err != nil {
			return nil, fmt.Errorf("describe config of topic %q: %w", t, err)
		}
		for _, e := range rc.Configs {
			if e.Key != "max.message.bytes" {
				continue
			}
			n, err := strconv.Atoi(e.MaybeValue())
			if err != nil || n <= 0 {
				return nil, fmt.Errorf("topic %q: max.message.bytes is %q, not a positive number", t, e.MaybeValue())
			}
			out[t] = n
		}
		if _, ok := out[t]; !ok {
			return nil, fmt.Errorf("topic %q: the broker did not say its max.message.bytes", t)
		}
	}
	return out, nil
}

// Partitions returns the partition count of topic, or an error that names the
// topic when it does not exist.
func Partitions(ctx context.Context, c kafkaconf.Config, topic string) (int32, error) {
	cl, err := c.NewReaderClient(ctx)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	tds, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err == nil {
		err = tds[topic].Err
	}
	if err != nil {
		return 0, fmt.Errorf("topic %q: %w", topic, err)
	}
	return int32(len(tds[topic].Partitions)), nil
}

// GroupLag is how many records of topics the consumer group has not committed
// yet: the sum over their partitions of the end offset minus the committed
// one (a partition without a commit counts from 0). A group that does not
// exist yet lags by everything.
func GroupLag(ctx context.Context, admin *kadm.Client, group string, topics ...string) (int64, error) {
	ends, err := admin.ListEndOffsets(ctx, topics...)
	if err != nil {
		return 0, fmt.Errorf("end offsets of topics %q: %w", topics, err)
	}
	committed, err := admin.FetchOffsets(ctx, group)
	if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		return 0, fmt.Errorf("offsets of group %q: %w", group, err)
	}
	var lag int64
	for _, topic := range topics {
		for part, end := range ends[topic] {
			if end.Err != nil {
				return 0, fmt.Errorf("end of %s/%d: %w", topic, part, end.Err)
			}
			var from int64
			if o, ok := committed.Lookup(topic, part); ok {
				if o.Err != nil {
					return 0, fmt.Errorf("offset of group %q on %s/%d: %w", group, topic, part, o.Err)
				}
				from = max(0, o.At)
			}
			lag += max(0, end.Offset-from)
		}
	}
	return lag, nil
}

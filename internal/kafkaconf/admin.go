package kafkaconf

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/IBM/sarama"
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
func EnsureTopics(ctx context.Context, c Config, topics ...Topic) error {
	admin, err := sarama.NewClusterAdmin(c.Brokers, c.failFast())
	if err != nil {
		return fmt.Errorf("connect to kafka %v: %w", c.Brokers, c.Explain(err))
	}
	defer admin.Close()
	for _, t := range topics {
		if err := ctx.Err(); err != nil {
			return err
		}
		repl := t.Replication
		if repl == 0 {
			repl = 1
		}
		detail := &sarama.TopicDetail{NumPartitions: t.Partitions, ReplicationFactor: repl}
		if len(t.Configs) > 0 {
			detail.ConfigEntries = map[string]*string{}
			for k, v := range t.Configs {
				detail.ConfigEntries[k] = &v
			}
		}
		err := admin.CreateTopic(t.Name, detail, false)
		if err != nil && !errors.Is(err, sarama.ErrTopicAlreadyExists) {
			return fmt.Errorf("create topic %q (%d partitions): %w", t.Name, t.Partitions, err)
		}
		if err := waitPartitions(ctx, admin, t.Name, t.Partitions); err != nil {
			return err
		}
	}
	return nil
}

func waitPartitions(ctx context.Context, admin sarama.ClusterAdmin, topic string, want int32) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		md, err := admin.DescribeTopics([]string{topic})
		if err == nil && len(md) == 1 && md[0].Err == sarama.ErrNoError {
			if got := int32(len(md[0].Partitions)); got != want {
				return fmt.Errorf("topic %q exists with %d partitions, but %d are required", topic, got, want)
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topic %q did not become visible: %v", topic, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// MaxMessageBytes returns, for each topic, the largest record batch its
// brokers accept (the topic's max.message.bytes, which defaults to the
// broker's message.max.bytes).
func MaxMessageBytes(ctx context.Context, c Config, topics ...string) (map[string]int, error) {
	admin, err := sarama.NewClusterAdmin(c.Brokers, c.failFast())
	if err != nil {
		return nil, fmt.Errorf("connect to kafka %v: %w", c.Brokers, c.Explain(err))
	}
	defer admin.Close()
	out := make(map[string]int, len(topics))
	for _, t := range topics {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		entries, err := admin.DescribeConfig(sarama.ConfigResource{
			Type: sarama.TopicResource, Name: t, ConfigNames: []string{"max.message.bytes"},
		})
		if err != nil {
			return nil, fmt.Errorf("describe config of topic %q: %w", t, err)
		}
		for _, e := range entries {
			if e.Name != "max.message.bytes" {
				continue
			}
			n, err := strconv.Atoi(e.Value)
			if err != nil || n <= 0 {
				return nil, fmt.Errorf("topic %q: max.message.bytes is %q, not a positive number", t, e.Value)
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
func Partitions(c Config, topic string) (int32, error) {
	client, err := sarama.NewClient(c.Brokers, c.failFast())
	if err != nil {
		return 0, fmt.Errorf("connect to kafka %v: %w", c.Brokers, c.Explain(err))
	}
	defer client.Close()
	ps, err := client.Partitions(topic)
	if err != nil {
		return 0, fmt.Errorf("topic %q: %w", topic, err)
	}
	return int32(len(ps)), nil
}

// failFast is the config of short administrative calls at start-up: a wrong
// address or password is reported within seconds instead of after the half
// minute of retries that long-lived clients get.
func (c Config) failFast() *sarama.Config {
	cfg := c.Sarama()
	cfg.Metadata.Retry.Max = 3
	return cfg
}

// ReaderSarama is the config of short-lived readers: topicread, and the
// clients compare, bench and the demo open to read topics, offsets or a
// group's lag. It is Sarama with the start-up checks' few metadata retries.
// A long-lived client retries metadata for RetryFor (minutes) to ride out a
// broker restart, but sarama.NewClient and the client's metadata calls take
// no context: a reader with that config would ignore its caller's deadline
// and Ctrl-C for minutes when Kafka is unreachable or a topic is missing.
// Readers retry, where they retry at all, in their own loops that check ctx.
func (c Config) ReaderSarama() *sarama.Config {
	return c.failFast()
}

// NewReaderClient connects a short-lived reader (see ReaderSarama). It
// returns when ctx is done even though sarama.NewClient cannot be cancelled:
// the connection attempt then finishes in the background, and a client it
// still makes is closed.
func (c Config) NewReaderClient(ctx context.Context) (sarama.Client, error) {
	type result struct {
		client sarama.Client
		err    error
	}
	done := make(chan result, 1)
	go func() {
		client, err := sarama.NewClient(c.Brokers, c.ReaderSarama())
		done <- result{client, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, fmt.Errorf("connect to kafka %v: %w", c.Brokers, c.Explain(r.err))
		}
		return r.client, nil
	case <-ctx.Done():
		go func() {
			if r := <-done; r.client != nil {
				r.client.Close()
			}
		}()
		return nil, fmt.Errorf("connect to kafka %v: %w", c.Brokers, ctx.Err())
	}
}

// GroupLag is how many records of topics the consumer group has not committed
// yet: the sum over their partitions of the end offset minus the committed
// one (a partition without a commit counts from 0). A group that does not
// exist yet lags by everything.
func GroupLag(ctx context.Context, client sarama.Client, group string, topics ...string) (int64, error) {
	// The admin shares the client; closing it would close the client too.
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		return 0, fmt.Errorf("kafka admin: %w", err)
	}
	req := map[string][]int32{}
	for _, topic := range topics {
		ps, err := client.Partitions(topic)
		if err != nil {
			return 0, fmt.Errorf("partitions of %q: %w", topic, err)
		}
		req[topic] = ps
	}
	resp, err := admin.ListConsumerGroupOffsets(group, req)
	if err != nil && !errors.Is(err, sarama.ErrGroupIDNotFound) {
		return 0, fmt.Errorf("offsets of group %q: %w", group, err)
	}
	var lag int64
	for topic, ps := range req {
		for _, part := range ps {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
			end, err := client.GetOffset(topic, part, sarama.OffsetNewest)
			if err != nil {
				return 0, fmt.Errorf("end of %s/%d: %w", topic, part, err)
			}
			committed := int64(0)
			if resp != nil {
				if b := resp.GetBlock(topic, part); b != nil && b.Offset >= 0 {
					committed = b.Offset
				}
			}
			lag += max(0, end-committed)
		}
	}
	return lag, nil
}

// Package topicread reads whole topics: every partition from its oldest offset
// up to the high watermark seen when the read starts. The demo, the compare
// job and the tests use it to collect inputs and results.
package topicread

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/IBM/sarama"
	"golang.org/x/sync/errgroup"

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
	Headers   []*sarama.RecordHeader
	// Timestamp is the record's Kafka timestamp.
	Timestamp time.Time
}

// All reads topic from start to the current end, ordered by (partition, offset).
// A read that fails on a connection-level error (sarama sometimes closes a
// broker connection that concurrent partition readers share: "broker not
// connected") is retried from the start, twice at most. Kafka that cannot be
// reached at all, or a missing topic, is reported within seconds: the client
// is a fail-fast reader (kafkaconf.Config.ReaderSarama), not one that retries
// for minutes, and the read gives up as soon as ctx is done.
func All(ctx context.Context, kc kafkaconf.Config, topic string) ([]Message, error) {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		var out []Message
		var connected bool
		out, connected, err = readAll(ctx, kc, topic)
		// A failed connect already retried (ReaderSarama): not again.
		if err == nil || !connected || !transient(err) || ctx.Err() != nil {
			return out, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(attempt+1) * 300 * time.Millisecond):
		}
	}
	return nil, err
}

func transient(err error) bool {
	return errors.Is(err, sarama.ErrNotConnected) || errors.Is(err, sarama.ErrOutOfBrokers) ||
		errors.Is(err, sarama.ErrLeaderNotAvailable) || errors.Is(err, sarama.ErrNotLeaderForPartition) ||
		errors.Is(err, sarama.ErrClosedClient)
}

// readAll reads topic once; connected says whether the client connected.
func readAll(ctx context.Context, kc kafkaconf.Config, topic string) (out []Message, connected bool, err error) {
	client, err := kc.NewReaderClient(ctx)
	if err != nil {
		return nil, false, err
	}
	defer client.Close()
	out, err = readTopic(ctx, client, topic)
	return out, true, err
}

func readTopic(ctx context.Context, client sarama.Client, topic string) ([]Message, error) {
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		return nil, fmt.Errorf("consumer for %q: %w", topic, err)
	}
	defer consumer.Close()
	parts, err := client.Partitions(topic)
	if err != nil {
		return nil, fmt.Errorf("partitions of %q: %w", topic, err)
	}
	// Partitions are read concurrently: each fetch may wait for the broker's
	// max wait time, which adds up over many partitions.
	perPart := make([][]Message, len(parts))
	g, gctx := errgroup.WithContext(ctx)
	for i, p := range parts {
		g.Go(func() error {
			msgs, err := readPartition(gctx, client, consumer, topic, p)
			perPart[i] = msgs
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var out []Message
	for _, msgs := range perPart {
		out = append(out, msgs...)
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

func readPartition(ctx context.Context, client sarama.Client, consumer sarama.Consumer, topic string, p int32) ([]Message, error) {
	end, err := client.GetOffset(topic, p, sarama.OffsetNewest)
	if err != nil {
		return nil, fmt.Errorf("end offset of %s/%d: %w", topic, p, err)
	}
	start, err := client.GetOffset(topic, p, sarama.OffsetOldest)
	if err != nil {
		return nil, fmt.Errorf("start offset of %s/%d: %w", topic, p, err)
	}
	if start >= end {
		return nil, nil
	}
	pc, err := consumer.ConsumePartition(topic, p, start)
	if err != nil {
		return nil, fmt.Errorf("consume %s/%d: %w", topic, p, err)
	}
	defer pc.Close()
	var out []Message
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case m := <-pc.Messages():
			out = append(out, Message{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, Key: m.Key, Value: m.Value, Headers: m.Headers, Timestamp: m.Timestamp})
			if m.Offset >= end-1 {
				return out, nil
			}
		case e := <-pc.Errors():
			return nil, fmt.Errorf("read %s/%d: %w", topic, p, e)
		}
	}
}

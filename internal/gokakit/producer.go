package gokakit

import (
	"context"
	"fmt"
	"hash"
	"slices"
	"time"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
	"github.com/twmb/franz-go/pkg/kgo"
)

// closeWait bounds how long Close waits for buffered records, as goka's
// producer does.
const closeWait = 60 * time.Second

// Builder returns a goka.ProducerBuilder whose producers are kgo clients made
// with opts (see kafkaconf.Config.Kgo) and goka's brokers. Records are
// partitioned exactly as sarama's hash partitioner does, so keys land where
// goka's consumers and co-partitioning expect them, by hasherFor(topic), or by
// goka's hasher when hasherFor is nil or returns nil: goka has one hasher per
// processor, and a processor may keep its own topics partitioned otherwise
// than the ones others read.
//
// goka's own producer is sarama's AsyncProducer, in which every record passes
// through about five goroutines and their channels (input, dispatcher, topic,
// partition, broker aggregator, then successes and goka's reader) before its
// promise finishes. The packer wrote six and a half records per input event,
// so that machinery was the largest item in its profile. kgo appends a record
// to its partition's batch under a lock and finishes it from one goroutine per
// partition. goka consumes with sarama as before; only producing changes.
func Builder(opts []kgo.Opt, hasherFor func(topic string) func() hash.Hash32) goka.ProducerBuilder {
	return func(brokers []string, _ string, hasher func() hash.Hash32) (goka.Producer, error) {
		all := append(slices.Clone(opts),
			kgo.SeedBrokers(brokers...),
			kgo.RecordPartitioner(topicPartitioner{byDefault: hasher, hasherFor: hasherFor}),
		)
		cl, err := kgo.NewClient(all...)
		if err != nil {
			return nil, fmt.Errorf("kafka producer: %w", err)
		}
		return &producer{cl: cl}, nil
	}
}

// topicPartitioner is sarama's hash partitioner with the hasher of each topic.
type topicPartitioner struct {
	byDefault func() hash.Hash32
	hasherFor func(topic string) func() hash.Hash32
}

func (p topicPartitioner) ForTopic(topic string) kgo.TopicPartitioner {
	hasher := p.byDefault
	if p.hasherFor != nil {
		if h := p.hasherFor(topic); h != nil {
			hasher = h
		}
	}
	sum := func(key []byte) uint32 {
		h := hasher()
		h.Write(key)
		return h.Sum32()
	}
	return kgo.StickyKeyPartitioner(kgo.SaramaCompatHasher(sum)).ForTopic(topic)
}

type producer struct{ cl *kgo.Client }

func (p *producer) Emit(topic, key string, value []byte) *goka.Promise {
	return p.EmitWithHeaders(topic, key, value, nil)
}

// EmitWithHeaders finishes the promise with a sarama message that carries what
// goka reads from it: the topic, partition and offset (a table write stores
// the offset as the table's).
func (p *producer) EmitWithHeaders(topic, key string, value []byte, headers goka.Headers) *goka.Promise {
	promise, finish := goka.NewPromiseWithFinisher()
	r := &kgo.Record{Topic: topic, Key: []byte(key), Value: value}
	if len(headers) > 0 {
		r.Headers = make([]kgo.RecordHeader, 0, len(headers))
		for k, v := range headers {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: k, Value: v})
		}
	}
	p.cl.Produce(context.Background(), r, func(r *kgo.Record, err error) {
		msg := &sarama.ProducerMessage{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}
		if err != nil {
			err = fmt.Errorf("produce to topic %s, key %q: %w", topic, key, err)
		}
		finish(msg, err)
	})
	return promise
}

// Close waits for the buffered records (at most closeWait), then closes the
// client; records still buffered then fail, and their promises say so.
func (p *producer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), closeWait)
	defer cancel()
	err := p.cl.Flush(ctx)
	p.cl.Close()
	if err != nil {
		return fmt.Errorf("kafka producer: flush at close: %w", err)
	}
	return nil
}

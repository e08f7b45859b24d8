package gokakit

import (
	"context"
	"fmt"
	"hash"
	"slices"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
	"github.com/twmb/franz-go/pkg/kgo"
)

// closeWait bounds how long Close waits for buffered records, as goka's
// producer does.
const closeWait = 60 * time.Second

// Writer writes a goka processor's records with a franz-go client (kgo):
// goka's own producer is sarama's AsyncProducer, in which every record passes
// through about five goroutines and their channels (input, dispatcher,
// topic, partition, broker aggregator, then successes and goka's reader)
// before its promise finishes, where kgo appends a record to its partition's
// batch under a lock and finishes it from one goroutine per partition. goka
// consumes with sarama as before; only producing changes.
//
// A Writer is not a goka.Producer but what one is made of (Producer), so
// that a processor with a goka.Producer of its own (the packer's keeps its
// writes in order) makes the one promise goka sees, and a record costs no
// promise of a layer between.
type Writer struct{ cl *kgo.Client }

// NewWriter is a Writer whose client is made with opts (see
// kafkaconf.Config.Kgo) and goka's brokers and hasher. Records are
// partitioned exactly as sarama's hash partitioner does with that hasher, so
// keys land where goka's consumers and co-partitioning expect them.
func NewWriter(opts []kgo.Opt, brokers []string, hasher func() hash.Hash32) (*Writer, error) {
	all := append(slices.Clone(opts),
		kgo.SeedBrokers(brokers...),
		kgo.RecordPartitioner(hashPartitioner{hasher}),
	)
	cl, err := kgo.NewClient(all...)
	if err != nil {
		return nil, fmt.Errorf("kafka producer: %w", err)
	}
	return &Writer{cl: cl}, nil
}

// Producer is a goka.ProducerBuilder of Writers made with opts
// (NewWriter), whose promises finish with Kafka's answer.
func Producer(opts []kgo.Opt) goka.ProducerBuilder {
	return func(brokers []string, _ string, hasher func() hash.Hash32) (goka.Producer, error) {
		w, err := NewWriter(opts, brokers, hasher)
		if err != nil {
			return nil, err
		}
		return promising{w}, nil
	}
}

// promising is a goka.Producer on a Writer.
type promising struct{ *Writer }

func (p promising) Emit(topic, key string, value []byte) *goka.Promise {
	return p.EmitWithHeaders(topic, key, value, nil)
}

func (p promising) EmitWithHeaders(topic, key string, value []byte, headers goka.Headers) *goka.Promise {
	promise, finish := goka.NewPromiseWithFinisher()
	p.Write(topic, key, value, headers, func(_ uint64, msg *sarama.ProducerMessage, err error) { finish(msg, err) }, 0)
	return promise
}

// hashPartitioner is sarama's hash partitioner with goka's hasher.
type hashPartitioner struct{ hasher func() hash.Hash32 }

func (p hashPartitioner) ForTopic(topic string) kgo.TopicPartitioner {
	// kgo partitions one record of a topic at a time, so one hasher per
	// topic serves every record, without an allocation each.
	h := p.hasher()
	sum := func(key []byte) uint32 {
		h.Reset()
		h.Write(key)
		return h.Sum32()
	}
	return kgo.StickyKeyPartitioner(kgo.SaramaCompatHasher(sum)).ForTopic(topic)
}

// write is one record in flight and room for its key: one allocation for
// both, made once and used again for record after record (writes), on the
// packer's hottest path. It is also the record's context (kgo's
// Record.Context, which the client hands back with the record), through
// which the one promise function, answered, finds the write without a
// closure per record.
//
// The message goka reads of the answer is not part of it: a promise keeps
// its message for callbacks added after it finished, so the message must
// live as long as the promise, where the write is done with once kgo hands
// the record back (kgo touches no record after its promise).
type write struct {
	context.Context
	rec  kgo.Record
	done Answer
	tag  uint64
	key  [keyRoom]byte
}

// writes are the writes not in flight. A write's Context is set once: kgo
// may still ask a record's context whether it is done from a goroutine that
// waits for an unknown topic, unordered with the record's promise.
var writes = sync.Pool{New: func() any { return &write{Context: context.Background()} }}

// keyRoom holds the keys of nearly every record the packer writes: a line,
// a row's line, window and short id, a late record's position.
const keyRoom = 48

// Answer is told Kafka's answer to a write: the tag the write was given,
// msg what goka reads of the record (the topic, partition and offset: a
// table write stores the offset as the table's), err why it failed.
type Answer func(tag uint64, msg *sarama.ProducerMessage, err error)

// Write writes one record and calls done with Kafka's answer and tag. The
// tag tells a caller's writes apart (the packer's sequence numbers) with
// one done for all of them, where a closure per write would cost an
// allocation.
func (w *Writer) Write(topic, key string, value []byte, headers goka.Headers, done Answer, tag uint64) {
	wr := writes.Get().(*write)
	wr.done, wr.tag = done, tag
	wr.rec = kgo.Record{Topic: topic, Key: append(wr.key[:0:keyRoom], key...), Value: value, Headers: wr.rec.Headers[:0], Context: wr}
	for k, v := range headers {
		wr.rec.Headers = append(wr.rec.Headers, kgo.RecordHeader{Key: k, Value: v})
	}
	w.cl.Produce(context.Background(), &wr.rec, answered)
}

// answered is every write's promise. It takes what the answer needs from
// the record, gives the write back, then answers.
func answered(r *kgo.Record, err error) {
	wr := r.Context.(*write)
	msg := &sarama.ProducerMessage{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}
	if err != nil {
		err = fmt.Errorf("produce to topic %s, key %q: %w", r.Topic, r.Key, err)
	}
	done, tag := wr.done, wr.tag
	clear(wr.rec.Headers) // the values are the caller's
	wr.rec = kgo.Record{Headers: wr.rec.Headers[:0]}
	wr.done = nil
	writes.Put(wr)
	done(tag, msg, err)
}

// Close waits for the buffered records (at most closeWait), then closes the
// client; records still buffered then fail, and their answers say so.
func (w *Writer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), closeWait)
	defer cancel()
	err := w.cl.Flush(ctx)
	w.cl.Close()
	if err != nil {
		return fmt.Errorf("kafka producer: flush at close: %w", err)
	}
	return nil
}

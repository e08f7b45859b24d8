package gokakit

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"

	"github.com/northpole-workshop/northpole/internal/kafkaadmin"
	"github.com/northpole-workshop/northpole/internal/testsupport/testkafka"
	"github.com/northpole-workshop/northpole/internal/topicread"
)

// TestProducerAgainstBroker writes keys through the producer into topics of
// 1, 3, 4 and 8 partitions, with sarama's default hasher (FNV-1a, as goka's)
// and another one (CRC-32), and checks that every record lands in the
// partition sarama's hash partitioner (goka's) picks, that the promise
// reports the record's real partition and offset, and that value and headers
// arrive as written: a third of the records have no headers, so a write
// reused after one with headers must not keep them.
func TestProducerAgainstBroker(t *testing.T) {
	kc := testkafka.Config(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	hashers := map[string]func() hash.Hash32{
		"fnv-1a": fnv.New32a,
		"crc32":  func() hash.Hash32 { return crc32.NewIEEE() },
	}
	for name, hasher := range hashers {
		for _, parts := range []int32{1, 3, 4, 8} {
			t.Run(fmt.Sprintf("%s/%d", name, parts), func(t *testing.T) {
				topic := testkafka.Unique("gokaproducer")
				if err := kafkaadmin.EnsureTopics(ctx, kc, kafkaadmin.Topic{Name: topic, Partitions: parts}); err != nil {
					t.Fatal(err)
				}
				p, err := Producer(kc.Kgo())(kc.Brokers, "test", hasher)
				if err != nil {
					t.Fatal(err)
				}
				want := sarama.NewCustomHashPartitioner(hasher)(topic)
				type sent struct {
					key         string
					withHeaders bool
					partition   int32
					offset      int64
				}
				var mu sync.Mutex
				var got []sent
				var wg sync.WaitGroup
				for i := range 200 {
					key := fmt.Sprintf("%s|k%d", []string{"S", "M", "L", "XL"}[i%4], i)
					if i%5 == 0 {
						key += strings.Repeat("-", keyRoom) // longer than a write's own room
					}
					var headers goka.Headers
					if i%3 != 0 {
						headers = goka.Headers{"h": []byte(key)}
					}
					wg.Add(1)
					p.EmitWithHeaders(topic, key, []byte("v-"+key), headers).
						ThenWithMessage(func(msg *sarama.ProducerMessage, err error) {
							defer wg.Done()
							if err != nil {
								t.Errorf("emit %s: %v", key, err)
								return
							}
							mu.Lock()
							got = append(got, sent{key, headers != nil, msg.Partition, msg.Offset})
							mu.Unlock()
						})
				}
				wg.Wait()
				if err := p.Close(); err != nil {
					t.Fatal(err)
				}
				msgs, err := topicread.All(ctx, kc, topic)
				if err != nil {
					t.Fatal(err)
				}
				at := map[[2]int64]topicread.Message{}
				for _, m := range msgs {
					at[[2]int64{int64(m.Partition), m.Offset}] = m
				}
				if len(got) != 200 || len(msgs) != 200 {
					t.Fatalf("%d promises finished, %d records in the topic; want 200 each", len(got), len(msgs))
				}
				for _, s := range got {
					wp, err := want.Partition(&sarama.ProducerMessage{Key: sarama.StringEncoder(s.key)}, parts)
					if err != nil {
						t.Fatal(err)
					}
					if s.partition != wp {
						t.Errorf("key %s went to partition %d, sarama's partitioner says %d", s.key, s.partition, wp)
					}
					m, ok := at[[2]int64{int64(s.partition), s.offset}]
					switch {
					case !ok:
						t.Errorf("key %s: no record at the promised partition %d, offset %d", s.key, s.partition, s.offset)
					case string(m.Key) != s.key || string(m.Value) != "v-"+s.key:
						t.Errorf("at partition %d offset %d: key %q value %q, want key %q", s.partition, s.offset, m.Key, m.Value, s.key)
					case !s.withHeaders && len(m.Headers) != 0,
						s.withHeaders && (len(m.Headers) != 1 || string(m.Headers[0].Key) != "h" || string(m.Headers[0].Value) != s.key):
						t.Errorf("key %s (headers sent: %v): headers %v", s.key, s.withHeaders, m.Headers)
					}
				}
			})
		}
	}
}

// TestProducerReportsFailure: a record that cannot be written finishes its
// promise with an error that names the topic; it is not dropped silently.
func TestProducerReportsFailure(t *testing.T) {
	kc := testkafka.Config(t)
	kc.RetryFor = 3 * time.Second
	p, err := Producer(kc.Kgo())(kc.Brokers, "test", fnv.New32a)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	topic := testkafka.Unique("gokaproducer-missing")
	done := make(chan error, 1)
	p.Emit(topic, "k", []byte("v")).Then(func(err error) { done <- err })
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), topic) {
			t.Fatalf("emit to a missing topic: err = %v, want an error naming %s", err, topic)
		}
		if errors.Is(err, context.Canceled) {
			t.Fatalf("failed by cancellation, not by the broker: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the promise of a record to a missing topic never finished")
	}
}

// TestWriterAnswersWithTag: each answer carries the tag its write was
// given, once, with the partition and offset the record was written at.
func TestWriterAnswersWithTag(t *testing.T) {
	kc := testkafka.Config(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	topic := testkafka.Unique("gokawriter")
	if err := kafkaadmin.EnsureTopics(ctx, kc, kafkaadmin.Topic{Name: topic, Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	w, err := NewWriter(kc.Kgo(), kc.Brokers, fnv.New32a)
	if err != nil {
		t.Fatal(err)
	}
	const n = 100
	var mu sync.Mutex
	answers := map[uint64][2]int64{} // tag: partition, offset
	var wg sync.WaitGroup
	wg.Add(n)
	done := func(tag uint64, msg *sarama.ProducerMessage, err error) {
		defer wg.Done()
		mu.Lock()
		defer mu.Unlock()
		if _, again := answers[tag]; again || err != nil {
			t.Errorf("tag %d: answered again: %v, err %v", tag, again, err)
		}
		answers[tag] = [2]int64{int64(msg.Partition), msg.Offset}
	}
	for i := range uint64(n) {
		w.Write(topic, fmt.Sprintf("k%d", i), []byte(fmt.Sprint(i*7)), nil, done, i*7)
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	msgs, err := topicread.All(ctx, kc, topic)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != n || len(answers) != n {
		t.Fatalf("%d records, %d answers; want %d each", len(msgs), len(answers), n)
	}
	for _, m := range msgs {
		tag, err := strconv.ParseUint(string(m.Value), 10, 64) // the tag it was written with
		if err != nil {
			t.Fatal(err)
		}
		if at, ok := answers[tag]; !ok || at != [2]int64{int64(m.Partition), m.Offset} {
			t.Errorf("record %s at partition %d offset %d: the answer with its tag says %v (%v)", m.Value, m.Partition, m.Offset, at, ok)
		}
	}
}

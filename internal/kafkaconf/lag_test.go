package kafkaconf_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/kfakebroker"
)

func TestGroupLag(t *testing.T) {
	kf, err := kfakebroker.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer kf.Close()
	kc := kafkaconf.Config{Brokers: kf.Addrs()}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := kafkaconf.EnsureTopics(ctx, kc, kafkaconf.Topic{Name: "a", Partitions: 2}, kafkaconf.Topic{Name: "b", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	// A hash partitioner would move the records; place them by hand.
	pcfg := kc.Sarama()
	pcfg.Producer.Partitioner = sarama.NewManualPartitioner
	prod, err := sarama.NewSyncProducer(kc.Brokers, pcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	send := func(topic string, part int32, n int) {
		for range n {
			if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: part, Value: sarama.StringEncoder("x")}); err != nil {
				t.Fatal(err)
			}
		}
	}
	client, err := sarama.NewClient(kc.Brokers, kc.Sarama())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	lag := func() int64 {
		t.Helper()
		n, err := kafkaconf.GroupLag(ctx, client, "g", "a", "b")
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	send("a", 0, 3)
	send("a", 1, 2)
	send("b", 0, 4)
	if got := lag(); got != 9 {
		t.Fatalf("lag of a group that never committed = %d, want 9", got)
	}
	// The group consumes a/0 to its end and the first record of b/0, and
	// commits that when its session ends.
	cg, err := sarama.NewConsumerGroupFromClient("g", client)
	if err != nil {
		t.Fatal(err)
	}
	h := &markUpTo{want: map[string]int64{"a/0": 3, "b/0": 1}, done: make(chan struct{})}
	cgctx, stop := context.WithCancel(ctx)
	go func() { <-h.done; stop() }()
	if err := cg.Consume(cgctx, []string{"a", "b"}, h); err != nil {
		t.Fatal(err)
	}
	if err := cg.Close(); err != nil {
		t.Fatal(err)
	}
	// a/0 fully committed, a/1 lags 2, b/0 lags 3.
	if got := lag(); got != 5 {
		t.Fatalf("lag after commits = %d, want 5", got)
	}
}

// markUpTo marks, per topic/partition, records below an offset, and closes
// done once every one of them is marked.
type markUpTo struct {
	mu     sync.Mutex
	want   map[string]int64
	marked map[string]int64
	done   chan struct{}
	once   sync.Once
}

func (h *markUpTo) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *markUpTo) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *markUpTo) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	key := fmt.Sprintf("%s/%d", c.Topic(), c.Partition())
	for m := range c.Messages() {
		if m.Offset >= h.want[key] {
			continue
		}
		s.MarkMessage(m, "")
		h.mu.Lock()
		if h.marked == nil {
			h.marked = map[string]int64{}
		}
		h.marked[key] = m.Offset + 1
		all := true
		for k, w := range h.want {
			all = all && h.marked[k] == w
		}
		h.mu.Unlock()
		if all {
			h.once.Do(func() { close(h.done) })
		}
	}
	return nil
}

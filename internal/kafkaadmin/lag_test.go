package kafkaadmin_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/northpole-workshop/northpole/internal/kafkaadmin"
	"github.com/northpole-workshop/northpole/internal/testsupport/testkafka"
)

func TestGroupLag(t *testing.T) {
	kc := testkafka.Config(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, b, group := testkafka.Unique("lag-a"), testkafka.Unique("lag-b"), testkafka.Unique("lag-g")
	if err := kafkaadmin.EnsureTopics(ctx, kc, kafkaadmin.Topic{Name: a, Partitions: 2}, kafkaadmin.Topic{Name: b, Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	// A hash partitioner would move the records; place them by hand.
	prod, err := kgo.NewClient(append(kc.Kgo(), kgo.SeedBrokers(kc.Brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	send := func(topic string, part int32, n int) {
		for range n {
			if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: part, Value: []byte("x")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	reader, err := kc.NewReaderClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	admin := kadm.NewClient(reader)
	defer admin.Close()
	lag := func() int64 {
		t.Helper()
		n, err := kafkaadmin.GroupLag(ctx, admin, group, a, b)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	send(a, 0, 3)
	send(a, 1, 2)
	send(b, 0, 4)
	if got := lag(); got != 9 {
		t.Fatalf("lag of a group that never committed = %d, want 9", got)
	}
	// The group has consumed a/0 to its end and the first record of b/0.
	var commit kadm.Offsets
	commit.AddOffset(a, 0, 3, -1)
	commit.AddOffset(b, 0, 1, -1)
	if err := admin.CommitAllOffsets(ctx, group, commit); err != nil {
		t.Fatal(err)
	}
	// a/0 fully committed, a/1 lags 2, b/0 lags 3.
	if got := lag(); got != 5 {
		t.Fatalf("lag after commits = %d, want 5", got)
	}
}

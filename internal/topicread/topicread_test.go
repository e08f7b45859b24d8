package topicread_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/northpole-workshop/northpole/internal/kafkaadmin"
	"github.com/northpole-workshop/northpole/internal/testsupport/testkafka"
	"github.com/northpole-workshop/northpole/internal/topicread"
)

func TestAll(t *testing.T) {
	kc := testkafka.Config(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	topic := testkafka.Unique("topicread")
	if err := kafkaadmin.EnsureTopics(ctx, kc, kafkaadmin.Topic{Name: topic, Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	p, err := kgo.NewClient(append(kc.Kgo(), kgo.SeedBrokers(kc.Brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	for i, part := range []int32{1, 0, 1} {
		r := &kgo.Record{Topic: topic, Partition: part, Value: []byte([]string{"a", "b", "c"}[i])}
		if err := p.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()

	msgs, err := topicread.All(ctx, kc, topic)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range msgs {
		got = append(got, string(m.Value))
	}
	if strings.Join(got, ",") != "b,a,c" { // by partition, then offset
		t.Errorf("read %v, want [b a c]", got)
	}

	// A missing topic is reported within seconds, not after the minutes of
	// metadata retries a long-lived client makes.
	began := time.Now()
	_, err = topicread.All(ctx, kc, "missing")
	if err == nil || !strings.Contains(err.Error(), `"missing"`) {
		t.Errorf("reading a missing topic: %v, want an error naming it", err)
	}
	if took := time.Since(began); took > 15*time.Second {
		t.Errorf("reading a missing topic took %v", took)
	}
}

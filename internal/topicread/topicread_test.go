package topicread_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/kfakebroker"
	"github.com/northpole-workshop/northpole/internal/topicread"
)

func TestAll(t *testing.T) {
	kf, err := kfakebroker.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer kf.Close()
	kc := kafkaconf.Config{Brokers: kf.Addrs()}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := kafkaconf.EnsureTopics(ctx, kc, kafkaconf.Topic{Name: "t", Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	cfg := kc.Sarama()
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	p, err := sarama.NewSyncProducer(kc.Brokers, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, part := range []int32{1, 0, 1} {
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: "t", Partition: part, Value: sarama.StringEncoder([]string{"a", "b", "c"}[i])}); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()

	msgs, err := topicread.All(ctx, kc, "t")
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

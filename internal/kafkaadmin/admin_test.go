package kafkaadmin_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/kafkaadmin"
	"github.com/northpole-workshop/northpole/internal/testsupport/testkafka"
)

// TestPartitions: a topic's count, an error naming a topic that does not
// exist, and the caller's context obeyed (a cancelled one asks nothing).
func TestPartitions(t *testing.T) {
	kc := testkafka.Config(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	topic, missing := testkafka.Unique("parts"), testkafka.Unique("parts-missing")
	if err := kafkaadmin.EnsureTopics(ctx, kc, kafkaadmin.Topic{Name: topic, Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	if n, err := kafkaadmin.Partitions(ctx, kc, topic); err != nil || n != 3 {
		t.Errorf("Partitions(%s) = %d, %v; want 3", topic, n, err)
	}
	if n, err := kafkaadmin.Partitions(ctx, kc, missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("Partitions of a missing topic = %d, %v; want an error naming it", n, err)
	}
	cancelled, cancelNow := context.WithCancel(ctx)
	cancelNow()
	if n, err := kafkaadmin.Partitions(cancelled, kc, topic); !errors.Is(err, context.Canceled) {
		t.Errorf("Partitions with a cancelled context = %d, %v; want context.Canceled", n, err)
	}
}

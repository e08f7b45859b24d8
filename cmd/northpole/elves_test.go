package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/kafkaadmin"
	"github.com/northpole-workshop/northpole/internal/testsupport/testkafka"
	"github.com/northpole-workshop/northpole/internal/topicread"
)

// TestElvesHallsAndPartitions: elves --halls on a topic they create gets the
// partitions asked for, writes every line (each size in each hall, the final
// heartbeats reach them all) and says how the lines fill the partitions; a
// later run that asks for another count is refused, one that asks for none
// uses the topic as it is.
func TestElvesHallsAndPartitions(t *testing.T) {
	kc := testkafka.Config(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	topic := testkafka.Unique("elves-halls")
	brokers := strings.Join(kc.Brokers, ",")
	elves := func(extra ...string) (string, int) {
		return runCLI(t, ctx, append([]string{"elves", "toys", "--brokers", brokers, "--topic", topic, "--count", "300", "--bad-rate", "0.1"}, extra...)...)
	}

	out, code := elves("--partitions", "8", "--halls", "4")
	if code != 0 || !strings.Contains(out, "16 lines over 8 partitions: ") {
		t.Fatalf("exit %d, want 0 and the lines over 8 partitions in the summary:\n%s", code, out)
	}
	if n, err := kafkaadmin.Partitions(ctx, kc, topic); err != nil || n != 8 {
		t.Fatalf("topic %q has %d partitions (%v), want the 8 asked for", topic, n, err)
	}
	recs, err := topicread.All(ctx, kc, topic)
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]bool{}
	for _, r := range recs {
		if size, hall, ok := strings.Cut(string(r.Key), "/"); ok && strings.HasPrefix(hall, "hall-") && len(size) <= 2 && !strings.Contains(hall, "/") {
			lines[string(r.Key)] = true
		}
	}
	if len(lines) != 16 {
		t.Errorf("records on %d lines of the form SIZE/hall-K, want 16: %v", len(lines), lines)
	}

	if out, code := elves("--partitions", "4", "--halls", "4"); code != 1 || !strings.Contains(out, "exists with 8 partitions, not the 4 asked for") {
		t.Errorf("another partition count: exit %d, want 1 and the counts:\n%s", code, out)
	}
	if out, code := elves("--halls", "4"); code != 0 || !strings.Contains(out, "16 lines over 8 partitions") {
		t.Errorf("no partition count: exit %d, want 0 on the topic as it is:\n%s", code, out)
	}
}

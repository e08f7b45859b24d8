package producers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/northpole-workshop/northpole/internal/kafkaadmin"
	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/testsupport/testkafka"
	"github.com/northpole-workshop/northpole/internal/topicread"
)

// startKafka gives the test a Kafka (testkafka) with the given topics, 4
// partitions each, named uniquely; it returns their names in order.
func startKafka(t *testing.T, topics ...string) (kafkaconf.Config, []string) {
	t.Helper()
	kc := testkafka.Config(t)
	kc.ClientID = "elves-test"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var ts []kafkaadmin.Topic
	var names []string
	for _, name := range topics {
		ts = append(ts, kafkaadmin.Topic{Name: testkafka.Unique(name), Partitions: 4})
		names = append(names, ts[len(ts)-1].Name)
	}
	if err := kafkaadmin.EnsureTopics(ctx, kc, ts...); err != nil {
		t.Fatal(err)
	}
	return kc, names
}

type consumed struct {
	partition int32
	offset    int64
	key       []byte
	value     []byte
}

// readTopic reads every record of topic, partition by partition, in offset
// order, one slice per partition of the topic.
func readTopic(t *testing.T, kc kafkaconf.Config, topic string) [][]consumed {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := kafkaadmin.Partitions(ctx, kc, topic)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := topicread.All(ctx, kc, topic)
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]consumed, n)
	for _, m := range msgs {
		out[m.Partition] = append(out[m.Partition], consumed{m.Partition, m.Offset, m.Key, m.Value})
	}
	return out
}

// run runs cfg's elves on kc (New, then Run), progress reporting to
// progress.
func run(ctx context.Context, kc kafkaconf.Config, cfg Config, progress func(Stats)) (Stats, error) {
	cfg.Kafka, cfg.Progress = kc, progress
	e, err := New(cfg, nil)
	if err != nil {
		return Stats{}, err
	}
	return e.Run(ctx)
}

func TestRunKfake(t *testing.T) {
	t.Parallel()
	kc, topics := startKafka(t, "toys")
	cfg := DefaultConfig(record.Toys)
	cfg.Topic = topics[0]
	cfg.Count = 2000
	cfg.Seed = 7
	cfg.LateRate, cfg.DupRate, cfg.BadRate = 0.05, 0.05, 0.05
	cfg.Disorder = 2 * time.Second
	plan := mustPlan(t, cfg)

	var progressCalls []time.Time
	var mu sync.Mutex
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stats, err := run(ctx, kc, cfg, func(Stats) {
		mu.Lock()
		progressCalls = append(progressCalls, time.Now())
		mu.Unlock()
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if stats.Sent != int64(len(plan)) || stats.Acked != stats.Sent || stats.Failed != 0 || stats.Records != 2000 {
		t.Fatalf("stats %+v, want %d sent and acked, 2000 records", stats, len(plan))
	}
	wantKinds := map[string]int64{}
	for _, m := range plan {
		wantKinds[m.Kind]++
	}
	if fmt.Sprint(stats.Kinds) != fmt.Sprint(wantKinds) {
		t.Fatalf("stats kinds %v, want %v", stats.Kinds, wantKinds)
	}
	if !stats.FinalHeartbeatAt.Equal(plan[len(plan)-1].MadeAt) {
		t.Fatalf("final heartbeat at %v, plan says %v", stats.FinalHeartbeatAt, plan[len(plan)-1].MadeAt)
	}
	mu.Lock()
	for i := 1; i < len(progressCalls); i++ {
		if d := progressCalls[i].Sub(progressCalls[i-1]); d < DefaultProgressEvery {
			t.Errorf("progress calls %v apart", d)
		}
	}
	mu.Unlock()

	parts := readTopic(t, kc, cfg.Topic)
	var all []consumed
	keyPart := map[string]int32{}
	hash := sarama.NewHashPartitioner(cfg.Topic)
	for p, recs := range parts {
		for _, r := range recs {
			all = append(all, r)
			k := string(r.key)
			if q, ok := keyPart[k]; ok && q != int32(p) {
				t.Fatalf("key %q in partitions %d and %d", k, q, p)
			}
			keyPart[k] = int32(p)
			want, err := hash.Partition(&sarama.ProducerMessage{Key: sarama.ByteEncoder(r.key)}, int32(len(parts)))
			if err != nil || want != int32(p) {
				t.Fatalf("key %q in partition %d, FNV-1a hash says %d (%v)", k, p, want, err)
			}
		}
	}
	if len(all) != len(plan) {
		t.Fatalf("read %d records, plan has %d", len(all), len(plan))
	}
	got := make([]string, len(all))
	for i, r := range all {
		got[i] = string(r.key) + "\x00" + string(r.value)
	}
	want := make([]string, len(plan))
	for i, m := range plan {
		want[i] = string(m.Key) + "\x00" + string(m.Value)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatal("the topic's records are not the plan's multiset")
	}

	// In each partition, the final heartbeats come after everything else, and
	// the contract, applied in offset order, finds the planned late and
	// duplicate records.
	byValue := map[string]Message{}
	for _, m := range plan {
		if _, ok := byValue[string(m.Value)]; !ok || m.Kind == KindLate {
			byValue[string(m.Value)] = m
		}
	}
	finalElf := FinalElfName(record.Toys)
	classes := map[string]int{}
	for p, recs := range parts {
		var msgs []Message
		sawFinal := false
		for _, r := range recs {
			isFinal := strings.Contains(string(r.value), `"elf":"`+finalElf+`"`)
			if sawFinal && !isFinal {
				t.Fatalf("partition %d offset %d: %q after a final heartbeat", p, r.offset, r.value)
			}
			sawFinal = sawFinal || isFinal
			msgs = append(msgs, Message{Key: r.key, Value: r.value})
		}
		for _, c := range classify(record.Toys, cfg, msgs) {
			classes[c]++
		}
	}
	if classes["late"] != int(wantKinds[KindLate]) || classes["duplicate"] != int(wantKinds[KindDup]) {
		t.Fatalf("contract in offset order: %v; plan: %d late, %d dup", classes, wantKinds[KindLate], wantKinds[KindDup])
	}
	if classes["dead"] != int(stats.Bad()) {
		t.Fatalf("contract finds %d dead letters, plan made %d", classes["dead"], stats.Bad())
	}
}

func TestRunDurationAndRate(t *testing.T) {
	t.Parallel()
	kc, topics := startKafka(t, "boxes-d")
	cfg := DefaultConfig(record.Boxes)
	cfg.Topic = topics[0]
	cfg.Count, cfg.Duration = 0, 500*time.Millisecond
	cfg.Rate = 400
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	stats, err := run(ctx, kc, cfg, nil)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	elapsed := time.Since(start)
	t.Logf("elapsed %v stats %+v", elapsed, stats)
	if elapsed < 450*time.Millisecond {
		t.Fatalf("a 500 ms run ended after %v", elapsed)
	}
	// The limiter lets at most 400/s through, plus a burst of 20 ms: an upper
	// bound however slow the machine is (a lower one would measure the
	// machine, not the limiter).
	if limit := int64(400*elapsed.Seconds()) + 1 + int64(400*0.02); stats.Records > limit || stats.Records == 0 {
		t.Fatalf("%d records in %v at 400/s, want 1 to %d", stats.Records, elapsed, limit)
	}
	if stats.Acked != stats.Sent || stats.FinalHeartbeatAt.IsZero() {
		t.Fatalf("stats %+v: want everything acked and final heartbeats", stats)
	}
	n := 0
	for _, recs := range readTopic(t, kc, cfg.Topic) {
		n += len(recs)
	}
	if int64(n) != stats.Sent {
		t.Fatalf("topic holds %d records, stats say %d sent", n, stats.Sent)
	}
}

func TestRunCancel(t *testing.T) {
	t.Parallel()
	kc, topics := startKafka(t, "toys")
	cfg := DefaultConfig(record.Toys)
	cfg.Topic = topics[0]
	cfg.Count = 1_000_000
	cfg.Rate = 2000
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	stats, err := run(ctx, kc, cfg, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after cancel: err = %v, want context.Canceled", err)
	}
	if stats.Records == 0 || stats.Records > 5000 {
		t.Fatalf("cancelled run sent %d records", stats.Records)
	}
	if stats.Acked != stats.Sent || stats.Failed != 0 {
		t.Fatalf("cancelled run: %+v, want everything sent acked", stats)
	}
	// The final heartbeats were still written, after everything else.
	parts := readTopic(t, kc, cfg.Topic)
	n := 0
	for _, recs := range parts {
		n += len(recs)
	}
	if int64(n) != stats.Sent {
		t.Fatalf("topic holds %d records, stats say %d sent", n, stats.Sent)
	}
	if stats.FinalHeartbeatAt.IsZero() {
		t.Fatal("no final heartbeats after cancel")
	}
	for _, s := range record.Sizes {
		p, _ := sarama.NewHashPartitioner(cfg.Topic).Partition(&sarama.ProducerMessage{Key: sarama.StringEncoder(s)}, 4)
		var last consumed
		for _, r := range parts[p] {
			if string(r.key) == s {
				last = r
			}
		}
		rec, err := record.Parse(record.Toys, last.key, last.value)
		if err != nil || !rec.Heartbeat || !rec.MadeAt.Equal(stats.FinalHeartbeatAt) {
			t.Fatalf("last record of size %s is %q (%v), want the final heartbeat", s, last.value, err)
		}
	}
}

func TestRunErrors(t *testing.T) {
	t.Parallel()
	kc, _ := startKafka(t)
	cfg := DefaultConfig(record.Toys)
	cfg.Topic = "no-such-topic"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := run(ctx, kc, cfg, nil); err == nil || !strings.Contains(err.Error(), `"no-such-topic"`) {
		t.Fatalf("Run to a missing topic: %v", err)
	}
	cfg = DefaultConfig(record.Toys)
	cfg.Elves = 0
	if _, err := run(ctx, kc, cfg, nil); err == nil || !strings.Contains(err.Error(), "elves must be between") {
		t.Fatalf("Run with 0 elves: %v", err)
	}
	if _, err := run(ctx, kafkaconf.Config{}, DefaultConfig(record.Toys), nil); err == nil || !strings.Contains(err.Error(), "no brokers") {
		t.Fatalf("Run without brokers: %v", err)
	}
}

func TestLimiter(t *testing.T) {
	t.Parallel()
	l := newLimiter(1000)
	start := time.Now()
	for range 200 {
		if err := l.wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d < 180*time.Millisecond || d > 2*time.Second {
		t.Fatalf("200 tokens at 1000/s took %v", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	slow := newLimiter(0.5)
	_ = slow.wait(ctx) // the first slot is now
	if err := slow.wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("wait on a cancelled context: %v", err)
	}
}

// TestRunProducerErrors: records the broker refuses are counted and reported
// with topic and partition, never dropped silently.
func TestRunProducerErrors(t *testing.T) {
	t.Parallel()
	kc := testkafka.Config(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tiny := kafkaadmin.Topic{Name: testkafka.Unique("tiny"), Partitions: 4, Configs: map[string]string{"max.message.bytes": "100"}}
	if err := kafkaadmin.EnsureTopics(ctx, kc, tiny); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig(record.Toys)
	cfg.Topic = tiny.Name
	cfg.Count = 200
	stats, err := run(ctx, kc, cfg, nil)
	if err == nil {
		t.Fatalf("Run to a topic that refuses every record: no error (%+v)", stats)
	}
	t.Logf("error: %v", err)
	if !strings.Contains(err.Error(), fmt.Sprintf("topic %q partition ", tiny.Name)) || !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("error %q does not name topic and partition or lost the cause", err)
	}
	if stats.Failed == 0 || stats.Acked+stats.Failed != stats.Sent || !stats.FinalHeartbeatAt.IsZero() {
		t.Fatalf("stats %+v: want failures counted, everything answered, no final heartbeats", stats)
	}
	if ctx.Err() != nil {
		t.Fatal("Run took the whole test timeout")
	}

	// A failure stops the elves early: 5000 records at 1000/s would take 5 s.
	cfg.Count, cfg.Rate = 5000, 1000
	start := time.Now()
	stats, err = run(ctx, kc, cfg, nil)
	if err == nil || stats.Records >= 1000 || time.Since(start) > 2*time.Second {
		t.Fatalf("after failures the elves went on: %d records in %v (err %v)", stats.Records, time.Since(start), err)
	}
}

// TestRunHalls: with halls, on a topic of more partitions than sizes, every
// record is in the partition its line hashes to (sarama's FNV-1a), the lines
// fill the partitions as Stats.Spread says, the contract in offset order
// finds the planned late and duplicate records per line, and each line's
// last record is its final heartbeat.
func TestRunHalls(t *testing.T) {
	t.Parallel()
	kc := testkafka.Config(t)
	kc.ClientID = "elves-test"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := DefaultConfig(record.Boxes)
	cfg.Topic = testkafka.Unique("boxes-halls")
	if err := EnsureTopic(ctx, kc, cfg.Topic, 8, true); err != nil {
		t.Fatal(err)
	}
	cfg.Count, cfg.Halls, cfg.Seed = 1500, 5, 3
	cfg.LateRate, cfg.DupRate, cfg.BadRate = 0.05, 0.05, 0.1
	cfg.Disorder = 2 * time.Second
	plan := mustPlan(t, cfg)
	stats, err := run(ctx, kc, cfg, nil)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if stats.Sent != int64(len(plan)) || stats.Acked != stats.Sent {
		t.Fatalf("stats %+v, want %d sent and acked", stats, len(plan))
	}
	if want := cfg.Spread(8); !slices.Equal(stats.Spread.Lines, want.Lines) || stats.Spread.Idle() != 0 {
		t.Fatalf("stats spread %v, want %v with no partition idle", stats.Spread.Lines, want.Lines)
	}

	parts := readTopic(t, kc, cfg.Topic)
	hash := sarama.NewHashPartitioner(cfg.Topic)
	last := map[string]consumed{}
	classes := map[string]int{}
	for p, recs := range parts {
		var msgs []Message
		for _, r := range recs {
			want, err := hash.Partition(&sarama.ProducerMessage{Key: sarama.ByteEncoder(r.key)}, int32(len(parts)))
			if err != nil || want != int32(p) {
				t.Fatalf("key %q in partition %d, FNV-1a says %d (%v)", r.key, p, want, err)
			}
			last[string(r.key)] = r
			msgs = append(msgs, Message{Key: r.key, Value: r.value})
		}
		for _, c := range classify(record.Boxes, cfg, msgs) {
			classes[c]++
		}
		if len(recs) == 0 {
			t.Errorf("partition %d got nothing", p)
		}
	}
	if classes["late"] != int(stats.Kinds[KindLate]) || classes["duplicate"] != int(stats.Kinds[KindDup]) || classes["dead"] != int(stats.Bad()) {
		t.Fatalf("contract in offset order: %v; sent %v", classes, stats.Kinds)
	}
	for _, l := range cfg.Lines() {
		m := Message{Key: last[l].key, Value: last[l].value}
		r, err := record.Parse(record.Boxes, m.Key, m.Value)
		fields, _ := record.Object(m.Value)
		elf, _ := record.JSONString(fields["elf"])
		if err != nil || !r.Heartbeat || elf != FinalElfName(record.Boxes) || !r.MadeAt.Equal(stats.FinalHeartbeatAt) {
			t.Errorf("last record of line %s is %q (%v), want its final heartbeat", l, m.Value, err)
		}
	}
}

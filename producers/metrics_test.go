package producers

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/testsupport/metrictest"
)

// TestRunCountsInMetrics: the elves' metrics count every record Kafka
// acknowledged, by kind (as Stats.Kinds) and by the size its key names,
// under the topic's name; messaging.client.sent.messages counts them all.
func TestRunCountsInMetrics(t *testing.T) {
	kc, topics := startKafka(t, "toys")
	rd := sdkmetric.NewManualReader()
	cfg := DefaultConfig(record.Toys)
	cfg.Topic, cfg.Count, cfg.Halls, cfg.Meter = topics[0], 600, 2, sdkmetric.NewMeterProvider(sdkmetric.WithReader(rd))
	cfg.LateRate, cfg.DupRate, cfg.BadRate = 0.05, 0.05, 0.1
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := run(ctx, kc, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	byKind := metrictest.Counts(t, rd, MetricRecords, "messaging.destination.name", "northpole.record.kind")
	want := map[string]int64{}
	for k, n := range st.Kinds {
		want[topics[0]+"|"+k] = n
	}
	if len(byKind) != len(want) || len(want) < 8 {
		t.Errorf("records by kind %v, want %v", byKind, want)
	}
	for k, n := range want {
		if byKind[k] != n {
			t.Errorf("%s: %d records in metrics, %d in stats", k, byKind[k], n)
		}
	}
	// Every valid record's key names its size; toys are keyed by line.
	bySize := metrictest.Counts(t, rd, MetricRecords, "northpole.record.kind", "northpole.size")
	var sized int64
	for _, s := range record.Sizes {
		sized += bySize["toy|"+s]
	}
	if sized != st.Kinds[KindToy] || bySize["toy|"] != 0 {
		t.Errorf("toys by size %v, want %d in all", bySize, st.Kinds[KindToy])
	}
	sent := metrictest.Counts(t, rd, "messaging.client.sent.messages", "messaging.system", "messaging.operation.name", "messaging.destination.name")
	if sent["kafka|send|"+topics[0]] != st.Sent || st.Sent != st.Acked {
		t.Errorf("sent messages %v, stats %+v", sent, st)
	}
}

// TestAnsweredNamesFailures: a record Kafka refused counts as sent with its
// error.type, and not as a record written.
func TestAnsweredNamesFailures(t *testing.T) {
	rd := sdkmetric.NewManualReader()
	m, err := newMetrics(sdkmetric.NewMeterProvider(sdkmetric.WithReader(rd)), []string{"127.0.0.1:9092"}, "toys", metricKinds(DefaultConfig(record.Toys)))
	if err != nil {
		t.Fatal(err)
	}
	m.answered(KindToy, &kgo.Record{Key: []byte("M")}, nil)
	m.answered(KindToy, &kgo.Record{Key: []byte("M/hall-1")}, nil)
	m.answered("bad:size", &kgo.Record{Key: []byte("XXL")}, nil)
	m.answered(KindToy, &kgo.Record{Key: []byte("S")}, kerr.UnknownTopicOrPartition)
	m.answered(KindToy, &kgo.Record{Key: []byte("S")}, errors.New("boom"))
	if got := metrictest.Counts(t, rd, MetricRecords, "northpole.record.kind", "northpole.size"); len(got) != 2 || got["toy|M"] != 2 || got["bad:size|"] != 1 {
		t.Errorf("records: %v", got)
	}
	got := metrictest.Counts(t, rd, "messaging.client.sent.messages", "error.type")
	if len(got) != 3 || got[""] != 3 || got["UNKNOWN_TOPIC_OR_PARTITION"] != 1 || got["*errors.errorString"] != 1 {
		t.Errorf("sent by error.type: %v", got)
	}
}

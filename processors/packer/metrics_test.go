package packer

import (
	"context"
	"fmt"
	"maps"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/testsupport/metrictest"
)

func newMeteredUnit(t testing.TB) (*unitPipeline, *sdkmetric.ManualReader) {
	t.Helper()
	rd := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(rd))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	return newUnitPipeline(t, func(c *Config) { c.Meter = mp }), rd
}

func expectMetric(t *testing.T, rd *sdkmetric.ManualReader, name string, keys []attribute.Key, want map[string]float64) {
	t.Helper()
	got := metrictest.Collect(t, rd, name, keys...)
	if !maps.Equal(got, want) {
		t.Errorf("%s by %v:\n got %v\nwant %v", name, keys, got, want)
	}
}

// TestMetricsCountRowsAndState: every row is counted by kind, size and
// line, every dead letter by reason and input topic, and the state gauges
// follow the windows as they open and close, back to nothing once all are
// closed.
func TestMetricsCountRowsAndState(t *testing.T) {
	u, rd := newMeteredUnit(t)
	sizes := []attribute.Key{SizeKey}
	u.toy("t1", "M", at("00:00:01"))
	u.box("b1", "M", at("00:00:02"))
	u.toy("t2", "M", at("00:00:03"))
	u.box("b2", "L", at("00:00:01"))
	u.toy("t1", "M", at("00:00:04"))  // a duplicate
	u.send(record.Toys, "M", "{")     // malformed json
	u.send(record.Boxes, "nope", "{") // no line in its key
	// Window 0 of M: t1 and b1 share the first slot, t2 has the second;
	// window 0 of L: b2.
	expectMetric(t, rd, MetricWindowsOpen, sizes, map[string]float64{"S": 0, "M": 1, "L": 1, "XL": 0})
	expectMetric(t, rd, MetricDedupeEntries, sizes, map[string]float64{"S": 0, "M": 3, "L": 1, "XL": 0})
	expectMetric(t, rd, MetricSlots, sizes, map[string]float64{"S": 0, "M": 2, "L": 1, "XL": 0})
	for _, size := range []string{"M", "L"} {
		u.heartbeat(record.Toys, size, at("00:00:30"))
		u.heartbeat(record.Boxes, size, at("00:00:30"))
	}
	u.toy("t9", "M", at("00:00:05")) // late
	expectMetric(t, rd, MetricWindowsOpen, sizes, map[string]float64{"S": 0, "M": 0, "L": 0, "XL": 0})
	expectMetric(t, rd, MetricDedupeEntries, sizes, map[string]float64{"S": 0, "M": 0, "L": 0, "XL": 0})
	expectMetric(t, rd, MetricSlots, sizes, map[string]float64{"S": 0, "M": 0, "L": 0, "XL": 0})

	expectMetric(t, rd, MetricRows, []attribute.Key{RowKindKey, SizeKey, LineKey}, map[string]float64{
		"packed|M|M": 1, "unpacked|M|M": 1, "spare|L|L": 1, "late|M|M": 1, "dead|M|M": 2, "dead||": 1,
	})
	expectMetric(t, rd, MetricDeadLetters, []attribute.Key{ReasonKey, "messaging.destination.name"}, map[string]float64{
		"duplicate|toys": 1, "malformed json|toys": 1, "malformed json|boxes": 1,
	})
	expectMetric(t, rd, MetricPackDuration, sizes, map[string]float64{"M": 1})
	expectMetric(t, rd, "messaging.client.consumed.messages", []attribute.Key{"messaging.destination.name", "messaging.consumer.group.name"},
		map[string]float64{"toys|packer-clock": 7, "boxes|packer-clock": 5})
	// The conventions' recommended attributes: the partition (never without
	// its topic) and the server.
	expectMetric(t, rd, "messaging.client.consumed.messages", []attribute.Key{"messaging.destination.name", "messaging.destination.partition.id", "server.address", "messaging.system"},
		map[string]float64{"toys|0|unused|kafka": 7, "boxes|0|unused|kafka": 5})
}

// TestMetricsBoundLines: past MaxLineSeries lines, the rows of new lines
// are counted under the line "other", with their size.
func TestMetricsBoundLines(t *testing.T) {
	u, rd := newMeteredUnit(t)
	for i := range MaxLineSeries + 2 {
		u.send(record.Toys, fmt.Sprintf("S/hall-%d", i), "{")
	}
	u.send(record.Toys, "S/hall-0", "{") // named already
	got := metrictest.Collect(t, rd, MetricRows, LineKey, SizeKey)
	if len(got) != MaxLineSeries+1 || got["other|S"] != 2 || got["S/hall-0|S"] != 2 {
		t.Errorf("%d series, %v under other, %v of S/hall-0; want %d, 2 and 2", len(got), got["other|S"], got["S/hall-0|S"], MaxLineSeries+1)
	}
}

// TestMetricsOff: without a meter provider, or with a no-op one, the
// packer counts nothing.
func TestMetricsOff(t *testing.T) {
	if u := newUnitPipeline(t); u.pk.metrics != nil || u.clockPart().state != nil {
		t.Error("metrics without a meter provider")
	}
}

// TestMetricsRowsWithinCardinality: with more lines than MaxLineSeries,
// each with rows of several kinds, every row is counted under its kind:
// the series stay within the SDK's default cardinality limit, past which
// rows would go to an overflow series without a kind.
func TestMetricsRowsWithinCardinality(t *testing.T) {
	u, rd := newMeteredUnit(t)
	lines := manyLines(MaxLineSeries + 200)
	for i, line := range lines {
		size, _, _ := record.SplitLine(line)
		u.send(record.Toys, line, toyValue(fmt.Sprint("t", i), size, clockAt(1)))
		u.send(record.Toys, line, toyValue(fmt.Sprint("u", i), size, clockAt(1)))
		u.send(record.Boxes, line, boxValue(fmt.Sprint("b", i), size, clockAt(1)))
		u.send(record.Toys, line, "{")
		u.send(record.Toys, line, heartbeatValue(size, clockAt(3600)))
		u.send(record.Boxes, line, heartbeatValue(size, clockAt(3600)))
		u.send(record.Toys, line, toyValue(fmt.Sprint("v", i), size, clockAt(1)))
	}
	got := metrictest.Collect(t, rd, MetricRows, RowKindKey)
	n := float64(len(lines))
	if want := map[string]float64{RowPacked: n, RowUnpacked: n, RowLate: n, RowDead: n}; !maps.Equal(got, want) {
		t.Errorf("rows by kind %v, want %v", got, want)
	}
}

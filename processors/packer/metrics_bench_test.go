package packer

import (
	"context"
	"fmt"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/testsupport/metrictest"
)

// BenchmarkRecordMetrics is what the metrics cost the packer per input
// record, on its own work: one record through both groups' callbacks (the
// unit pipeline: validity, lateness, dedupe, the clock, the decision's
// encoding, the slots, the rows), with every count the metrics make, the
// answer of each write included (orderedProducer), and a collection every
// 10,000 records (more often than any export). "off" is the same with
// Config.Meter nil; the difference is the metrics' cost. goka's and
// Kafka's share of the packer's ~9 µs per event is not here, so the
// ratio overstates the cost: the nanoseconds are the figure to take.
// Records: 8 lines (two halls of each size), toys and boxes in turns, 5 ms
// of event time apart, one in 64 malformed. Run it with -benchtime at most
// 131072x (the records made in advance; more rebuilds the pipeline inside
// the timing).
func BenchmarkRecordMetrics(b *testing.B) {
	recs := benchRecords(1 << 17)
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			var rd *sdkmetric.ManualReader
			start := func() *unitPipeline {
				edit := func(c *Config) { c.CleanEvery = 0 }
				if !on {
					return newUnitPipeline(b, edit)
				}
				rd = sdkmetric.NewManualReader()
				mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(rd))
				return newUnitPipeline(b, edit, func(c *Config) { c.Meter = mp })
			}
			u := start()
			table := u.cfg.clockTable()
			b.ReportAllocs()
			b.ResetTimer()
			c0 := cpuNanos()
			for i := range b.N {
				if i > 0 && i%len(recs) == 0 {
					b.StopTimer()
					u = start()
					b.StartTimer()
				}
				r := &recs[i%len(recs)]
				u.send(r.stream, r.key, r.value)
				if m := u.pk.metrics; m != nil {
					for range u.table {
						m.answered(table, 0, nil)
					}
					for j := range u.rows {
						m.answered(u.rows[j].topic, 0, nil)
					}
					if i%10000 == 0 {
						metrictest.Collect(b, rd, MetricRows)
					}
				}
				u.rows, u.table, u.acked = u.rows[:0], u.table[:0], 0
			}
			b.ReportMetric(float64(cpuNanos()-c0)/float64(b.N), "cpu-ns/op")
		})
	}
}

type benchRecord struct {
	stream     record.Stream
	key, value string
}

func benchRecords(n int) []benchRecord {
	lines := []string{"S/hall-1", "M/hall-1", "L/hall-1", "XL/hall-1", "S/hall-2", "M/hall-2", "L/hall-2", "XL/hall-2"}
	base := time.Date(2026, 12, 24, 0, 0, 0, 0, time.UTC)
	out := make([]benchRecord, n)
	for i := range out {
		line := lines[i%len(lines)]
		size, _, _ := record.SplitLine(line)
		made := record.FormatTime(base.Add(time.Duration(i) * 5 * time.Millisecond))
		r := benchRecord{stream: record.Toys, key: line, value: toyValue(fmt.Sprintf("t-%d", i), size, made)}
		if (i/len(lines))%2 == 1 {
			r.stream, r.value = record.Boxes, boxValue(fmt.Sprintf("b-%d", i), size, made)
		}
		if i%64 == 63 {
			r.value = "{"
		}
		out[i] = r
	}
	return out
}

// TestRecordMetricsBenchmarkPacks: the benchmark's records pack, close
// windows and make dead letters, as the packer's input does.
func TestRecordMetricsBenchmarkPacks(t *testing.T) {
	rd := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(rd))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	u := newUnitPipeline(t, func(c *Config) { c.Meter = mp })
	recs := benchRecords(20000)
	for _, r := range recs {
		u.send(r.stream, r.key, r.value)
	}
	rows := metrictest.Collect(t, rd, MetricRows, RowKindKey)
	if rows[RowPacked] < float64(len(recs))/4 || rows[RowDead] != float64(len(recs)/64) {
		t.Errorf("rows %v for %d records: want a quarter packed at least, one in 64 dead", rows, len(recs))
	}
}

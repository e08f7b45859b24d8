// Package metrictest reads what an OpenTelemetry ManualReader holds, for the
// tests of the components that export metrics (the packer, the sleigh, the
// elves).
package metrictest

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// Collect reads the metric name from rd: counters' and gauges' values, and
// histograms' counts, summed by the values of the attributes keys, joined
// with "|" (an attribute a data point lacks counts as "").
func Collect(t testing.TB, rd *sdkmetric.ManualReader, name string, keys ...attribute.Key) map[string]float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := rd.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	label := func(s attribute.Set) string {
		parts := make([]string, len(keys))
		for i, k := range keys {
			v, _ := s.Value(k)
			parts[i] = v.String()
		}
		return strings.Join(parts, "|")
	}
	out := map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				for _, p := range points(m.Data) {
					out[label(p.attrs)] += p.value
				}
			}
		}
	}
	return out
}

type point struct {
	attrs attribute.Set
	value float64
}

// points are an aggregation's data points as numbers: a histogram's are
// its counts.
func points(data metricdata.Aggregation) []point {
	var out []point
	switch d := data.(type) {
	case metricdata.Sum[int64]:
		out = appendPoints(out, d.DataPoints)
	case metricdata.Sum[float64]:
		out = appendPoints(out, d.DataPoints)
	case metricdata.Gauge[int64]:
		out = appendPoints(out, d.DataPoints)
	case metricdata.Gauge[float64]:
		out = appendPoints(out, d.DataPoints)
	case metricdata.Histogram[float64]:
		for _, dp := range d.DataPoints {
			out = append(out, point{dp.Attributes, float64(dp.Count)})
		}
	}
	return out
}

func appendPoints[N int64 | float64](out []point, dps []metricdata.DataPoint[N]) []point {
	for _, dp := range dps {
		out = append(out, point{dp.Attributes, float64(dp.Value)})
	}
	return out
}

// Counts is Collect for whole counts: counters and histograms' counts.
func Counts(t testing.TB, rd *sdkmetric.ManualReader, name string, keys ...attribute.Key) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for k, v := range Collect(t, rd, name, keys...) {
		out[k] = int64(v)
	}
	return out
}

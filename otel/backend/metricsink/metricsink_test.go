package metricsink_test

import (
	"testing"

	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"

	"github.com/northpole-workshop/northpole/otel/backend/metricsink"
)

func str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

// export is one request: a sum of temporality t with value v at kind=k for
// service svc, and a histogram of count n.
func export(svc, k string, t metricspb.AggregationTemporality, v int64, n uint64) *colmetricspb.ExportMetricsServiceRequest {
	return &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", svc)}},
		ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{
			{Name: "c", Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{AggregationTemporality: t, IsMonotonic: true,
				DataPoints: []*metricspb.NumberDataPoint{{Attributes: []*commonpb.KeyValue{str("kind", k)}, Value: &metricspb.NumberDataPoint_AsInt{AsInt: v}}}}}},
			{Name: "h", Data: &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{AggregationTemporality: t,
				DataPoints: []*metricspb.HistogramDataPoint{{Count: n, Sum: new(float64)}}}}},
		}}},
	}}}
}

// TestCumulativeReplacesDeltaAdds: both temporalities give the totals the
// process counted, per series, matched on resource and point attributes.
func TestCumulativeReplacesDeltaAdds(t *testing.T) {
	const cum, delta = metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE, metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
	s := metricsink.NewStore()
	s.Take(export("a", "toy", cum, 5, 2))
	s.Take(export("a", "toy", cum, 7, 3))
	s.Take(export("b", "toy", delta, 5, 2))
	s.Take(export("b", "toy", delta, 7, 3))
	s.Take(export("b", "box", delta, 1, 0))
	for _, c := range []struct {
		match map[string]string
		sum   float64
		count uint64
	}{
		{map[string]string{"service.name": "a"}, 7, 3},
		{map[string]string{"service.name": "b", "kind": "toy"}, 12, 0},
		{map[string]string{"service.name": "b"}, 13, 5},
		{map[string]string{"kind": "toy"}, 19, 0},
		{nil, 20, 8},
	} {
		if got := s.Sum("c", c.match); got != c.sum {
			t.Errorf("Sum(c, %v) = %v, want %v", c.match, got, c.sum)
		}
		if c.count > 0 {
			if got := s.Count("h", c.match); got != c.count {
				t.Errorf("Count(h, %v) = %v, want %v", c.match, got, c.count)
			}
		}
	}
	if s.Requests() != 5 {
		t.Errorf("%d requests", s.Requests())
	}
}

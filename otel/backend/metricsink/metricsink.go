// Package metricsink receives OTLP metrics (gRPC, and HTTP with protobuf)
// and keeps the current value of every series, so that a test or a command
// can ask what a process exported: point OTEL_EXPORTER_OTLP_ENDPOINT at a
// Receiver (Listen), or mount a Store's handlers beside a trace receiver
// (servicemap.Receiver does).
//
// A series is a metric of one resource, scope and attribute set. A
// cumulative sum or histogram replaces the series' value with each export; a
// delta one adds to it, so both temporalities give the same totals.
package metricsink

import (
	"context"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/northpole-workshop/northpole/otel/backend/otlpserve"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// Store holds the series received so far. The zero value is not usable:
// NewStore.
type Store struct {
	mu       sync.Mutex
	series   map[string]*Series
	requests int64
}

// Series is one metric of one resource and attribute set, as received.
type Series struct {
	Name string
	// Attrs are the resource's attributes and the data point's together
	// (a data point's wins), values printed as strings.
	Attrs map[string]string
	// Value is a sum's value; Count a histogram's count of measurements
	// and Value their sum.
	Value float64
	Count uint64
}

// NewStore makes an empty store.
func NewStore() *Store { return &Store{series: map[string]*Series{}} }

// Requests is the number of export requests taken.
func (s *Store) Requests() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// Take adds one export request's metrics.
func (s *Store) Take(req *colmetricspb.ExportMetricsServiceRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	for _, rm := range req.GetResourceMetrics() {
		res := attrs(rm.GetResource().GetAttributes(), nil)
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				s.takeMetric(res, m)
			}
		}
	}
}

func (s *Store) takeMetric(res map[string]string, m *metricspb.Metric) {
	switch d := m.GetData().(type) {
	case *metricspb.Metric_Sum:
		delta := d.Sum.GetAggregationTemporality() == metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
		for _, dp := range d.Sum.GetDataPoints() {
			v := dp.GetAsDouble()
			if _, ok := dp.GetValue().(*metricspb.NumberDataPoint_AsInt); ok {
				v = float64(dp.GetAsInt())
			}
			s.put(m.GetName(), res, dp.GetAttributes(), delta, v, 0)
		}
	case *metricspb.Metric_Gauge:
		for _, dp := range d.Gauge.GetDataPoints() {
			v := dp.GetAsDouble()
			if _, ok := dp.GetValue().(*metricspb.NumberDataPoint_AsInt); ok {
				v = float64(dp.GetAsInt())
			}
			s.put(m.GetName(), res, dp.GetAttributes(), false, v, 0)
		}
	case *metricspb.Metric_Histogram:
		delta := d.Histogram.GetAggregationTemporality() == metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
		for _, dp := range d.Histogram.GetDataPoints() {
			s.put(m.GetName(), res, dp.GetAttributes(), delta, dp.GetSum(), dp.GetCount())
		}
	}
}

func (s *Store) put(name string, res map[string]string, kvs []*commonpb.KeyValue, delta bool, v float64, count uint64) {
	all := attrs(kvs, res)
	key := name + "\x00" + printed(all)
	se, ok := s.series[key]
	if !ok {
		se = &Series{Name: name, Attrs: all}
		s.series[key] = se
	}
	if delta {
		se.Value += v
		se.Count += count
	} else {
		se.Value, se.Count = v, count
	}
}

// attrs are kvs' values printed as strings, over a copy of base.
func attrs(kvs []*commonpb.KeyValue, base map[string]string) map[string]string {
	out := make(map[string]string, len(base)+len(kvs))
	for k, v := range base {
		out[k] = v
	}
	for _, kv := range kvs {
		switch v := kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			out[kv.GetKey()] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			out[kv.GetKey()] = fmt.Sprint(v.IntValue)
		case *commonpb.AnyValue_BoolValue:
			out[kv.GetKey()] = fmt.Sprint(v.BoolValue)
		case *commonpb.AnyValue_DoubleValue:
			out[kv.GetKey()] = fmt.Sprint(v.DoubleValue)
		}
	}
	return out
}

func printed(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + m[k] + "\x00")
	}
	return b.String()
}

// Find is every series of the metric name whose attributes (resource's or
// data point's) include all of match.
func (s *Store) Find(name string, match map[string]string) []Series {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Series
	for _, se := range s.series {
		if se.Name != name || !includes(se.Attrs, match) {
			continue
		}
		out = append(out, *se)
	}
	return out
}

// Sum is the total value of the series Find returns: a counter's count.
func (s *Store) Sum(name string, match map[string]string) float64 {
	var v float64
	for _, se := range s.Find(name, match) {
		v += se.Value
	}
	return v
}

// Count is the total count of the histogram series Find returns.
func (s *Store) Count(name string, match map[string]string) uint64 {
	var n uint64
	for _, se := range s.Find(name, match) {
		n += se.Count
	}
	return n
}

// Names are the metric names received, sorted.
func (s *Store) Names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, se := range s.series {
		if !seen[se.Name] {
			seen[se.Name] = true
			out = append(out, se.Name)
		}
	}
	sort.Strings(out)
	return out
}

func includes(all, match map[string]string) bool {
	for k, v := range match {
		if got, ok := all[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// GRPC is the OTLP metrics service over gRPC, for grpc.Server.
func (s *Store) GRPC() colmetricspb.MetricsServiceServer { return grpcService{s: s} }

type grpcService struct {
	colmetricspb.UnimplementedMetricsServiceServer
	s *Store
}

func (g grpcService) Export(_ context.Context, req *colmetricspb.ExportMetricsServiceRequest) (*colmetricspb.ExportMetricsServiceResponse, error) {
	g.s.Take(req)
	return &colmetricspb.ExportMetricsServiceResponse{}, nil
}

// ServeHTTP answers POST /v1/metrics with protobuf bodies (gzip or not),
// as the OTLP/HTTP metric exporters send them.
func (s *Store) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	data, ok := otlpserve.ReadBody(w, req)
	if !ok {
		return
	}
	if ct, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type")); ct != "application/x-protobuf" {
		http.Error(w, "content type must be application/x-protobuf", http.StatusUnsupportedMediaType)
		return
	}
	var m colmetricspb.ExportMetricsServiceRequest
	if err := proto.Unmarshal(data, &m); err != nil {
		http.Error(w, "bad protobuf: "+err.Error(), http.StatusBadRequest)
		return
	}
	s.Take(&m)
	out, _ := proto.Marshal(&colmetricspb.ExportMetricsServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// Receiver is a Store behind its own OTLP servers.
type Receiver struct {
	*Store
	*otlpserve.Servers
}

// Listen serves a new Store over OTLP/gRPC on grpcAddr and OTLP/HTTP on
// httpAddr; an empty address leaves that protocol off. A nil log discards.
func Listen(grpcAddr, httpAddr string, log *slog.Logger) (*Receiver, error) {
	st := NewStore()
	mux := http.NewServeMux()
	mux.Handle("POST /v1/metrics", st)
	srv, err := otlpserve.Start("metricsink", grpcAddr, httpAddr, func(g *grpc.Server) {
		colmetricspb.RegisterMetricsServiceServer(g, st.GRPC())
	}, mux, log)
	if err != nil {
		return nil, err
	}
	return &Receiver{Store: st, Servers: srv}, nil
}

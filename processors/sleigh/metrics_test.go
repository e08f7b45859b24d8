package sleigh_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/results"
	"github.com/northpole-workshop/northpole/internal/testsupport/metrictest"
	"github.com/northpole-workshop/northpole/internal/testsupport/testkafka"
	"github.com/northpole-workshop/northpole/processors/sleigh"
)

// TestRequestMetrics: every request is timed under its route and status
// (the 503s of a sleigh not running among them, with error.type); one no
// route matched (404, 405) without a route.
func TestRequestMetrics(t *testing.T) {
	rd := sdkmetric.NewManualReader()
	cfg := sleigh.DefaultConfig()
	cfg.Kafka = kafkaconf.Config{Brokers: []string{"127.0.0.1:1"}}
	cfg.Meter = sdkmetric.NewMeterProvider(sdkmetric.WithReader(rd))
	s, err := sleigh.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	for _, u := range []string{"/manifest", "/manifest", "/manifest?size=XXL", "/manifest/summary", "/healthz", "/nowhere"} {
		get(t, h, u)
	}
	post := httptest.NewRecorder()
	h.ServeHTTP(post, httptest.NewRequest(http.MethodPost, "/manifest", nil))
	got := metrictest.Counts(t, rd, "http.server.request.duration", "http.request.method", "url.scheme", "http.route", "http.response.status_code", "error.type")
	want := map[string]int64{
		"GET|http|/manifest|503|503":         2,
		"GET|http|/manifest|400|":            1,
		"GET|http|/manifest/summary|503|503": 1,
		"GET|http|/healthz|503|503":          1,
		"GET|http||404|":                     1,
		"POST|http||405|":                    1,
	}
	if len(got) != len(want) {
		t.Errorf("requests %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: %d requests, want %d (all %v)", k, got[k], n, got)
		}
	}
}

// TestPairMetrics: the sleigh counts each packed record it consumed (the
// messaging conventions' counter, under its topic and group) and what
// became of it, by size class.
func TestPairMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rd := sdkmetric.NewManualReader()
	cfg := sleigh.DefaultConfig()
	cfg.Kafka = testkafka.Config(t)
	cfg.Topic, cfg.Group = testkafka.Unique("sleigh-metrics")+"-packed", testkafka.Unique("sleigh-metrics")
	cfg.Partitions = 2
	cfg.Meter = sdkmetric.NewMeterProvider(sdkmetric.WithReader(rd))
	s, err := sleigh.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureTopics(ctx); err != nil {
		t.Fatal(err)
	}
	produce(ctx, t, cfg,
		results.Packed{ToyID: "t1", BoxID: "b1", Line: "M", Size: "M", WindowStart: "2026-12-24T10:00:00Z"},
		results.Packed{ToyID: "t2", BoxID: "b2", Line: "S", Size: "S", WindowStart: "2026-12-24T10:00:00Z"},
		results.Packed{ToyID: "t1", BoxID: "b1", Line: "M", Size: "M", WindowStart: "2026-12-24T10:00:00Z"}, // a replay
		results.Packed{ToyID: "t1", BoxID: "b9", Line: "M", Size: "M", WindowStart: "2026-12-24T10:00:00Z"}, // a conflict
	)
	defer runInBackground(t, ctx, s)()
	for deadline := time.Now().Add(time.Minute); ; {
		if c := s.Counts(); c.Loaded+c.Repeats+c.Conflicts >= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sleigh did not apply 4 records within a minute: counts %+v", s.Counts())
		}
		time.Sleep(50 * time.Millisecond)
	}
	pairs := metrictest.Counts(t, rd, sleigh.MetricPairs, "northpole.outcome", "northpole.size")
	if want := map[string]int64{"loaded|M": 1, "loaded|S": 1, "repeat|M": 1, "conflict|M": 1}; len(pairs) != len(want) {
		t.Errorf("pairs %v, want %v", pairs, want)
	} else {
		for k, n := range want {
			if pairs[k] != n {
				t.Errorf("%s: %d, want %d", k, pairs[k], n)
			}
		}
	}
	consumed := metrictest.Counts(t, rd, "messaging.client.consumed.messages", "messaging.system", "messaging.operation.name", "messaging.destination.name", "messaging.consumer.group.name")
	if k := "kafka|process|" + cfg.Topic + "|" + cfg.Group; consumed[k] != 4 || len(consumed) != 1 {
		t.Errorf("consumed %v, want 4 at %s", consumed, k)
	}
	if code, _ := get(t, s.Handler(), "/manifest?size=M"); code != http.StatusOK {
		t.Fatalf("GET /manifest?size=M: %d", code)
	}
	if n := metrictest.Counts(t, rd, "http.server.request.duration", "http.route", "http.response.status_code")["/manifest|200"]; n != 1 {
		t.Errorf("%d pages of 200 timed, want 1", n)
	}
}

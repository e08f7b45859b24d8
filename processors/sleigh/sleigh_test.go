package sleigh_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/testkafka"
	"github.com/northpole-workshop/northpole/processors/sleigh"
)

func get(t *testing.T, h http.Handler, url string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, url, nil))
	b, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(b)
}

// TestManifestRefusesUnknownSizes: a size that is not a size class is the
// asker's mistake (400, naming the valid ones), whether or not the sleigh
// runs yet; a valid one on a sleigh not yet running is a 503.
func TestManifestRefusesUnknownSizes(t *testing.T) {
	cfg := sleigh.DefaultConfig()
	cfg.Kafka = kafkaconf.Config{Brokers: []string{"k:9092"}}
	s, err := sleigh.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		url  string
		code int
		want string
	}{
		{"/manifest?size=XXL", http.StatusBadRequest, `size "XXL" is not a size class: want one of S, M, L, XL`},
		{"/manifest?size=m", http.StatusBadRequest, `size "m" is not a size class`},
		{"/manifest?size=", http.StatusBadRequest, `size "" is not a size class`},
		{"/manifest?size=M", http.StatusServiceUnavailable, "not running"},
		{"/manifest", http.StatusServiceUnavailable, "not running"},
	} {
		if code, body := get(t, s.Handler(), tc.url); code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("GET %s: %d %q, want %d and %q", tc.url, code, body, tc.code, tc.want)
		}
	}
}

// TestReady: Ready closes once the sleigh runs on Kafka, and then the
// manifest answers a size class with 200 and an unknown size with 400.
func TestReady(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	cfg := sleigh.DefaultConfig()
	cfg.Kafka = testkafka.Config(t)
	cfg.Topic, cfg.Group = testkafka.Unique("sleigh-ready")+"-packed", testkafka.Unique("sleigh-ready")
	s, err := sleigh.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-ran; err != nil {
			t.Error(err)
		}
	}()
	select {
	case <-s.Ready():
	case err := <-ran:
		t.Fatalf("the sleigh stopped before it was ready: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the sleigh was not ready within a minute")
	}
	if code, body := get(t, s.Handler(), "/manifest?size=M"); code != http.StatusOK || !strings.Contains(body, `"pairs": 0`) {
		t.Errorf("GET /manifest?size=M on a running sleigh: %d %s", code, body)
	}
	if code, _ := get(t, s.Handler(), "/manifest?size=XXL"); code != http.StatusBadRequest {
		t.Errorf("GET /manifest?size=XXL on a running sleigh: %d, want 400", code)
	}
}

// TestNotReadyWhenKafkaIsUnreachable: a sleigh that cannot reach Kafka
// fails, and Ready never closed.
func TestNotReadyWhenKafkaIsUnreachable(t *testing.T) {
	cfg := sleigh.DefaultConfig()
	cfg.Kafka = kafkaconf.Config{Brokers: []string{"127.0.0.1:1"}, RetryFor: time.Second}
	s, err := sleigh.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Run(ctx); err == nil {
		t.Fatal("Run on an unreachable Kafka returned nil")
	}
	select {
	case <-s.Ready():
		t.Error("Ready closed for a sleigh that never ran")
	default:
	}
}

package sleigh_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/testsupport/testkafka"
	"github.com/northpole-workshop/northpole/processors/sleigh"
)

// TestListenAndRun: the sleigh says it is ready with the address it
// listens on, answers there, and stops cleanly when its context ends.
func TestListenAndRun(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	cfg := sleigh.DefaultConfig()
	cfg.Kafka = testkafka.Config(t)
	cfg.Topic, cfg.Group = testkafka.Unique("sleigh-listen")+"-packed", testkafka.Unique("sleigh-listen")
	s, err := sleigh.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	before := httptest.NewRecorder()
	s.Handler().ServeHTTP(before, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if before.Code != http.StatusServiceUnavailable || !strings.Contains(before.Body.String(), `"ready": false`) {
		t.Errorf("GET /healthz before Run: %d %q, want 503, not ready", before.Code, before.Body)
	}
	var health string
	err = s.ListenAndRun(ctx, "127.0.0.1:0", func(addr net.Addr) {
		defer cancel()
		resp, err := http.Get("http://" + addr.String() + "/healthz")
		if err != nil {
			t.Error(err)
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		health = string(b)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET /healthz once ready: status %d", resp.StatusCode)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(health, `"running": true`) || !strings.Contains(health, `"ready": true`) {
		t.Errorf("GET /healthz once ready: %q, want running and ready", health)
	}
}

// TestListenAndRunFails: an address nobody can listen on, and a Kafka that
// cannot be reached, are errors, and neither announces a manifest.
func TestListenAndRunFails(t *testing.T) {
	s := unreachableSleigh(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ready := func(net.Addr) { t.Error("ready announced") }
	if err := s.ListenAndRun(ctx, "256.0.0.1:0", ready); err == nil || !strings.Contains(err.Error(), "listen on 256.0.0.1:0") {
		t.Errorf("listen on a bad address: %v", err)
	}
	if err := s.ListenAndRun(ctx, "127.0.0.1:0", ready); err == nil {
		t.Error("a sleigh without Kafka ran")
	}
}

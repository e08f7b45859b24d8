package packer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/testsupport/hostile"
	"github.com/northpole-workshop/northpole/internal/testsupport/testkafka"
	"github.com/northpole-workshop/northpole/processors/packer"
)

// getHealth asks h for /healthz and decodes the answer.
func getHealth(t *testing.T, h http.Handler) (int, packer.Health) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	var got packer.Health
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatalf("/healthz answered %d with %q: %v", rec.Code, rec.Body, err)
	}
	return rec.Code, got
}

// TestHealth: /healthz is 503 before the packer runs and after it stopped,
// 200 while both groups run, with each group's state and partitions, and
// counts the records each group consumed and wrote.
func TestHealth(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	cfg := packer.Named(testkafka.Unique("health"))
	cfg.Kafka = testkafka.Config(t)
	ready := make(chan struct{})
	cfg.Ready = func() { close(ready) }
	pk, err := packer.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := pk.HealthHandler()
	if code, got := getHealth(t, h); code != http.StatusServiceUnavailable || got.Running || len(got.Groups) != 0 {
		t.Errorf("before Run: %d %+v, want 503, not running, no group", code, got)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := startRun(t, ctx, pk)
	select {
	case <-ready:
	case err := <-r.done:
		t.Fatalf("the packer stopped before it was ready: %v", err)
	case <-ctx.Done():
		t.Fatal("the packer was not ready in time")
	}
	code, got := getHealth(t, h)
	if code != http.StatusOK || !got.Running || len(got.Groups) != 1 {
		t.Fatalf("running: %d %+v, want 200, running, one group", code, got)
	}
	all := []int32{0, 1, 2, 3}
	if g := got.Groups[0]; g.Group != cfg.Groups()[0] || g.State != "running" || !slices.Equal(g.Partitions, all) {
		t.Errorf("group %+v, want %s running on partitions %v", g, cfg.Groups()[0], all)
	}

	// Toys in one window, then a toy and a box far later, which close it
	// for both streams: the group consumes them all, writes a decision
	// each, and the first window's toys as unpacked.
	const toys = 5
	cl, err := hostile.NewProducer(cfg.Kafka)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*hostile.Record
	for i := range toys {
		at := hostile.At(float64(i))
		if i == toys-1 {
			at = hostile.At(3600)
		}
		recs = append(recs, &hostile.Record{Name: fmt.Sprint(i), Stream: record.Toys, Key: []byte("M"), Value: hostile.ToyJSON(fmt.Sprint("t", i), "M", at)})
	}
	recs = append(recs, &hostile.Record{Name: "box", Stream: record.Boxes, Key: []byte("M"), Value: hostile.BoxJSON("b", "M", hostile.At(3600))})
	if err := hostile.Produce(ctx, cl, cfg.Topics.Toys, cfg.Topics.Boxes, recs); err != nil {
		t.Fatal(err)
	}
	clock := cfg.Groups()[0]
	var last packer.Health
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, last = getHealth(t, h)
		c := last.Groups[0]
		if c.Consumed[cfg.Topics.Toys] == toys && c.Written[cfg.Topics.Unpacked] == toys-1 {
			break
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if c := last.Groups[0]; c.Consumed[cfg.Topics.Toys] != toys || c.Written[cfg.Topics.Unpacked] != toys-1 {
		t.Fatalf("the counts never reached %d toys consumed and %d unpacked written by %s: %+v", toys, toys-1, clock, last)
	}
	if c := last.Groups[0]; c.Consumed[cfg.Topics.Boxes] != 1 || c.Written[clock+"-table"] != toys+1 {
		t.Errorf("%s consumed %v and wrote %v, want 1 box and %d decisions to its table", clock, c.Consumed, c.Written, toys+1)
	}

	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if code, got := getHealth(t, h); code != http.StatusServiceUnavailable || got.Running {
		t.Errorf("after the stop: %d %+v, want 503, not running", code, got)
	}
}

// TestListenAndRunOnABusyAddress: an address taken is the caller's error,
// said before the packer touches Kafka.
func TestListenAndRunOnABusyAddress(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	cfg := packer.DefaultConfig()
	cfg.Kafka.Brokers = []string{"127.0.0.1:1"}
	pk, err := packer.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = pk.ListenAndRun(context.Background(), lis.Addr().String())
	if err == nil || !strings.Contains(err.Error(), "listen on "+lis.Addr().String()) {
		t.Errorf("ListenAndRun on a busy address: %v", err)
	}
}

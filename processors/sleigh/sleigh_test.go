package sleigh_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
	"github.com/northpole-workshop/northpole/internal/testsupport/testkafka"
	"github.com/northpole-workshop/northpole/processors/sleigh"
)

func get(t *testing.T, h http.Handler, url string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, url, nil))
	b, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(b)
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
	if code, body := get(t, s.Handler(), "/manifest?size=M"); code != http.StatusOK || !strings.Contains(body, `"total":0,"sizes":[],"pairs":0}`) {
		t.Errorf("GET /manifest?size=M on a running sleigh: %d %s", code, body)
	}
	if code, _ := get(t, s.Handler(), "/manifest?size=XXL"); code != http.StatusBadRequest {
		t.Errorf("GET /manifest?size=XXL on a running sleigh: %d, want 400", code)
	}
}

// TestNotReadyWhenKafkaIsUnreachable: a sleigh that cannot reach Kafka
// fails, and Ready never closed.
func TestNotReadyWhenKafkaIsUnreachable(t *testing.T) {
	s := unreachableSleigh(t)
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

// TestOneToyInTwoWindows: the packer may pack one toy id in two windows, or
// on two lines (ids are unique within a line's window only), at keys
// line|<window µs>|toy_id. Every pair is on the sleigh, under its line and
// window; a replay of one (the same key and pair again) is a repeat, not a
// conflict or another pair.
func TestOneToyInTwoWindows(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := sleigh.DefaultConfig()
	cfg.Kafka = testkafka.Config(t)
	cfg.Topic, cfg.Group = testkafka.Unique("sleigh-windows")+"-packed", testkafka.Unique("sleigh-windows")
	cfg.Partitions = 2
	s, err := sleigh.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureTopics(ctx); err != nil {
		t.Fatal(err)
	}
	pairs := []results.Packed{
		{ToyID: "t1", BoxID: "b2", Line: "M", Size: "M", WindowStart: "2026-12-24T10:00:10Z"},
		{ToyID: "t1", BoxID: "b1", Line: "M", Size: "M", WindowStart: "2026-12-24T10:00:00Z"},
		{ToyID: "t1", BoxID: "b3", Line: "M/h1", Size: "M", WindowStart: "2026-12-24T10:00:00Z"},
		{ToyID: "t1", BoxID: "b2", Line: "M", Size: "M", WindowStart: "2026-12-24T10:00:10Z"}, // a replay
	}
	produce(ctx, t, cfg, pairs...)

	defer runInBackground(t, ctx, s)()
	for deadline := time.Now().Add(time.Minute); ; {
		if sum, err := s.Summary(); err == nil && sum.Pairs >= 3 && s.Counts().Loaded+s.Counts().Repeats >= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sleigh did not load the pairs within a minute: counts %+v", s.Counts())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if c := s.Counts(); c != (sleigh.Counts{Loaded: 3, Repeats: 1}) {
		t.Errorf("counts %+v, want 3 loaded and 1 repeat, no conflict", c)
	}
	code, body := get(t, s.Handler(), "/manifest?size=M")
	want := `"sizes":[{"size":"M","lines":[{"line":"M","windows":[{"window_start":"2026-12-24T10:00:00Z","pairs":[{"toy_id":"t1","box_id":"b1"}]},` +
		`{"window_start":"2026-12-24T10:00:10Z","pairs":[{"toy_id":"t1","box_id":"b2"}]}],"pairs":2},` +
		`{"line":"M/h1","windows":[{"window_start":"2026-12-24T10:00:00Z","pairs":[{"toy_id":"t1","box_id":"b3"}]}],"pairs":1}],"pairs":3}],"pairs":3}`
	if code != http.StatusOK || !strings.Contains(body, want) {
		t.Errorf("GET /manifest?size=M: %d %s; want t1 in both windows of M and on M/h1: %s", code, body, want)
	}
}

// produce writes pairs onto cfg's packed topic under the packer's keys.
func produce(ctx context.Context, t *testing.T, cfg sleigh.Config, pairs ...results.Packed) {
	t.Helper()
	cl, err := kgo.NewClient(append(cfg.Kafka.Kgo(), kgo.SeedBrokers(cfg.Kafka.Brokers...))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, p := range pairs {
		at, err := record.ParseMadeAt(p.WindowStart)
		if err != nil {
			t.Fatal(err)
		}
		v, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		key := p.Line + "|" + strconv.FormatInt(at.UnixMicro(), 10) + "|" + p.ToyID // the packer's key
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: cfg.Topic, Key: []byte(key), Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// runUntil runs a new sleigh of cfg until it counts want pairs, checks its
// first page of size M, and stops it.
func runUntil(ctx context.Context, t *testing.T, cfg sleigh.Config, want int, page string) {
	t.Helper()
	s, err := sleigh.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer runInBackground(t, ctx, s)()
	for deadline := time.Now().Add(time.Minute); ; {
		if sum, err := s.Summary(); err == nil && sum.Complete && sum.Pairs >= want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sleigh did not count %d pairs within a minute: counts %+v", want, s.Counts())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, body := get(t, s.Handler(), "/manifest?size=M"); code != http.StatusOK || !strings.Contains(body, page) {
		t.Errorf("GET /manifest?size=M: %d %s, want %s", code, body, page)
	}
}

// TestStorageDirAcrossRestart: with --storage-dir the view keeps its pairs
// (and their counts) on disk; a second sleigh on the same directory lists
// them with what came while it was stopped, in order, once each.
func TestStorageDirAcrossRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg := sleigh.DefaultConfig()
	cfg.Kafka = testkafka.Config(t)
	cfg.Topic, cfg.Group = testkafka.Unique("sleigh-disk")+"-packed", testkafka.Unique("sleigh-disk")
	cfg.Partitions, cfg.StorageDir = 2, t.TempDir()
	s, err := sleigh.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureTopics(ctx); err != nil {
		t.Fatal(err)
	}
	produce(ctx, t, cfg,
		results.Packed{ToyID: "b", BoxID: "2", Line: "M", Size: "M", WindowStart: "1969-12-31T23:59:50Z"},
		results.Packed{ToyID: "a", BoxID: "1", Line: "M", Size: "M", WindowStart: "2026-12-24T10:00:00Z"})
	runUntil(ctx, t, cfg, 2, `"total":2,`)
	produce(ctx, t, cfg, results.Packed{ToyID: "c", BoxID: "3", Line: "M", Size: "M", WindowStart: "1969-12-31T23:59:50Z"})
	runUntil(ctx, t, cfg, 3, `"total":3,"sizes":[{"size":"M","lines":[{"line":"M","windows":[{"window_start":"1969-12-31T23:59:50Z","pairs":[{"toy_id":"b","box_id":"2"},{"toy_id":"c","box_id":"3"}]},`+
		`{"window_start":"2026-12-24T10:00:00Z","pairs":[{"toy_id":"a","box_id":"1"}]}],"pairs":3}],"pairs":3}],"pairs":3}`)
	if entries, err := os.ReadDir(filepath.Join(cfg.StorageDir, "manifest")); err != nil || len(entries) != 2 {
		t.Errorf("the view's files under the storage dir: %v, %v; want one directory per partition", entries, err)
	}
}

// runInBackground runs s until the returned stop is called, which fails t
// if Run returned an error.
func runInBackground(t *testing.T, ctx context.Context, s *sleigh.Sleigh) (stop func()) {
	run, cancel := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- s.Run(run) }()
	return func() {
		cancel()
		if err := <-ran; err != nil {
			t.Error(err)
		}
	}
}

// unreachableSleigh is a sleigh whose Kafka nobody listens on, giving up
// after a second.
func unreachableSleigh(t *testing.T) *sleigh.Sleigh {
	t.Helper()
	cfg := sleigh.DefaultConfig()
	cfg.Kafka = kafkaconf.Config{Brokers: []string{"127.0.0.1:1"}, RetryFor: time.Second}
	s, err := sleigh.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

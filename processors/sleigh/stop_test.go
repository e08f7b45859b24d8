package sleigh_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/kfakebroker"
	"github.com/northpole-workshop/northpole/internal/results"
	"github.com/northpole-workshop/northpole/internal/stopping"
	"github.com/northpole-workshop/northpole/internal/testsupport/testkafka"
	"github.com/northpole-workshop/northpole/processors/sleigh"
)

// TestStopUnderReaders: a sleigh with its tables on disk, 16 readers paging
// through its manifest, is stopped five times in a row; each time
// ListenAndRun returns nil (the command exits 0) while pages are under way,
// and each restart counts every pair from the kept tables. The server stops
// and the readers leave before the view closes its LevelDB tables, which
// goleveldb forbids with iterators open.
func TestStopUnderReaders(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cfg := sleigh.DefaultConfig()
	cfg.Kafka = testkafka.Config(t)
	cfg.Topic, cfg.Group = testkafka.Unique("sleigh-stop")+"-packed", testkafka.Unique("sleigh-stop")
	cfg.Partitions, cfg.StorageDir = 4, t.TempDir()
	s, err := sleigh.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureTopics(ctx); err != nil {
		t.Fatal(err)
	}
	const pairs = 4000
	var ps []results.Packed
	for i := range pairs {
		ps = append(ps, results.Packed{ToyID: fmt.Sprintf("t%05d", i), BoxID: fmt.Sprintf("b%05d", i), Line: fmt.Sprintf("M/hall-%d", i%50), Size: "M",
			WindowStart: time.Date(2026, 12, 24, 10, 0, 0, 0, time.UTC).Add(time.Duration(i%20) * 10 * time.Second).Format(time.RFC3339)})
	}
	produce(ctx, t, cfg, ps...)

	for round := range 5 {
		s, err := sleigh.New(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		rctx, stop := context.WithCancel(ctx)
		var pages atomic.Int64
		var readers sync.WaitGroup
		counted := make(chan int, 1)
		err = s.ListenAndRun(rctx, "127.0.0.1:0", func(addr net.Addr) {
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
				if sum, err := s.Summary(); err == nil && sum.Complete && sum.Pairs >= pairs || time.Now().After(deadline) {
					counted <- sum.Pairs
					break
				}
			}
			for range 16 {
				readers.Add(1)
				go func() {
					defer readers.Done()
					for rctx.Err() == nil {
						resp, err := http.Get("http://" + addr.String() + "/manifest?size=M&limit=500")
						if err != nil {
							continue
						}
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						pages.Add(1)
					}
				}()
			}
			for pages.Load() < 32 && rctx.Err() == nil {
				time.Sleep(5 * time.Millisecond)
			}
			stop() // as SIGTERM does, with pages under way
		})
		stop()
		readers.Wait()
		if err != nil {
			t.Fatalf("round %d: ListenAndRun stopped with %v, want a clean stop", round, err)
		}
		select {
		case n := <-counted:
			if n != pairs {
				t.Errorf("round %d: the summary counted %d pairs, want %d", round, n, pairs)
			}
		default:
			t.Fatalf("round %d: the sleigh stopped without ever being ready", round)
		}
		if pages.Load() < 32 {
			t.Errorf("round %d: %d pages read before the stop, want at least 32", round, pages.Load())
		}
	}
}

// TestBrokerGoneKeepsTheManifest: when the broker goes away under a running
// sleigh, its view waits for it (goka's auto-reconnect) with the manifest
// it has: the summary still counts every pair, and the sleigh does not
// stop. Before, the view's error stopped the sleigh, and a restart read the
// manifest again from nothing.
func TestBrokerGoneKeepsTheManifest(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	broker, err := kfakebroker.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := sleigh.DefaultConfig()
	cfg.Kafka = kafkaconf.Config{Brokers: broker.Addrs()}
	cfg.Topic, cfg.Group = "gone-packed", "gone"
	s, err := sleigh.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureTopics(ctx); err != nil {
		t.Fatal(err)
	}
	const pairs = 200
	var ps []results.Packed
	for i := range pairs {
		ps = append(ps, results.Packed{ToyID: fmt.Sprintf("t%d", i), BoxID: fmt.Sprintf("b%d", i), Line: "M", Size: "M", WindowStart: "2026-12-24T10:00:00Z"})
	}
	produce(ctx, t, cfg, ps...)
	rctx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- s.Run(rctx) }()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if sum, err := s.Summary(); err == nil && sum.Complete && sum.Pairs == pairs {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sleigh did not count %d pairs within a minute", pairs)
		}
	}
	broker.Close()
	select {
	case err := <-ran:
		t.Fatalf("the sleigh stopped when the broker went away: %v", err)
	case <-time.After(3 * time.Second):
	}
	if sum, err := s.Summary(); err != nil || sum.Pairs != pairs {
		t.Errorf("with the broker gone the summary counts %d pairs (%v), want %d", sum.Pairs, err, pairs)
	}
	stop()
	if err := <-ran; err != nil && !errors.Is(err, stopping.ErrIncomplete) {
		t.Errorf("stopping with the broker gone: %v", err)
	}
}

package packer_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/testsupport/testkafka"
	"github.com/northpole-workshop/northpole/processors/packer"
)

// TestReady: Config.Ready runs once, when the group runs,
// and not at all for a packer that never reached Kafka.
func TestReady(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	cfg := packer.Named(testkafka.Unique("ready"))
	cfg.Kafka = testkafka.Config(t)
	var calls atomic.Int32
	ready := make(chan struct{})
	cfg.Ready = func() {
		if calls.Add(1) == 1 {
			close(ready)
		}
	}
	pk, err := packer.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- pk.Run(ctx) }()
	select {
	case <-ready:
	case err := <-ran:
		t.Fatalf("the packer stopped before it was ready: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the packer was not ready within a minute")
	}
	cancel()
	if err := <-ran; err != nil {
		t.Error(err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("ready called %d times, want once", n)
	}

	cfg.Kafka = kafkaconf.Config{Brokers: []string{"127.0.0.1:1"}, RetryFor: time.Second}
	cfg.Ready = func() { t.Error("ready called for a packer that never reached Kafka") }
	pk, err = packer.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := pk.Run(ctx); err == nil {
		t.Error("Run on an unreachable Kafka returned nil")
	}
}

// TestReadyLine: the line starts with ReadyPrefix, which watchers look for
// at the start of a line, and says what the packer consumes and where.
func TestReadyLine(t *testing.T) {
	cfg := packer.Named("rl")
	cfg.Kafka = kafkaconf.Config{Brokers: []string{"k1:9092", "k2:9092"}}
	got := packer.ReadyLine(cfg)
	want := packer.ReadyPrefix + ": consuming rl-toys, rl-boxes on k1:9092,k2:9092 (group rl-packer-clock)"
	if got != want {
		t.Errorf("ReadyLine = %q, want %q", got, want)
	}
}

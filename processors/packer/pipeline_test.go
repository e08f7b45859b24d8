package packer_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/northpole-workshop/northpole/processors/packer"
	"github.com/northpole-workshop/northpole/processors/packer/outputs"
	"github.com/northpole-workshop/northpole/producers"
)

// runElves runs both streams' elves to the end on the packer pc's input
// topics, with its Kafka, W and L, and the final heartbeats of both at the
// horizon of both (producers.Horizon), so that they close every window of
// both streams.
func runElves(ctx context.Context, pc packer.Config, toys, boxes producers.Config) error {
	toys.Topic, boxes.Topic = pc.Topics.Toys, pc.Topics.Boxes
	h := producers.Horizon(toys, boxes)
	g, gctx := errgroup.WithContext(ctx)
	for _, c := range []producers.Config{toys, boxes} {
		c.Kafka, c.Params = pc.Kafka, pc.Params
		if h.After(c.FinalHeartbeatAt) {
			c.FinalHeartbeatAt = h
		}
		g.Go(func() error {
			e, err := producers.New(c, slog.Default())
			if err != nil {
				return err
			}
			_, err = e.Run(gctx)
			return err
		})
	}
	return g.Wait()
}

// runningPacker is a packer running in this process until Stop.
type runningPacker struct {
	cfg    packer.Config
	cancel context.CancelFunc
	done   chan struct{}
	err    error
	once   sync.Once
}

// startPacker creates cfg's topics and runs a packer of cfg until its Stop.
// Several may run at once: they share the work as instances of one group do.
func startPacker(t testing.TB, ctx context.Context, cfg packer.Config) *runningPacker {
	t.Helper()
	pk, err := packer.New(cfg, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	if err := pk.EnsureTopics(ctx); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &runningPacker{cfg: cfg, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.err = pk.Run(ctx)
	}()
	return r
}

// WaitQuiet returns once the packer's groups have consumed everything, or
// with an error as soon as this packer has stopped by itself.
func (r *runningPacker) WaitQuiet(ctx context.Context, every time.Duration) error {
	stopped := make(chan error, 1)
	go func() { <-r.done; stopped <- r.err }()
	return outputs.WaitQuiet(ctx, r.cfg, every, stopped, slog.Default())
}

// Stop stops the packer and returns what its Run returned (nil for a clean
// stop). It may be called more than once.
func (r *runningPacker) Stop() error {
	r.once.Do(r.cancel)
	<-r.done
	return r.err
}

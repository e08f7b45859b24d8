package packer_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAlignerIdle: a packer whose inputs are idle asks the broker for their
// end offsets about once a second, not every --align-every (100 ms), and
// once the elves write after the quiet its results are still the
// reference's. The broker counts the requests that list both inputs' offsets
// at once: the aligner's (goka's consumers, which resolve their start
// offsets as the group starts, ask for one topic at a time).
func TestAlignerIdle(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	cluster, kc := controlledCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s := smallScenario(811)
	pl := newPipeline(t, kc, s)
	var listed atomic.Int64
	cluster.ControlKey(int16(kmsg.ListOffsets), func(req kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		names := func(topic string) bool {
			return slices.ContainsFunc(req.(*kmsg.ListOffsetsRequest).Topics, func(rt kmsg.ListOffsetsRequestTopic) bool { return rt.Topic == topic })
		}
		if names(pl.cfg.Topics.Toys) && names(pl.cfg.Topics.Boxes) {
			listed.Add(1)
		}
		return nil, nil, false
	})
	ready := make(chan struct{})
	pl.cfg.Ready = func() { close(ready) }
	r := pl.startRunning(t, ctx)
	select {
	case <-ready:
	case <-ctx.Done():
		t.Fatal("the packer did not get ready")
	}

	const quiet = 3 * time.Second
	before := listed.Load()
	time.Sleep(quiet)
	// One look a second, and one more if the ticks fall so; at every tick
	// (100 ms) it would be about 30.
	if n := listed.Load() - before; n < 1 || n > 5 {
		t.Errorf("the aligner listed the idle inputs' end offsets %d times in %v, want 1 to 5 (about once a second)", n, quiet)
	}

	if err := pl.produce(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := r.WaitQuiet(ctx, 250*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	pl.check(t, ctx, s)
}

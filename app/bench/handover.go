package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/northpole-workshop/northpole/processors/packer"
)

// handoverWait bounds each wait of the handover for a group to settle.
const handoverWait = 2 * time.Minute

// handover measures a rebalance that moves the state, for the lines
// variant: two instances of worker w (the state the run left) join one
// group; once they hold every partition between them, the one that holds
// the clock group's first partition (the larger table: a line's clock for
// every line) is stopped, and HandoverSeconds is the wall time from its
// SIGTERM until the other runs, holding every partition with its table
// recovered. That is what an operator waits when an instance
// leaves: the group's rebalance, and the survivor reading the leaver's
// tables.
func (b *Bench) handover(ctx context.Context, w Worker, env []string, r *Result) error {
	w.CPUProfile = ""
	var ins []instance
	defer func() {
		for _, in := range ins {
			_, _ = in.proc.halt()
		}
	}()
	for range 2 {
		addr, err := freeLoopbackAddr()
		if err != nil {
			return fmt.Errorf("handover: %w", err)
		}
		w.Listen = addr
		proc, err := b.start(ctx, w, env, false)
		if err != nil {
			return fmt.Errorf("handover: start a packer: %w", err)
		}
		ins = append(ins, instance{proc: proc, health: addr})
	}
	cfg := w.Packer
	hs, err := waitHealths(ctx, ins, func(hs []packer.Health) bool { return holdAll(hs, cfg) })
	if err != nil {
		return fmt.Errorf("handover: two packers holding every partition: %w", err)
	}
	leaver := 0
	if clockHolds(hs[1], cfg, 0) {
		leaver = 1
	}
	stay := ins[1-leaver]
	began := time.Now()
	if _, err := ins[leaver].proc.halt(); err != nil {
		return fmt.Errorf("handover: the leaving packer: %w", exitErr(err))
	}
	r.HandoverExitSeconds = time.Since(began).Seconds()
	ins = []instance{stay}
	if _, err := waitHealths(ctx, ins, func(hs []packer.Health) bool { return holdAll(hs, cfg) }); err != nil {
		return fmt.Errorf("handover: the other packer taking every partition: %w", err)
	}
	r.HandoverSeconds = time.Since(began).Seconds()
	return nil
}

// waitHealths polls the instances' health until ok says they are where
// the caller waits for, and returns it; at most handoverWait.
func waitHealths(ctx context.Context, ins []instance, ok func([]packer.Health) bool) ([]packer.Health, error) {
	ctx, cancel := context.WithTimeout(ctx, handoverWait)
	defer cancel()
	hs := make([]packer.Health, len(ins))
	var last error
	for {
		last = nil
		for i, in := range ins {
			h, err := fetchHealth(ctx, in.health)
			if err != nil {
				last = err
			}
			hs[i] = h
		}
		if last == nil && ok(hs) {
			return hs, nil
		}
		select {
		case <-ctx.Done():
			return nil, errors.Join(fmt.Errorf("not within %s", handoverWait), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// holdAll says whether every instance runs and, among them, they hold every
// partition of both of cfg's groups exactly once.
func holdAll(hs []packer.Health, cfg packer.Config) bool {
	held := map[string][]int32{}
	for _, h := range hs {
		if !h.Running {
			return false
		}
		for _, g := range h.Groups {
			held[g.Group] = append(held[g.Group], g.Partitions...)
		}
	}
	for _, g := range cfg.Groups() {
		ps := slices.Sorted(slices.Values(held[g]))
		if len(ps) != int(cfg.Partitions) || len(slices.Compact(ps)) != int(cfg.Partitions) {
			return false
		}
	}
	return true
}

// clockHolds says whether h's clock group holds partition p.
func clockHolds(h packer.Health, cfg packer.Config, p int32) bool {
	clock := cfg.GroupInputs()[0].Group
	for _, g := range h.Groups {
		if g.Group == clock {
			return slices.Contains(g.Partitions, p)
		}
	}
	return false
}

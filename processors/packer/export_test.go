package packer

import (
	"context"
	"maps"
	"slices"
)

// HeldPartitions are the partitions whose state (clocks, dedupe entries,
// slots) this packer keeps in memory now, and those whose clock table
// records the cleaner deletes (their horizons). Both nil before Run has
// built the group.
func (p *Packer) HeldPartitions() (held, cleaned []int32) {
	// Run publishes its processor after it built the stores: loading it
	// orders the reads below after that build.
	if p.proc.Load() == nil {
		return nil, nil
	}
	s := p.clockStores
	held = slices.Sorted(maps.Keys(s.parts()))
	return held, slices.Sorted(maps.Keys(s.horizons()))
}

// ConsumedByPartition is the input records each partition this packer
// holds has consumed since it was assigned here; nil before Run has built
// the group.
func (p *Packer) ConsumedByPartition(ctx context.Context) map[int32]uint {
	proc := p.proc.Load()
	if proc == nil {
		return nil
	}
	out := map[int32]uint{}
	sctx, cancel := context.WithTimeout(ctx, healthTimeout)
	stats := proc.StatsWithContext(sctx)
	cancel()
	for part, ps := range stats.Group {
		for _, in := range ps.Input {
			out[part] += in.Count
		}
	}
	return out
}

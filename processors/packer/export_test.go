package packer

import (
	"context"
	"maps"
	"slices"
)

// HeldPartitions are the partitions whose state this packer keeps in memory
// now, per group table: the clock group's (clocks, dedupe entries) and the
// slots group's (slots), and those of the slots group whose clock table
// records the cleaner deletes (its horizons). All nil before Run has built
// the groups.
func (p *Packer) HeldPartitions() (clock, slots, cleaned []int32) {
	// Run publishes its processors after it built the stores: loading them
	// orders the reads below after that build.
	if p.procs.Load() == nil {
		return nil, nil, nil
	}
	held := func(s *tableStores) []int32 {
		s.mu.Lock()
		defer s.mu.Unlock()
		return slices.Sorted(maps.Keys(s.m))
	}
	return held(p.clockStores), held(p.slotStores), slices.Sorted(maps.Keys(p.slotStores.horizons()))
}

// ConsumedByPartition is, per group (clock, slots), the input records each
// partition this packer holds has consumed since it was assigned here; nil
// before Run has built the groups.
func (p *Packer) ConsumedByPartition(ctx context.Context) []map[int32]uint {
	procs := p.procs.Load()
	if procs == nil {
		return nil
	}
	out := make([]map[int32]uint, len(*procs))
	for i, proc := range *procs {
		out[i] = map[int32]uint{}
		sctx, cancel := context.WithTimeout(ctx, healthTimeout)
		stats := proc.StatsWithContext(sctx)
		cancel()
		for part, ps := range stats.Group {
			for _, in := range ps.Input {
				out[i][part] += in.Count
			}
		}
	}
	return out
}

package packer

import (
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

package packer

import (
	"fmt"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/storage"
)

// tableStores are the storages of the clock group's table, one per
// partition the group holds, and beside each what the partition's
// callbacks keep besides their key's value (goka gives a callback only
// that): the key clocks, the dedupe entries and the slots, in memory. None
// is a Kafka record of its own: goka's recovery of the table sets them
// again from its decisions (recoverClock).
type tableStores struct {
	topic string
	// follow: each partition keeps a horizon (horizon.go), for the cleaner.
	follow bool
	// counts: each partition counts what it holds (partState), for the
	// metrics.
	counts bool
	// open, when set, prepares a partition's new storage before goka
	// recovers it.
	open func(partition int32, part *tablePart) error
	// byPartition maps each partition held to its part. Every record looks its
	// partition up, from goroutines on every core, and the map changes only
	// when goka builds or closes a storage: so readers load it without a
	// lock, and a change copies it (under mu, which orders the changes).
	mu          sync.Mutex
	byPartition atomic.Pointer[map[int32]*tablePart]
}

func newTableStores(topic string, follow, counts bool) *tableStores {
	s := &tableStores{topic: topic, follow: follow, counts: counts}
	s.byPartition.Store(&map[int32]*tablePart{})
	return s
}

// parts is the partitions held now, not to be changed.
func (s *tableStores) parts() map[int32]*tablePart { return *s.byPartition.Load() }

// change applies f to a copy of the partitions held, which then replaces them.
func (s *tableStores) change(f func(map[int32]*tablePart)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := maps.Clone(s.parts())
	f(m)
	s.byPartition.Store(&m)
}

// builder remembers every storage that inner builds for the table, for as
// long as goka holds it. goka builds one whenever it is assigned a
// partition, before recovering it, so a partition's key clocks and horizon start
// empty with its storage; and it closes every storage when a rebalance
// begins (its consumer group's Cleanup stops every partition processor, which
// closes its table), building again those of the partitions it is assigned
// next. A partition is held from its storage's build to its Close: a revoked
// partition's key clocks, dedupe entries, slots and horizon go with it, and the
// cleaner no longer deletes records there.
func (s *tableStores) builder(inner storage.Builder) storage.Builder {
	return func(topic string, partition int32) (storage.Storage, error) {
		store, err := inner(topic, partition)
		if err != nil || topic != s.topic {
			return store, err
		}
		part := &tablePart{store: store, topic: topic, keyClocks: map[string]*keyClock{}, slots: map[windowRef]*windowSlots{}}
		if s.follow {
			part.horizon = newHorizon()
		}
		if s.counts {
			part.state = &partState{}
		}
		s.change(func(m map[int32]*tablePart) { m[partition] = part })
		h := &held{Storage: store, part: part, drop: func() { s.drop(partition, part) }}
		if s.open != nil {
			h.open = func() error { return s.open(partition, part) }
		}
		return h, nil
	}
}

// drop forgets part, unless goka has built another storage for its
// partition since.
func (s *tableStores) drop(partition int32, part *tablePart) {
	s.change(func(m map[int32]*tablePart) {
		if m[partition] == part {
			delete(m, partition)
		}
	})
}

// held is a storage that the table's partition is held with: prepared when
// goka opens it (open, when set), before goka recovers the table or runs a
// callback of the partition, told when the recovery ends and of the offset
// of each decision written after it, and dropped when goka closes it.
type held struct {
	storage.Storage
	part *tablePart
	open func() error
	drop func()
}

func (h *held) Open() error {
	if err := h.Storage.Open(); err != nil {
		return err
	}
	if h.open == nil {
		return nil
	}
	return h.open()
}

func (h *held) MarkRecovered() error {
	h.part.recovered()
	return h.Storage.MarkRecovered()
}

// SetOffset is, after the recovery, goka's word that the decision written
// at offset was acknowledged (goka's table writes, in the order the
// sequencer releases them: the order of the writes).
func (h *held) SetOffset(offset int64) error {
	h.part.written(offset)
	return h.Storage.SetOffset(offset)
}

func (h *held) Close() error {
	h.drop()
	return h.Storage.Close()
}

// tablePart is one partition of the clock table: its storage, the clocks of
// the keys in it, which live in memory only (keyclock.go), the bookkeeping
// of what the table must keep (horizon.go; nil when the packer does not
// clean the table), and what the recovery leaves for the records delivered
// again (replay.go).
type tablePart struct {
	store     storage.Storage
	topic     string
	keyClocks map[string]*keyClock
	slots     map[windowRef]*windowSlots // the open windows' slots, by line and window (slots.go)
	// lastWindow is the window whose start a row wrote last (windowText).
	lastWindow struct {
		start int64
		text  string
	}
	order   []string     // keyClocks' keys, in the order they were first seen
	walk    snapshotWalk // over order, a piece at a time (clock.go)
	ev      decision     // the decision being made, of whichever key (keyClock.Ev)
	horizon *horizon
	// facts are the horizon's facts of the decisions written and not yet
	// acknowledged, oldest first.
	facts factQueue
	// committed are the group's committed offsets of the partition's
	// inputs when goka opened the storage; replays the decisions of the
	// records after them, by record; closedKept the windows closed whose
	// slots are kept until every replay is done (replay.go).
	committed  [nInputs]int64
	replays    map[recordRef]*decision
	closedKept []closedWindowOf
	// state counts what the partition holds, for the metrics; nil when
	// they are off. A revoked partition's counts go with it.
	state *partState
}

// horizons are the horizons of the partitions held now, none when the
// partitions keep none.
func (s *tableStores) horizons() map[int32]*horizon {
	parts := s.parts()
	out := make(map[int32]*horizon, len(parts))
	for p, t := range parts {
		if t.horizon != nil {
			out[p] = t.horizon
		}
	}
	return out
}

// horizonOf is partition's horizon, nil when it is not held or keeps none.
func (s *tableStores) horizonOf(partition int32) *horizon {
	if t, ok := s.parts()[partition]; ok {
		return t.horizon
	}
	return nil
}

// clockOf is the clock of key, new when it has none yet. One goroutine at a
// time uses a partition: goka's recovery, then the partition's callbacks.
func (t *tablePart) clockOf(key string) *keyClock {
	kc, ok := t.keyClocks[key]
	if !ok {
		kc = &keyClock{size: lineSizeIndex(key), Ev: &t.ev}
		t.keyClocks[key] = kc
		t.order = append(t.order, key)
	}
	return kc
}

// part is the table's partition: goka builds its storage before it recovers
// or processes the partition (and hands the update callback that storage
// behind a proxy of its own, so recovery looks it up here too).
func (s *tableStores) part(partition int32) (*tablePart, error) {
	if t, ok := s.parts()[partition]; ok {
		return t, nil
	}
	return nil, fmt.Errorf("no storage of partition %d of %s: goka did not build one", partition, s.topic)
}

// of is part for the partition ctx processes; it fails ctx without one.
func (s *tableStores) of(ctx goka.Context) *tablePart {
	t, err := s.part(ctx.Partition())
	if err != nil {
		ctx.Fail(err)
	}
	return t
}

// recoverError says which table record goka's recovery failed on.
func recoverError(ctx goka.UpdateContext, err error) error {
	return fmt.Errorf("recover %s partition %d offset %d: %w", ctx.Topic(), ctx.Partition(), ctx.Offset(), err)
}

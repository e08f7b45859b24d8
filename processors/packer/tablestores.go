package packer

import (
	"fmt"
	"sync"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/storage"
)

// tableStores are the storages of a group's own table, one per partition
// the group holds, for the values a callback reads and writes at keys other
// than its own: goka gives a callback only its current key's value, the
// size's. The clock group's table holds the dedupe entries beside the
// clocks, the slots group's the slots. A callback sets such a value in the
// partition's storage (put), and what goes to Kafka is a record at the
// callback's own key from which goka's recovery of the table sets the value
// again (recoverClock, recoverSlots): goka recovers a group table before the
// partition's callbacks run, and then only the group writes it.
type tableStores struct {
	topic string
	mu    sync.Mutex
	m     map[int32]*tablePart
}

func newTableStores(topic string) *tableStores {
	return &tableStores{topic: topic, m: map[int32]*tablePart{}}
}

// builder remembers every storage that inner builds for the table. goka
// builds one whenever it is assigned a partition, before recovering it, so
// a partition's clocks start empty with its storage.
func (s *tableStores) builder(inner storage.Builder) storage.Builder {
	return func(topic string, partition int32) (storage.Storage, error) {
		st, err := inner(topic, partition)
		if err == nil && topic == s.topic {
			s.mu.Lock()
			s.m[partition] = &tablePart{st: st, topic: topic, clocks: map[string]*sizeClock{}}
			s.mu.Unlock()
		}
		return st, err
	}
}

// tablePart is one partition of a table: its storage, and the clock group's
// states of the sizes in it, which live in memory only (clock.go).
type tablePart struct {
	st     storage.Storage
	topic  string
	clocks map[string]*sizeClock
}

// clock is the state of size's clock, new when it has none yet. One
// goroutine at a time uses a partition: goka's recovery, then the
// partition's callbacks.
func (t *tablePart) clock(size string) *sizeClock {
	st, ok := t.clocks[size]
	if !ok {
		st = &sizeClock{}
		t.clocks[size] = st
	}
	return st
}

// of is the table's partition that ctx processes.
func (s *tableStores) of(ctx goka.Context) *tablePart {
	s.mu.Lock()
	t, ok := s.m[ctx.Partition()]
	s.mu.Unlock()
	if !ok {
		ctx.Fail(fmt.Errorf("no storage of partition %d of %s: goka did not build one", ctx.Partition(), s.topic))
	}
	return t
}

// shard is the table's partition that goka recovers. goka builds its
// storage just before, and hands the update callback that storage behind
// a proxy of its own.
func (s *tableStores) shard(partition int32) (*tablePart, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.m[partition]; ok {
		return t, nil
	}
	return nil, fmt.Errorf("no storage of partition %d of %s: goka did not build one", partition, s.topic)
}

// recoverError says which table record goka's recovery failed on.
func recoverError(ctx goka.UpdateContext, err error) error {
	return fmt.Errorf("recover %s partition %d offset %d: %w", ctx.Topic(), ctx.Partition(), ctx.Offset(), err)
}

// get decodes key's value with c; nil when there is none.
func get[T any, PT interface {
	*T
	binMsg
}](ctx goka.Context, j *tablePart, key string, c binCodec[T, PT]) PT {
	b, err := j.st.Get(key)
	if err == nil && b == nil {
		return nil
	}
	var v any
	if err == nil {
		v, err = c.Decode(b)
	}
	if err != nil {
		ctx.Fail(fmt.Errorf("read %q in partition %d of %s: %w", key, ctx.Partition(), j.topic, err))
	}
	return v.(PT)
}

// put sets v as key's value in the storage; it returns the encoding.
func put[T any, PT interface {
	*T
	binMsg
}](ctx goka.Context, j *tablePart, key string, c binCodec[T, PT], v PT) []byte {
	enc, err := c.Encode(v)
	if err == nil {
		err = j.st.Set(key, enc)
	}
	if err != nil {
		ctx.Fail(fmt.Errorf("write %q in partition %d of %s: %w", key, ctx.Partition(), j.topic, err))
	}
	return enc
}

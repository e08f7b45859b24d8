package packer

import (
	"fmt"
	"sync"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/storage"
)

// joinedStores are the storages of one table that a group writes itself and
// joins (the dedupe entries, the slots), one per partition the group holds.
// goka recovers a joined table before the partition's callbacks run and then
// applies its changelog as it grows, but a callback reads a joined table only
// at the current key, and would see its own writes only once they came back
// from Kafka. So the group reads and sets the table's values in the
// partition's storage itself and writes each change to the table's topic
// (set), which goka's catching up then sets again with the same bytes.
type joinedStores struct {
	topic string
	mu    sync.Mutex
	m     map[int32]storage.Storage
}

func newJoinedStores(topic string) *joinedStores {
	return &joinedStores{topic: topic, m: map[int32]storage.Storage{}}
}

// builder remembers every storage that inner builds for the table. goka
// builds one whenever it is assigned a partition, before recovering it.
func (s *joinedStores) builder(inner storage.Builder) storage.Builder {
	return func(topic string, partition int32) (storage.Storage, error) {
		st, err := inner(topic, partition)
		if err == nil && topic == s.topic {
			s.mu.Lock()
			s.m[partition] = st
			s.mu.Unlock()
		}
		return st, err
	}
}

// joinedPart is one partition's storage of a joined table, and the table.
type joinedPart struct {
	st    storage.Storage
	topic string
}

// of is the storage of the table's partition that ctx processes.
func (s *joinedStores) of(ctx goka.Context) joinedPart {
	s.mu.Lock()
	st, ok := s.m[ctx.Partition()]
	s.mu.Unlock()
	if !ok {
		ctx.Fail(fmt.Errorf("no storage of partition %d of %s: goka did not build one", ctx.Partition(), s.topic))
	}
	return joinedPart{st: st, topic: s.topic}
}

// get decodes key's value with c; nil when there is none.
func get[T any, PT interface {
	*T
	binMsg
}](ctx goka.Context, j joinedPart, key string, c binCodec[T, PT]) PT {
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

// set writes v as key's value: into the storage at once, and to the table's
// topic.
func set[T any, PT interface {
	*T
	binMsg
}](ctx goka.Context, j joinedPart, key string, c binCodec[T, PT], v PT) {
	enc, err := c.Encode(v)
	if err == nil {
		err = j.st.Set(key, enc)
	}
	if err != nil {
		ctx.Fail(fmt.Errorf("write %q in partition %d of %s: %w", key, ctx.Partition(), j.topic, err))
	}
	ctx.Emit(goka.Stream(j.topic), key, enc)
}

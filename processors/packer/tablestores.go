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
	m     map[int32]storage.Storage
}

func newTableStores(topic string) *tableStores {
	return &tableStores{topic: topic, m: map[int32]storage.Storage{}}
}

// builder remembers every storage that inner builds for the table. goka
// builds one whenever it is assigned a partition, before recovering it.
func (s *tableStores) builder(inner storage.Builder) storage.Builder {
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

// tablePart is one partition's storage of a table, and the table.
type tablePart struct {
	st    storage.Storage
	topic string
}

// of is the storage of the table's partition that ctx processes.
func (s *tableStores) of(ctx goka.Context) tablePart {
	s.mu.Lock()
	st, ok := s.m[ctx.Partition()]
	s.mu.Unlock()
	if !ok {
		ctx.Fail(fmt.Errorf("no storage of partition %d of %s: goka did not build one", ctx.Partition(), s.topic))
	}
	return tablePart{st: st, topic: s.topic}
}

// get decodes key's value with c; nil when there is none.
func get[T any, PT interface {
	*T
	binMsg
}](ctx goka.Context, j tablePart, key string, c binCodec[T, PT]) PT {
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
}](ctx goka.Context, j tablePart, key string, c binCodec[T, PT], v PT) []byte {
	enc, err := c.Encode(v)
	if err == nil {
		err = j.st.Set(key, enc)
	}
	if err != nil {
		ctx.Fail(fmt.Errorf("write %q in partition %d of %s: %w", key, ctx.Partition(), j.topic, err))
	}
	return enc
}

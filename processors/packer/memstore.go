package packer

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/lovoo/goka/storage"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// memStore is the packer's in-memory goka storage. goka's own
// (storage.NewMemory) re-sorts its whole key list on every new key, which makes
// a partition's table quadratic in its number of keys: with 200,000 input
// records three quarters of the packer's CPU went to that sort (see
// docs/PERFORMANCE.md). The packer never iterates its tables while processing,
// so memStore keeps a plain map and sorts the keys only when an iterator is
// asked for. Behaviour is otherwise that of goka's memory storage: iterators
// see a snapshot, and the offset lives outside the key space.
type memStore struct {
	mu     sync.RWMutex
	data   map[string][]byte
	offset *int64
}

func memStoreBuilder() storage.Builder {
	return func(topic string, partition int32) (storage.Storage, error) {
		return &memStore{data: map[string][]byte{}}, nil
	}
}

func (m *memStore) Open() error          { return nil }
func (m *memStore) Close() error         { return nil }
func (m *memStore) MarkRecovered() error { return nil }

func (m *memStore) Has(key string) (bool, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	_, ok := m.data[key]
	return ok, nil
}

func (m *memStore) Get(key string) ([]byte, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.data[key], nil
}

func (m *memStore) Set(key string, value []byte) error {
	if value == nil {
		return fmt.Errorf("cannot write nil value")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.data[key] = value
	return nil
}

func (m *memStore) Delete(key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.data, key)
	return nil
}

func (m *memStore) SetOffset(offset int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.offset = &offset
	return nil
}

func (m *memStore) GetOffset(def int64) (int64, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.offset == nil {
		return def, nil
	}
	return *m.offset, nil
}

func (m *memStore) Iterator() (storage.Iterator, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	snap := maps.Clone(m.data)
	return &memStoreIter{current: -1, keys: slices.Sorted(maps.Keys(snap)), data: snap}, nil
}

func (m *memStore) IteratorWithRange(start, limit []byte) (storage.Iterator, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if len(limit) == 0 {
		limit = util.BytesPrefix(start).Limit
	}
	snap := map[string][]byte{}
	for k, v := range m.data {
		if bytes.Compare([]byte(k), start) > -1 && bytes.Compare([]byte(k), limit) < 1 {
			snap[k] = v
		}
	}
	return &memStoreIter{current: -1, keys: slices.Sorted(maps.Keys(snap)), data: snap}, nil
}

// memStoreIter walks a snapshot in key order (goka's memiter, without the
// offset key, which memStore never stores among the keys).
type memStoreIter struct {
	current int
	keys    []string
	data    map[string][]byte
}

func (i *memStoreIter) exhausted() bool { return len(i.keys) <= i.current }
func (i *memStoreIter) Next() bool      { i.current++; return !i.exhausted() }
func (*memStoreIter) Err() error        { return nil }
func (i *memStoreIter) Release()        { i.current = len(i.keys) }

func (i *memStoreIter) Key() []byte {
	if i.current < 0 || i.exhausted() {
		return nil
	}
	return []byte(i.keys[i.current])
}

func (i *memStoreIter) Value() ([]byte, error) {
	if i.current < 0 || i.exhausted() {
		return nil, nil
	}
	return i.data[i.keys[i.current]], nil
}

func (i *memStoreIter) Seek(key []byte) bool {
	if i.exhausted() {
		return false
	}
	if i.current < 0 && !i.Next() {
		return false
	}
	for i.current < len(i.keys) {
		if strings.HasPrefix(i.keys[i.current], string(key)) {
			break
		}
		i.current++
	}
	return !i.exhausted()
}

package gokastore

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/lovoo/goka/storage"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// Memory keeps each partition's table in memory, rebuilt from its changelog at
// start, like goka's storage.MemoryBuilder, without its two costs:
//
//   - goka's memory storage appends every new key to a slice and re-sorts the
//     whole slice on each insert, so a table is quadratic in its number of
//     keys (three quarters of the packer's CPU at 200,000 records). Memory
//     sorts only when an iterator is asked for; processors never iterate.
//   - a map[string][]byte holds two heap objects per key, which every garbage
//     collection marks: with a million keys the packer spent a fifth or more of
//     its CPU marking its tables. Memory copies keys and values into large byte
//     slabs and indexes them with a map whose keys and values hold no pointers,
//     so a collection marks a few dozen slabs instead of millions of objects.
//   - bytes on the Go heap count towards the collector's goal, which lets the
//     heap grow to twice what is live (GOGC=100) before it collects, so tables
//     on the heap cost up to twice their size in memory. The slabs are mapped
//     outside the heap (slab_unix.go) and unmapped when they are compacted
//     away or the storage is no longer reachable.
//
// Get returns a copy: a value's bytes may be overwritten in place by the next
// Set of its key. Iterators see a snapshot, and the offset lives outside the key
// space, as in goka's memory storage.
func Memory() storage.Builder {
	return func(topic string, partition int32) (storage.Storage, error) {
		return newMemory(), nil
	}
}

const (
	slabSize = 1 << 20
	// compactAt is the least garbage (bytes of slabs no entry uses) worth a
	// compaction; below it the waste is not worth the copy.
	compactAt = 16 << 20
)

type memory struct {
	mu   sync.RWMutex
	hash func(string) uint64
	// index maps a key's hash to its entry. Both are integers, so the
	// collector never scans the map. clash holds the (practically never
	// seen) keys whose hash an other key already has in index.
	index   map[uint64]int32
	clash   map[string]int32
	entries []memEntry // no pointers either
	free    []int32    // deleted entries, to reuse
	slabs   *slabList
	live    int // bytes of slabs that entries use
	garbage int // bytes of slabs that no entry uses any more
	// compactAt is compactAt, smaller in tests.
	compactAt int
	offset    *int64
}

// memEntry locates one key and its value: the key's bytes, then room for vcap
// bytes of value, of which the first vlen are the value. A value that does not
// outgrow its room is rewritten in place.
type memEntry struct {
	slab             int32 // -1: deleted
	off              uint32
	klen, vlen, vcap uint32
}

func (e memEntry) size() int { return int(e.klen + e.vcap) }

func newMemory() *memory {
	seed := maphash.MakeSeed()
	m := &memory{
		hash:      func(k string) uint64 { return maphash.String(seed, k) },
		index:     map[uint64]int32{},
		clash:     map[string]int32{},
		slabs:     &slabList{},
		compactAt: compactAt,
	}
	// goka may close a storage while a callback still holds it (the packer's
	// joined tables), so the slabs go only once nothing can reach them.
	runtime.AddCleanup(m, (*slabList).free, m.slabs)
	return m
}

// slabList is a memory's slabs, apart from it, so that a cleanup can unmap
// them once the memory is unreachable.
type slabList struct {
	s      [][]byte
	mapped []bool // s[i] is outside the Go heap
}

func (l *slabList) add(n int) {
	b, mapped := newSlab(n)
	l.s = append(l.s, b)
	l.mapped = append(l.mapped, mapped)
}

func (l *slabList) free() {
	for i, b := range l.s {
		if l.mapped[i] {
			freeSlab(b)
		}
	}
	l.s, l.mapped = nil, nil
}

func (m *memory) Open() error          { return nil }
func (m *memory) Close() error         { return nil }
func (m *memory) MarkRecovered() error { return nil }

func (m *memory) keyOf(e memEntry) []byte {
	return m.slabs.s[e.slab][e.off : e.off+e.klen]
}

func (m *memory) valueOf(e memEntry) []byte {
	start := e.off + e.klen
	return m.slabs.s[e.slab][start : start+e.vlen]
}

// lookup returns key's entry and hash; ok is false when key is absent.
func (m *memory) lookup(key string) (i int32, h uint64, ok bool) {
	h = m.hash(key)
	if i, ok := m.index[h]; ok && string(m.keyOf(m.entries[i])) == key {
		return i, h, true
	}
	if len(m.clash) > 0 {
		i, ok := m.clash[key]
		return i, h, ok
	}
	return 0, h, false
}

// alloc returns room for n bytes in the last slab, starting a new slab when it
// is full; a value larger than a slab gets a slab of its own.
func (m *memory) alloc(n int) (slab int32, off uint32) {
	slabs := m.slabs.s
	last := len(slabs) - 1
	if last < 0 || cap(slabs[last])-len(slabs[last]) < n {
		if last >= 0 {
			m.garbage += cap(slabs[last]) - len(slabs[last]) // the tail no one will use
		}
		m.slabs.add(max(n, slabSize))
		slabs = m.slabs.s
		last++
	}
	s := slabs[last]
	slabs[last] = s[:len(s)+n]
	m.live += n
	return int32(last), uint32(len(s))
}

// place writes key and value into fresh room with vcap bytes for the value.
func (m *memory) place(key string, value []byte, vcap int) memEntry {
	slab, off := m.alloc(len(key) + vcap)
	dst := m.slabs.s[slab][off:]
	copy(dst, key)
	copy(dst[len(key):], value)
	return memEntry{slab: slab, off: off, klen: uint32(len(key)), vlen: uint32(len(value)), vcap: uint32(vcap)}
}

func (m *memory) release(e memEntry) {
	m.live -= e.size()
	m.garbage += e.size()
}

func (m *memory) Has(key string) (bool, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	_, _, ok := m.lookup(key)
	return ok, nil
}

func (m *memory) Get(key string) ([]byte, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	i, _, ok := m.lookup(key)
	if !ok {
		return nil, nil
	}
	return bytes.Clone(m.valueOf(m.entries[i])), nil
}

func (m *memory) Set(key string, value []byte) error {
	if value == nil {
		return fmt.Errorf("cannot write nil value")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	i, h, ok := m.lookup(key)
	if ok {
		e := &m.entries[i]
		if len(value) <= int(e.vcap) {
			start := e.off + e.klen
			copy(m.slabs.s[e.slab][start:], value)
			e.vlen = uint32(len(value))
			return nil
		}
		// Outgrown: move, with room for growth, since values that grow
		// (a clock's open windows, a slot's second id) tend to grow again.
		m.release(*e)
		*e = m.place(key, value, len(value)+len(value)/2)
		m.maybeCompact()
		return nil
	}
	e := m.place(key, value, len(value))
	if n := len(m.free); n > 0 {
		i = m.free[n-1]
		m.free = m.free[:n-1]
		m.entries[i] = e
	} else {
		i = int32(len(m.entries))
		m.entries = append(m.entries, e)
	}
	if _, taken := m.index[h]; taken {
		m.clash[key] = i
	} else {
		m.index[h] = i
	}
	return nil
}

func (m *memory) Delete(key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	i, h, ok := m.lookup(key)
	if !ok {
		return nil
	}
	if j, inIndex := m.index[h]; inIndex && j == i {
		delete(m.index, h)
	} else {
		delete(m.clash, key)
	}
	m.release(m.entries[i])
	m.entries[i] = memEntry{slab: -1}
	m.free = append(m.free, i)
	m.maybeCompact()
	return nil
}

// maybeCompact copies the live entries into new slabs once the garbage
// outweighs them, so memory stays within about twice the live bytes; the copy
// is paid for by the garbage bytes written since the last one.
func (m *memory) maybeCompact() {
	if m.garbage < m.compactAt || m.garbage < m.live {
		return
	}
	old := *m.slabs
	*m.slabs, m.live, m.garbage = slabList{}, 0, 0
	for i, e := range m.entries {
		if e.slab < 0 {
			continue
		}
		src := old.s[e.slab][e.off:]
		slab, off := m.alloc(e.size())
		copy(m.slabs.s[slab][off:], src[:e.klen+e.vlen])
		m.entries[i].slab, m.entries[i].off = slab, off
	}
	// Every read copies out under the lock, so nothing points into them.
	old.free()
}

func (m *memory) SetOffset(offset int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.offset = &offset
	return nil
}

func (m *memory) GetOffset(def int64) (int64, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.offset == nil {
		return def, nil
	}
	return *m.offset, nil
}

// snapshot copies the entries whose keys keep returns true.
func (m *memory) snapshot(keep func(key []byte) bool) map[string][]byte {
	m.mu.RLock()
	defer m.mu.RUnlock()
	snap := map[string][]byte{}
	for _, e := range m.entries {
		if e.slab < 0 || !keep(m.keyOf(e)) {
			continue
		}
		snap[string(m.keyOf(e))] = bytes.Clone(m.valueOf(e))
	}
	return snap
}

func (m *memory) Iterator() (storage.Iterator, error) {
	return newMemIter(m.snapshot(func([]byte) bool { return true })), nil
}

// IteratorWithRange keeps the keys from start to limit, both included, as
// goka's memory storage does; an empty limit means every key with prefix start.
func (m *memory) IteratorWithRange(start, limit []byte) (storage.Iterator, error) {
	if len(limit) == 0 {
		limit = util.BytesPrefix(start).Limit
	}
	return newMemIter(m.snapshot(func(k []byte) bool {
		return bytes.Compare(k, start) >= 0 && bytes.Compare(k, limit) <= 0
	})), nil
}

// memIter walks a snapshot in key order (goka's memiter, without the offset
// key, which memory never stores among the keys).
type memIter struct {
	current int
	keys    []string
	data    map[string][]byte
}

func newMemIter(snap map[string][]byte) *memIter {
	return &memIter{current: -1, keys: slices.Sorted(maps.Keys(snap)), data: snap}
}

func (i *memIter) exhausted() bool { return len(i.keys) <= i.current }
func (i *memIter) Next() bool      { i.current++; return !i.exhausted() }
func (*memIter) Err() error        { return nil }
func (i *memIter) Release()        { i.current = len(i.keys) }

func (i *memIter) Key() []byte {
	if i.current < 0 || i.exhausted() {
		return nil
	}
	return []byte(i.keys[i.current])
}

func (i *memIter) Value() ([]byte, error) {
	if i.current < 0 || i.exhausted() {
		return nil, nil
	}
	return i.data[i.keys[i.current]], nil
}

func (i *memIter) Seek(key []byte) bool {
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

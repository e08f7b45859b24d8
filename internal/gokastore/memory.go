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
	"unsafe"

	"github.com/lovoo/goka/storage"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// Memory keeps each partition's table in memory, rebuilt from its changelog at
// start, like goka's storage.MemoryBuilder, without its costs:
//
//   - goka's memory storage appends every new key to a slice and re-sorts the
//     whole slice on each insert, so a table is quadratic in its number of
//     keys (three quarters of the packer's CPU at 200,000 records). Memory
//     sorts only when an iterator is asked for; processors never iterate.
//   - a map[string][]byte holds two heap objects per key, which every garbage
//     collection marks: with a million keys the packer spent a fifth or more of
//     its CPU marking its tables. Memory copies keys and values into large byte
//     slabs and finds them through an index and entries of integers, so a
//     collection marks none of them instead of millions of objects.
//   - bytes on the Go heap count towards the collector's goal, which lets the
//     heap grow to twice what is live (GOGC=100) before it collects, so tables
//     on the heap cost up to twice their size in memory. The slabs, and the
//     index and entries that find keys in them, are mapped outside the heap
//     (slab_unix.go) and unmapped when they are compacted away, outgrown, or
//     the storage is no longer reachable. The index is an open-addressing
//     table of 8 bytes a slot, where a Go map took about 26 bytes a key.
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
	// shrinkSlack is the room beyond twice its value a key may keep; a value
	// that shrinks below that moves to room of its size (Set).
	shrinkSlack = 64
)

type memory struct {
	mu    sync.RWMutex
	hash  func(string) uint64
	slabs *slabList // the slabs, and the regions of index and entries
	// index is a linear-probing table of slots (see slot), a power of two
	// long, at most three quarters full; keys counts its slots in use.
	index []uint64
	keys  int
	// entries are every entry made, deleted ones included, in a region
	// whose length is their capacity.
	entries []memEntry
	nEntry  int
	free    []int32 // deleted entries, to reuse
	live    int     // bytes of slabs that entries use
	garbage int     // bytes of slabs that no entry uses any more
	// compactAt is compactAt, smaller in tests.
	compactAt int
	// offset is the table's offset once set (hasOffset); a pointer would
	// cost an allocation on every table write goka acknowledges.
	offset    int64
	hasOffset bool
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
		slabs:     &slabList{},
		compactAt: compactAt,
	}
	m.index = regionOf[uint64](&m.slabs.index, 512)
	m.entries = regionOf[memEntry](&m.slabs.entries, 256)
	// goka may close a storage while a callback still holds it (the packer's
	// tables), so the slabs go only once nothing can reach them.
	runtime.AddCleanup(m, (*slabList).free, m.slabs)
	return m
}

// slabList is a memory's slabs and the regions of its index and entries,
// apart from it, so that a cleanup can unmap them once the memory is
// unreachable.
type slabList struct {
	s              [][]byte
	mapped         []bool // s[i] is outside the Go heap
	index, entries region
}

// region is the memory of an array of a type without pointers.
type region struct {
	b      []byte
	mapped bool
}

func (r *region) free() {
	if r.mapped {
		freeSlab(r.b)
	}
	r.b = nil
}

// regionOf replaces r with a new region of n zero values of T and returns
// them; the caller copies what it keeps from the old one before that is
// unmapped, so it frees the old region itself (grow).
func regionOf[T any](r *region, n int) []T {
	b, mapped := newSlab(n * int(unsafe.Sizeof(*new(T))))
	b = b[:cap(b)]
	*r = region{b: b, mapped: mapped}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// grow moves old into a new region r of n values.
func grow[T any](r *region, old []T, n int) []T {
	was := *r
	s := regionOf[T](r, n)
	copy(s, old)
	was.free()
	return s
}

func (l *slabList) add(n int) {
	b, mapped := newSlab(n)
	l.s = append(l.s, b)
	l.mapped = append(l.mapped, mapped)
}

func (l *slabList) freeSlabs() {
	for i, b := range l.s {
		if l.mapped[i] {
			freeSlab(b)
		}
	}
	l.s, l.mapped = nil, nil
}

func (l *slabList) free() {
	l.freeSlabs()
	l.index.free()
	l.entries.free()
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

// A slot of the index is 0 when empty, else the entry's number plus one in
// the high half and the low 32 bits of the key's hash in the low half. The
// low bits are where a key's probe starts (its home), so a slot says its own
// home, which deleting needs, and they tell most keys apart before their
// bytes are compared.
func slot(entry int32, tag uint32) uint64 { return uint64(entry+1)<<32 | uint64(tag) }

func slotEntry(s uint64) int32 { return int32(s>>32) - 1 }

// lookup returns key's entry, its slot in the index and the low bits of its
// hash; when key is absent, ok is false and pos is the free slot where it
// would go.
func (m *memory) lookup(key string) (i int32, pos uint64, tag uint32, ok bool) {
	tag = uint32(m.hash(key))
	mask := uint64(len(m.index) - 1)
	for pos = uint64(tag) & mask; ; pos = (pos + 1) & mask {
		s := m.index[pos]
		if s == 0 {
			return 0, pos, tag, false
		}
		if uint32(s) == tag {
			if i := slotEntry(s); string(m.keyOf(m.entries[i])) == key {
				return i, pos, tag, true
			}
		}
	}
}

// growIndex doubles the index and puts every slot at its home again.
func (m *memory) growIndex() {
	old := m.index
	was := m.slabs.index
	m.index = regionOf[uint64](&m.slabs.index, 2*len(old))
	mask := uint64(len(m.index) - 1)
	for _, s := range old {
		if s == 0 {
			continue
		}
		pos := uint64(uint32(s)) & mask
		for m.index[pos] != 0 {
			pos = (pos + 1) & mask
		}
		m.index[pos] = s
	}
	was.free()
}

// unindex empties slot pos and moves the slots after it that probed past it
// back, so that no probe finds an empty slot before its key (deletion by
// backward shift, which linear probing allows without tombstones).
func (m *memory) unindex(pos uint64) {
	mask := uint64(len(m.index) - 1)
	m.index[pos] = 0
	for j := (pos + 1) & mask; m.index[j] != 0; j = (j + 1) & mask {
		home := uint64(uint32(m.index[j])) & mask
		if (j-home)&mask >= (j-pos)&mask {
			m.index[pos], m.index[j] = m.index[j], 0
			pos = j
		}
	}
	m.keys--
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
	_, _, _, ok := m.lookup(key)
	return ok, nil
}

func (m *memory) Get(key string) ([]byte, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	i, _, _, ok := m.lookup(key)
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
	i, pos, tag, ok := m.lookup(key)
	if ok {
		e := &m.entries[i]
		if len(value) <= int(e.vcap) && int(e.vcap) <= 2*len(value)+shrinkSlack {
			start := e.off + e.klen
			copy(m.slabs.s[e.slab][start:], value)
			e.vlen = uint32(len(value))
			return nil
		}
		// Outgrown: move, with room for growth, since values that grow
		// (a clock's open windows, a slot's second id) tend to grow again.
		// Shrunk to less than half its room: move too, or one large value
		// (a walk's piece rides on one decision of a line) would keep its
		// room for as long as the key lives, and thousands of quiet keys
		// would hold many times their bytes.
		m.release(*e)
		*e = m.place(key, value, len(value)+len(value)/2)
		m.maybeCompact()
		return nil
	}
	e := m.place(key, value, len(value))
	if n := len(m.free); n > 0 {
		i = m.free[n-1]
		m.free = m.free[:n-1]
	} else {
		if m.nEntry == len(m.entries) {
			m.entries = grow(&m.slabs.entries, m.entries, 2*len(m.entries))
		}
		i = int32(m.nEntry)
		m.nEntry++
	}
	m.entries[i] = e
	m.index[pos] = slot(i, tag)
	if m.keys++; 4*m.keys > 3*len(m.index) {
		m.growIndex()
	}
	return nil
}

func (m *memory) Delete(key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	i, pos, _, ok := m.lookup(key)
	if !ok {
		return nil
	}
	m.unindex(pos)
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
	old := slabList{s: m.slabs.s, mapped: m.slabs.mapped}
	m.slabs.s, m.slabs.mapped, m.live, m.garbage = nil, nil, 0, 0
	for i, e := range m.entries[:m.nEntry] {
		if e.slab < 0 {
			continue
		}
		src := old.s[e.slab][e.off:]
		slab, off := m.alloc(e.size())
		copy(m.slabs.s[slab][off:], src[:e.klen+e.vlen])
		m.entries[i].slab, m.entries[i].off = slab, off
	}
	// Every read copies out under the lock, so nothing points into them.
	old.freeSlabs()
}

func (m *memory) SetOffset(offset int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.offset, m.hasOffset = offset, true
	return nil
}

func (m *memory) GetOffset(def int64) (int64, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if !m.hasOffset {
		return def, nil
	}
	return m.offset, nil
}

// snapshot copies the entries whose keys keep returns true.
func (m *memory) snapshot(keep func(key []byte) bool) map[string][]byte {
	m.mu.RLock()
	defer m.mu.RUnlock()
	snap := map[string][]byte{}
	for _, e := range m.entries[:m.nEntry] {
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

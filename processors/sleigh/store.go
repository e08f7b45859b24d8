package sleigh

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/lovoo/goka/storage"
	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/filter"
	ldbiter "github.com/syndtr/goleveldb/leveldb/iterator"
	"github.com/syndtr/goleveldb/leveldb/opt"
	ldbstorage "github.com/syndtr/goleveldb/leveldb/storage"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// The sleigh keeps its tables in LevelDB, on disk under --storage-dir and
// otherwise on LevelDB's in-memory file system. LevelDB keeps keys in order,
// which paging needs, and its sorted tables share key prefixes and are
// snappy-compressed: a pair costs about a quarter of its bytes in the
// in-memory hash table (gokastore.Memory) that the other processors use, and
// far less than an ordered index beside it (docs/ARCHITECTURE.md has the
// figures).

// levelOptions: a bloom filter, because nearly every key the processor and
// the view look up is a new one, which the filter answers without reading a
// table; a small block cache, because pages are read without filling it
// (each pair is read once per pass of a client) and the tables are in memory
// or in the OS's page cache anyway; a write buffer of 1 MiB instead of 4,
// because the sleigh has one LevelDB per partition and table (8 by default),
// each with two buffers, and writes each pair once.
func levelOptions() *opt.Options {
	return &opt.Options{Filter: filter.NewBloomFilter(10), BlockCacheCapacity: 1 << 20, WriteBuffer: 1 << 20}
}

// openLevelDB opens the LevelDB of one partition of a table: under dir, or
// in memory when dir is empty.
func openLevelDB(dir, topic string, partition int32) (*leveldb.DB, error) {
	if dir == "" {
		db, err := leveldb.Open(ldbstorage.NewMemStorage(), levelOptions())
		if err != nil {
			return nil, fmt.Errorf("sleigh: open in-memory table %s/%d: %w", topic, partition, err)
		}
		return db, nil
	}
	path := filepath.Join(dir, fmt.Sprintf("%s.%d", topic, partition))
	db, err := leveldb.OpenFile(path, levelOptions())
	if err != nil {
		return nil, fmt.Errorf("sleigh: open table %s: %w", path, err)
	}
	return db, nil
}

// memoryLevelDB is the processor's storage without a storage dir: LevelDB in
// memory, empty at every start, as the processor's table must be (see
// gokastore.FreshLevelDB).
func memoryLevelDB() storage.Builder {
	return func(topic string, partition int32) (storage.Storage, error) {
		db, err := openLevelDB("", topic, partition)
		if err != nil {
			return nil, err
		}
		return storage.New(db)
	}
}

// windowID is one line's window.
type windowID struct {
	line
	window int64
}

// manifestTables are the partitions of the view that one run of the sleigh
// opened: goka's storage for each, under ordered keys, and what the manifest
// reads of them.
type manifestTables struct {
	dir string // "": in memory
	// complete says whether the view has loaded the whole table (set
	// before the tables are read).
	complete func() bool
	mu       sync.RWMutex
	parts    map[int32]*orderedTable
}

func newManifestTables(dir string) *manifestTables {
	return &manifestTables{dir: dir, parts: map[int32]*orderedTable{}}
}

// builder is the view's storage builder.
func (t *manifestTables) builder() storage.Builder {
	return func(topic string, partition int32) (storage.Storage, error) {
		db, err := openLevelDB(t.dir, topic, partition)
		if err != nil {
			return nil, err
		}
		st, err := storage.New(db)
		if err != nil {
			return nil, fmt.Errorf("sleigh: table %s/%d: %w", topic, partition, err)
		}
		o := &orderedTable{Storage: st, db: db, counts: map[windowID]int64{}, done: func() { t.remove(partition) }}
		if err := o.countKept(); err != nil {
			_ = db.Close()
			return nil, fmt.Errorf("sleigh: count the pairs kept in %s/%d: %w", topic, partition, err)
		}
		t.mu.Lock()
		t.parts[partition] = o
		t.mu.Unlock()
		return o, nil
	}
}

func (t *manifestTables) remove(partition int32) {
	t.mu.Lock()
	delete(t.parts, partition)
	t.mu.Unlock()
}

// tables are the partitions open now.
func (t *manifestTables) tables() []*orderedTable {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]*orderedTable, 0, len(t.parts))
	for _, o := range t.parts {
		out = append(out, o)
	}
	return out
}

// counts are the pairs per window of every open partition.
func (t *manifestTables) counts() map[windowID]int64 {
	into := map[windowID]int64{}
	for _, o := range t.tables() {
		o.windows(into)
	}
	return into
}

// orderedTable is goka's LevelDB storage of one partition of the view, under
// ordered keys (order.go), with the number of pairs of each window, kept as
// pairs come and go so that the summary does not read the pairs.
type orderedTable struct {
	storage.Storage
	db     *leveldb.DB
	done   func()
	mu     sync.Mutex
	counts map[windowID]int64
}

func (o *orderedTable) Has(key string) (bool, error) { return o.Storage.Has(string(orderedKey(key))) }

func (o *orderedTable) Get(key string) ([]byte, error) { return o.Storage.Get(string(orderedKey(key))) }

// Set counts a key it did not hold. goka writes a partition from one
// goroutine, so nothing comes between the look-up and the write.
func (o *orderedTable) Set(key string, value []byte) error {
	k := orderedKey(key)
	had, err := o.Storage.Has(string(k))
	if err != nil {
		return err
	}
	if err := o.Storage.Set(string(k), value); err != nil {
		return err
	}
	if !had {
		o.count(k, 1)
	}
	return nil
}

func (o *orderedTable) Delete(key string) error {
	k := orderedKey(key)
	had, err := o.Storage.Has(string(k))
	if err != nil || !had {
		return err
	}
	if err := o.Storage.Delete(string(k)); err != nil {
		return err
	}
	o.count(k, -1)
	return nil
}

func (o *orderedTable) count(ordered []byte, n int64) {
	k, ok := decodeOrdered(ordered)
	if !ok {
		return // not a packer's key: never listed, so not counted
	}
	id := windowID{k.line, k.window}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.counts[id] += n; o.counts[id] == 0 {
		delete(o.counts, id)
	}
}

// countKept counts the pairs that the files under a storage dir kept from
// an earlier run.
func (o *orderedTable) countKept() error {
	it := o.db.NewIterator(&util.Range{Start: []byte{0}, Limit: []byte{otherKeys}}, &opt.ReadOptions{DontFillCache: true})
	defer it.Release()
	for it.Next() {
		o.count(it.Key(), 1)
	}
	return it.Error()
}

// windows adds the partition's counts to into.
func (o *orderedTable) windows(into map[windowID]int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for id, n := range o.counts {
		into[id] += n
	}
}

// Close takes the partition out of the manifest before goka closes it.
func (o *orderedTable) Close() error {
	o.done()
	return o.Storage.Close()
}

// Iterator walks the partition in manifest order, under goka's keys.
func (o *orderedTable) Iterator() (storage.Iterator, error) {
	it, err := o.Storage.Iterator()
	if err != nil {
		return nil, err
	}
	return textKeys{it}, nil
}

var errTextRange = errors.New("sleigh: the manifest's view keeps its keys in manifest order, not by their text: ranges of text keys are not supported")

// IteratorWithRange: a range of the packer's keys as text is no range of
// ordered keys.
func (o *orderedTable) IteratorWithRange(start, limit []byte) (storage.Iterator, error) {
	return nil, errTextRange
}

// textKeys gives goka's keys back for ordered ones.
type textKeys struct{ storage.Iterator }

func (t textKeys) Key() []byte {
	k := t.Iterator.Key()
	if k == nil {
		return nil
	}
	key, ok := fromOrdered(k)
	if !ok {
		return k
	}
	return []byte(key)
}

func (t textKeys) Seek(key []byte) bool { return t.Iterator.Seek(orderedKey(string(key))) }

// keyRange is a range of ordered keys, start included, limit not.
type keyRange struct{ start, limit []byte }

// merged walks the pairs of ranges in key order across the partitions,
// starting after from (nil: at the start): a k-way merge of one LevelDB
// iterator per partition and range, each a snapshot of its partition taken
// when the walk enters the range.
type merged struct {
	parts  []*orderedTable
	ranges []keyRange
	from   []byte
	its    []ldbiter.Iterator // of the current range; nil once exhausted
	cur    int                // index in its of the least key, -1 before the first
	err    error
}

func newMerged(parts []*orderedTable, ranges []keyRange, from []byte) *merged {
	return &merged{parts: parts, ranges: ranges, from: from, cur: -1}
}

// next moves to the next pair; false at the end or on an error (Err).
func (m *merged) next() bool {
	for {
		if m.its == nil {
			if len(m.ranges) == 0 || m.err != nil {
				return false
			}
			m.open(m.ranges[0])
			m.ranges = m.ranges[1:]
		} else if m.cur >= 0 {
			m.advance(m.cur)
		}
		m.cur = -1
		for i, it := range m.its {
			if it != nil && (m.cur < 0 || bytes.Compare(it.Key(), m.its[m.cur].Key()) < 0) {
				m.cur = i
			}
		}
		if m.err != nil {
			return false
		}
		if m.cur >= 0 {
			return true
		}
		m.its = nil // this range is done
	}
}

func (m *merged) open(r keyRange) {
	start := r.start
	if m.from != nil && bytes.Compare(m.from, start) >= 0 {
		start = after(m.from)
	}
	m.its = make([]ldbiter.Iterator, len(m.parts))
	if bytes.Compare(start, r.limit) >= 0 {
		return // the whole range is before from: no iterator
	}
	for i, p := range m.parts {
		m.its[i] = p.db.NewIterator(&util.Range{Start: start, Limit: r.limit}, &opt.ReadOptions{DontFillCache: true})
		m.advance(i)
	}
}

// advance moves partition i's iterator on, releasing it at its end.
func (m *merged) advance(i int) {
	it := m.its[i]
	if it.Next() {
		return
	}
	if err := it.Error(); err != nil && m.err == nil {
		m.err = fmt.Errorf("sleigh: read the manifest: %w", err)
	}
	it.Release()
	m.its[i] = nil
}

// key and value of the current pair, valid until next.
func (m *merged) key() []byte   { return m.its[m.cur].Key() }
func (m *merged) value() []byte { return m.its[m.cur].Value() }

// failed is what stopped the walk early, if anything did.
func (m *merged) failed() error { return m.err }

// release lets the iterators go.
func (m *merged) release() {
	for _, it := range m.its {
		if it != nil {
			it.Release()
		}
	}
	m.its = nil
}

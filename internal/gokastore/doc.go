// Package gokastore holds goka table storage that northpole's processors share.
//
// Memory (memory.go) is the default, the packer's: keys and values copied into
// 1 MiB byte slabs behind a pointer-free open-addressing index, values
// rewritten in place when they fit, slabs compacted when garbage outweighs the
// live bytes, sorted only when iterated. On Unix the slabs, the index and the
// entries are mapped outside the Go heap (slab_unix.go; slab_other.go keeps
// them on the heap elsewhere), so the garbage collector neither marks them nor
// lets the heap grow to twice the tables. docs/ARCHITECTURE.md, "Non-obvious
// things", says why; docs/PERFORMANCE.md what each choice cost.
//
// FreshLevelDB (leveldb.go) keeps a table on disk (--storage-dir), emptied
// whenever goka opens a partition: goka writes a value to its local storage
// before the changelog write is acknowledged, so files kept across a crash
// could be ahead of the changelog.
package gokastore

package gokastore

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/lovoo/goka/storage"
	"github.com/syndtr/goleveldb/leveldb/opt"
)

// FreshLevelDB keeps a group's tables in LevelDB under dir, to hold large
// tables out of the heap, but starts every partition from nothing and rebuilds
// it from its changelog, as the in-memory storage does. Use it for a
// processor's own table; a view's storage is written from the changelog only
// and does not need it.
//
// Keeping the files across restarts is not safe: goka writes a table value to
// its local storage before Kafka has acknowledged the changelog record
// (goka v1.1.17, cbContext.setValueForKey). After a crash the files can hold
// values that the changelog never received; the replayed input is then
// skipped as already applied, and its event never reaches the next stage.
// The packer's TestCrashSIGKILL/disk lost hundreds of rows that way before
// this builder.
//
// opts are LevelDB's options for each partition (nil: LevelDB's defaults,
// which hold up to two 4 MiB write buffers and an 8 MiB block cache per
// partition in memory).
func FreshLevelDB(dir string, opts *opt.Options) storage.Builder {
	open := storage.BuilderWithOptions(dir, opts)
	return func(topic string, partition int32) (storage.Storage, error) {
		// The same path storage.BuilderWithOptions opens.
		path := filepath.Join(dir, fmt.Sprintf("%s.%d", topic, partition))
		if err := os.RemoveAll(path); err != nil {
			return nil, fmt.Errorf("clear table storage %s: %w", path, err)
		}
		return open(topic, partition)
	}
}

package packer

import (
	"sync"
	"testing"

	"github.com/lovoo/goka/storage"
)

// TestTableStoresHeld: a partition is found from its storage's build to its
// Close; a storage built again for a partition replaces the old one, whose
// Close then leaves the new one held; other topics' storages are not held.
func TestTableStoresHeld(t *testing.T) {
	s := newTableStores("clock-table", true, false)
	build := s.builder(storage.MemoryBuilder())
	open := func(topic string, partition int32) storage.Storage {
		t.Helper()
		st, err := build(topic, partition)
		if err != nil {
			t.Fatalf("build %s/%d: %v", topic, partition, err)
		}
		return st
	}
	held := func(partition int32) *tablePart {
		t.Helper()
		part, err := s.part(partition)
		if err != nil {
			return nil
		}
		return part
	}

	first := open("clock-table", 3)
	open("other-table", 4)
	if held(3) == nil {
		t.Fatal("partition 3 not held after its storage was built")
	}
	if held(4) != nil {
		t.Fatal("a storage of another topic is held")
	}
	was := held(3)
	second := open("clock-table", 3)
	now := held(3)
	if now == nil || now == was {
		t.Fatal("a storage built again for partition 3 did not replace the old one")
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if held(3) != now {
		t.Fatal("closing the replaced storage dropped the one that replaced it")
	}
	if s.horizonOf(3) == nil || len(s.horizons()) != 1 {
		t.Fatalf("horizons: %v, want partition 3's", s.horizons())
	}
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}
	if held(3) != nil || len(s.horizons()) != 0 {
		t.Fatal("partition 3 still held after its storage was closed")
	}
}

// TestTableStoresConcurrent: records look their partition up on every
// partition's goroutine while goka builds and closes storages (a
// rebalance); run with -race, a lookup that read the map while a change
// wrote it would fail.
func TestTableStoresConcurrent(t *testing.T) {
	s := newTableStores("clock-table", false, false)
	build := s.builder(storage.MemoryBuilder())
	if _, err := build("clock-table", 0); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.part(0); err != nil {
					t.Errorf("partition 0, held throughout: %v", err)
					return
				}
				_, _ = s.part(1)
			}
		})
	}
	for range 200 {
		st, err := build("clock-table", 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if _, err := s.part(1); err == nil {
		t.Fatal("partition 1 held after its last storage was closed")
	}
}

//go:build unix

package gokastore

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"
)

// TestMemorySlabsOffHeap: 64 to 140 MiB of values grow the Go heap by far less than
// 64 MiB (the slabs are mapped outside it, so the collector's goal does not
// double them), and they stay readable through compactions.
func TestMemorySlabsOffHeap(t *testing.T) {
	before := heapAlloc()
	m := newMemory()
	m.compactAt = 1 << 20
	value := func(size, i int) []byte { return fmt.Appendf(bytes.Repeat([]byte{'v'}, size), "%d", i) }
	const n = 64 << 10     // keys of 1,000-byte values: 64 MiB
	for round := range 3 { // rewrites that outgrow their room leave garbage: compactions
		for i := range n {
			if err := m.Set(fmt.Sprintf("k%d", i), value(1000+round*600, i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if grown := int64(heapAlloc()) - int64(before); grown > 16<<20 {
		t.Errorf("the Go heap grew by %d MiB for 64 MiB of values", grown>>20)
	}
	for i := range n {
		got, err := m.Get(fmt.Sprintf("k%d", i))
		if want := value(2200, i); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("k%d: %d bytes, %v", i, len(got), err)
		}
	}
	runtime.KeepAlive(m)
}

// TestMemoryIndexOffHeap: a million small entries (the packer's dedupe
// entries are about 35 bytes of key and value) leave the Go heap as it was:
// the index and the entries are mapped outside it with the slabs. In a Go
// map and slice they took about 50 bytes a key on the heap, which the
// collector's goal doubled.
func TestMemoryIndexOffHeap(t *testing.T) {
	before := heapAlloc()
	m := newMemory()
	const n = 1_000_000
	for i := range n {
		if err := m.Set(fmt.Sprintf("M|toys|i|toy-%d", i), []byte{1, 2, 3, 4, 5, 6}); err != nil {
			t.Fatal(err)
		}
	}
	if grown := int64(heapAlloc()) - int64(before); grown > 4<<20 {
		t.Errorf("the Go heap grew by %d MiB for %d entries", grown>>20, n)
	}
	for _, i := range []int{0, 1, n / 2, n - 1} {
		if v, _ := m.Get(fmt.Sprintf("M|toys|i|toy-%d", i)); len(v) != 6 {
			t.Fatalf("entry %d: %v", i, v)
		}
	}
	runtime.KeepAlive(m)
}

// heapAlloc is the Go heap's live bytes after a collection.
func heapAlloc() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

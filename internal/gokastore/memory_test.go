package gokastore

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestMemory(t *testing.T) {
	s, err := Memory()("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"b", "a|2", "a|1", "c"} {
		if err := s.Set(k, []byte("v"+k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Set("x", nil); err == nil {
		t.Error("nil value accepted")
	}
	if err := s.Delete("c"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := s.Has("c"); ok {
		t.Error("deleted key still there")
	}
	if v, _ := s.Get("c"); v != nil {
		t.Errorf("Get(deleted) = %q", v)
	}
	if v, _ := s.Get("b"); string(v) != "vb" {
		t.Errorf("Get(b) = %q", v)
	}
	if off, _ := s.GetOffset(-2); off != -2 {
		t.Errorf("offset before SetOffset = %d", off)
	}
	_ = s.SetOffset(7)
	if off, _ := s.GetOffset(-2); off != 7 {
		t.Errorf("offset = %d", off)
	}
	it, _ := s.Iterator()
	_ = s.Set("0", []byte("later")) // not in the snapshot
	_ = s.Set("b", []byte("changed"))
	var got []string
	for it.Next() {
		v, _ := it.Value()
		got = append(got, string(it.Key())+"="+string(v))
	}
	if want := "a|1=va|1 a|2=va|2 b=vb"; strings.Join(got, " ") != want {
		t.Errorf("iterator = %v, want %s", got, want)
	}
	it, _ = s.IteratorWithRange([]byte("a|"), nil)
	got = nil
	for it.Next() {
		got = append(got, string(it.Key()))
	}
	if want := "a|1 a|2"; strings.Join(got, " ") != want {
		t.Errorf("range iterator = %v, want %s", got, want)
	}
}

// TestMemoryGetCopies: a value read stays what it was when the key is written
// again in place, and changing it does not change the table.
func TestMemoryGetCopies(t *testing.T) {
	m := newMemory()
	_ = m.Set("k", []byte("first"))
	v, _ := m.Get("k")
	_ = m.Set("k", []byte("other"))
	if string(v) != "first" {
		t.Errorf("value read before a rewrite became %q", v)
	}
	v[0] = 'X'
	if w, _ := m.Get("k"); string(w) != "other" {
		t.Errorf("Get after changing a copy = %q", w)
	}
}

// TestMemoryAgainstMap runs random writes, rewrites (shorter, equal, longer),
// deletes and reads against a plain map, with hash functions that make every
// key clash with others and a compaction threshold small enough to compact
// often, and checks every key after every step of a sample.
func TestMemoryAgainstMap(t *testing.T) {
	hashes := map[string]func(string) uint64{
		"maphash":   nil,
		"8 buckets": func(k string) uint64 { return uint64(len(k) % 8) },
		"one":       func(string) uint64 { return 42 },
	}
	for name, h := range hashes {
		t.Run(name, func(t *testing.T) {
			seed := uint64(time.Now().UnixNano())
			t.Logf("seed %d", seed)
			rng := rand.New(rand.NewPCG(seed, 1))
			m := newMemory()
			if h != nil {
				m.hash = h
			}
			m.compactAt = 1 << 10
			want := map[string][]byte{}
			keys := make([]string, 300)
			for i := range keys {
				keys[i] = "k" + strconv.Itoa(i) + strings.Repeat("x", rng.IntN(6))
			}
			for step := range 20000 {
				k := keys[rng.IntN(len(keys))]
				switch op := rng.IntN(10); {
				case op < 6:
					v := bytes.Repeat([]byte{byte(step)}, rng.IntN(40))
					if step%500 == 0 {
						v = bytes.Repeat([]byte{byte(step)}, slabSize+rng.IntN(100)) // larger than a slab
					}
					if err := m.Set(k, v); err != nil {
						t.Fatal(err)
					}
					want[k] = v
				case op < 8:
					if err := m.Delete(k); err != nil {
						t.Fatal(err)
					}
					delete(want, k)
				default:
					got, _ := m.Get(k)
					if w, ok := want[k]; !ok && got != nil || ok && !bytes.Equal(got, w) {
						t.Fatalf("step %d: Get(%s) = %d bytes, want %d", step, k, len(got), len(w))
					}
				}
				if step%1000 == 0 {
					checkAll(t, m, keys, want)
				}
			}
			checkAll(t, m, keys, want)
			if m.garbage > max(m.live, m.compactAt)+slabSize {
				t.Errorf("garbage %d bytes against %d live: compaction did not run", m.garbage, m.live)
			}
		})
	}
}

func checkAll(t *testing.T, m *memory, keys []string, want map[string][]byte) {
	t.Helper()
	for _, k := range keys {
		got, _ := m.Get(k)
		has, _ := m.Has(k)
		w, ok := want[k]
		if has != ok || !bytes.Equal(got, w) {
			t.Fatalf("key %s: has %v, %d bytes; want %v, %d bytes", k, has, len(got), ok, len(w))
		}
	}
	it, _ := m.Iterator()
	n := 0
	for it.Next() {
		n++
	}
	if n != len(want) {
		t.Fatalf("iterator saw %d keys, want %d", n, len(want))
	}
}

// BenchmarkMemoryGC measures what a full garbage collection costs while a
// table of a million entries (keys like the dedupe table's, values like its
// ~60-byte states) is live: in a map of strings and slices, the layout this
// storage replaced, and in Memory. Set reports the cost of one write.
func BenchmarkMemoryGC(b *testing.B) {
	const n = 1_000_000
	key := func(i int) string { return "M|toys|i|toy-" + strconv.Itoa(i) }
	value := bytes.Repeat([]byte{7}, 60)
	b.Run("map", func(b *testing.B) {
		m := make(map[string][]byte, n)
		for i := range n {
			m[key(i)] = bytes.Clone(value)
		}
		gcTime(b)
		runtime.KeepAlive(m)
	})
	b.Run("memory", func(b *testing.B) {
		m := newMemory()
		for i := range n {
			_ = m.Set(key(i), value)
		}
		gcTime(b)
		runtime.KeepAlive(m)
	})
}

func gcTime(b *testing.B) {
	runtime.GC()
	b.ResetTimer()
	for b.Loop() {
		runtime.GC()
	}
}

// BenchmarkMemorySet: rewriting existing keys, in a plain map (which
// allocates a value per write) and in Memory (which copies into the slabs).
func BenchmarkMemorySet(b *testing.B) {
	value := bytes.Repeat([]byte{7}, 60)
	keys := make([]string, 1<<16)
	for i := range keys {
		keys[i] = fmt.Sprintf("M|toys|i|toy-%d", i)
	}
	b.Run("map", func(b *testing.B) {
		m := map[string][]byte{}
		i := 0
		for b.Loop() {
			m[keys[i&(len(keys)-1)]] = bytes.Clone(value)
			i++
		}
	})
	b.Run("memory", func(b *testing.B) {
		m := newMemory()
		i := 0
		for b.Loop() {
			_ = m.Set(keys[i&(len(keys)-1)], value)
			i++
		}
	})
}

// TestMemoryShrinks: a key whose value shrinks gives its room back, so a
// table of quiet keys that each once held a large value costs what its values
// are now, not what they once were.
func TestMemoryShrinks(t *testing.T) {
	m := newMemory()
	const keys = 1000
	for i := range keys {
		k := "line-" + strconv.Itoa(i)
		if err := m.Set(k, bytes.Repeat([]byte{1}, 8<<10)); err != nil {
			t.Fatal(err)
		}
		if err := m.Set(k, bytes.Repeat([]byte{2}, 200)); err != nil {
			t.Fatal(err)
		}
	}
	perKey := len("line-999") + 2*200 + shrinkSlack
	if m.live > keys*perKey {
		t.Errorf("%d keys of 200-byte values hold %d live bytes, want at most %d", keys, m.live, keys*perKey)
	}
	for i := range keys {
		got, _ := m.Get("line-" + strconv.Itoa(i))
		if !bytes.Equal(got, bytes.Repeat([]byte{2}, 200)) {
			t.Fatalf("key %d: %d bytes, want the 200-byte value", i, len(got))
		}
	}
}

package packer

import (
	"crypto/sha256"
	"encoding/hex"
	"hash/fnv"
	"slices"
	"strings"
	"testing"

	"github.com/IBM/sarama"

	"github.com/northpole-workshop/northpole/internal/record"
)

// partitionOf is sarama's hash partitioner's formula, which goka's producer
// uses with the configured hasher: int32(h.Sum32()) % n, negated if negative.
func partitionOf(h interface{ Sum32() uint32 }, n int32) int32 {
	p := int32(h.Sum32()) % n
	if p < 0 {
		p = -p
	}
	return p
}

// stageKeys are keys of every shape the groups use for line s.
func stageKeys(s string) []string {
	long := strings.Repeat("x", keyIDMax+1)
	return []string{
		s,
		s + "|toys|0|i|x|y", // an id containing '|'
		dedupeKey(&validRecord{Stream: record.Toys, Line: s, ID: "t-1"}, 1_798_070_400_000_000),
		dedupeKey(&validRecord{Stream: record.Boxes, Line: s, ID: "b|2|"}, -10_000_000),
		dedupeKey(&validRecord{Stream: record.Boxes, Line: s, ID: long}, 0),
		dedupeKey(&validRecord{Stream: record.Toys, Line: s, ID: carryID(long, 40)}, 0),
		s + "|",
		s + "||",
	}
}

func TestHasherSamePartitionAsLine(t *testing.T) {
	lines := slices.Concat(record.Sizes, []string{"M/hall-7", "XL/" + strings.Repeat("z", record.MaxHallLen), "S/0"})
	for _, s := range lines {
		// The input topics are partitioned by the elves with sarama's default
		// hasher, FNV-1a of the whole key (the line).
		ref := fnv.New32a()
		ref.Write([]byte(s))
		for n := int32(1); n <= 12; n++ {
			want := partitionOf(ref, n)
			// Where observe expects the records of line s.
			if got := linePartition(s, n); got != want {
				t.Errorf("linePartition(%s, %d) = %d, want %d", s, n, got, want)
			}
			for _, k := range stageKeys(s) {
				h := lineHasher()
				h.Write([]byte(k))
				if got := partitionOf(h, n); got != want {
					t.Errorf("line %s n=%d: key %q -> partition %d, line -> %d", s, n, k, got, want)
				}
				// The same through sarama's own partitioner built on lineHasher,
				// as goka's producer builds it, against sarama's default one.
				msg := &sarama.ProducerMessage{Key: sarama.StringEncoder(k)}
				got, err := sarama.NewCustomHashPartitioner(lineHasher)("t").Partition(msg, n)
				if err != nil {
					t.Fatal(err)
				}
				ref, err := sarama.NewHashPartitioner("t").Partition(&sarama.ProducerMessage{Key: sarama.StringEncoder(s)}, n)
				if err != nil {
					t.Fatal(err)
				}
				if got != ref || got != want {
					t.Errorf("line %s n=%d: sarama puts %q in %d and %q in %d (formula %d)", s, n, k, got, s, ref, want)
				}
			}
		}
	}
}

func TestHasherSumMatchesFNVOfPrefix(t *testing.T) {
	for _, k := range append(stageKeys("XL"), "", "no-bar", "|leading") {
		prefix := k
		for i := range k {
			if k[i] == '|' {
				prefix = k[:i]
				break
			}
		}
		ref := fnv.New32a()
		ref.Write([]byte(prefix))
		h := lineHasher()
		h.Write([]byte(k))
		if h.Sum32() != ref.Sum32() {
			t.Errorf("key %q: sum %08x, want FNV-1a of %q = %08x", k, h.Sum32(), prefix, ref.Sum32())
		}
	}
}

// TestHasherReset: one hasher reused with Reset, as sarama's partitioner
// reuses it for every message, hashes each key afresh.
func TestHasherReset(t *testing.T) {
	h := lineHasher()
	for _, seq := range [][]string{
		{"M|toys|i|a", "S|boxes|h"},
		{"M", "S"},
		{"L|x", "XL"},
		{"XL", "L|x"},
		{"S|boxes|h", "M|toys|i|a", "L", "XL|boxes|i|q"},
	} {
		for _, k := range seq {
			h.Reset()
			h.Write([]byte(k))
			fresh := lineHasher()
			fresh.Write([]byte(k))
			if h.Sum32() != fresh.Sum32() {
				t.Errorf("sequence %q: after Reset, %q hashes to %08x, a fresh hasher to %08x", seq, k, h.Sum32(), fresh.Sum32())
			}
		}
	}
	// Through sarama, which calls Reset before every key.
	part := sarama.NewCustomHashPartitioner(lineHasher)("t")
	for n := int32(1); n <= 12; n++ {
		for _, s := range []string{"M", "S", "XL", "L", "M"} {
			for _, k := range []string{s + "|toys|i|a", s} {
				got, _ := part.Partition(&sarama.ProducerMessage{Key: sarama.StringEncoder(k)}, n)
				want, _ := sarama.NewHashPartitioner("t").Partition(&sarama.ProducerMessage{Key: sarama.StringEncoder(s)}, n)
				if got != want {
					t.Errorf("n=%d: reused partitioner put %q in %d, want %d", n, k, got, want)
				}
			}
		}
	}
}

// TestHasherWritesInPieces: a key written in several Write calls hashes like
// the same key written at once.
func TestHasherWritesInPieces(t *testing.T) {
	for _, k := range []string{"M|toys|i|abc", "XL|boxes|h", "S"} {
		whole := lineHasher()
		whole.Write([]byte(k))
		for cut := 0; cut <= len(k); cut++ {
			h := lineHasher()
			h.Write([]byte(k[:cut]))
			h.Write([]byte(k[cut:]))
			if h.Sum32() != whole.Sum32() {
				t.Errorf("key %q cut at %d: %08x, whole %08x", k, cut, h.Sum32(), whole.Sum32())
			}
		}
	}
}

func TestKeyShapes(t *testing.T) {
	long := strings.Repeat("x", keyIDMax+1)
	sum := sha256.Sum256([]byte(long))
	digest := hex.EncodeToString(sum[:])
	for _, c := range []struct{ got, want string }{
		{dedupeKey(&validRecord{Stream: record.Toys, Line: "M", ID: "a"}, 0), "M|toys|0|i|a"},
		{dedupeKey(&validRecord{Stream: record.Boxes, Line: "XL", ID: "a"}, -10), "XL|boxes|-10|i|a"},
		{dedupeKey(&validRecord{Stream: record.Toys, Line: "M", ID: long}, 20), "M|toys|20|d|" + digest},
		// A carried id is keyed by the whole id's digest, like the whole id.
		{dedupeKey(&validRecord{Stream: record.Toys, Line: "M", ID: carryID(long, 40)}, 20), "M|toys|20|d|" + digest},
		{itemKey("M", 1_798_070_400_000_000, "t1"), "M|1798070400000000|t1"},
		{itemKey("M", -10, long), "M|-10#" + digest},
		{lateKey("boxes", 2, 17), "boxes/2/17"},
		{deadKey("toys", 2, 17), "toys/2/17"},
	} {
		if c.got != c.want {
			t.Errorf("key %q, want %q", c.got, c.want)
		}
	}
}

// TestKeyWindowAndIDNeverCollide: ids are unique per (stream, size,
// window) only, so the dedupe and output keys hold the window, and no two
// different (size, stream, window, id) get one key, whatever separators an
// id holds, and whatever short id looks like another id's digest.
func TestKeyWindowAndIDNeverCollide(t *testing.T) {
	long := strings.Repeat("x", keyIDMax+1)
	sum := sha256.Sum256([]byte(long))
	ids := []string{"a", "1|i|a", "i|a", "0|i|a", "a#b", "#a", "1#a", "-1", "|", "", long, hex.EncodeToString(sum[:]), carryID(long+"y", 40)}
	windows := []int64{0, 1, 10, -1, -10, 101, 1_798_070_400_000_000}
	type item struct {
		size   string
		stream record.Stream
		window int64
		id     string
	}
	dedupe, out := map[string]item{}, map[string]item{}
	for _, size := range record.Sizes {
		for _, x := range []record.Stream{record.Toys, record.Boxes} {
			for _, w := range windows {
				for _, id := range ids {
					it := item{size, x, w, id}
					k := dedupeKey(&validRecord{Stream: x, Line: size, ID: id}, w)
					if prev, ok := dedupe[k]; ok {
						t.Errorf("dedupe key %q for %+v and %+v", k, prev, it)
					}
					dedupe[k] = it
					if x == record.Boxes {
						continue // toys and boxes share the output key space only through their topics
					}
					k = itemKey(size, w, id)
					if prev, ok := out[k]; ok {
						t.Errorf("item key %q for %+v and %+v", k, prev, it)
					}
					out[k] = it
				}
			}
		}
	}
}

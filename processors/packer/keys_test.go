package packer

import (
	"hash/fnv"
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

// stageKeys are keys of every shape the clock group uses for size s.
func stageKeys(s string) []string {
	return []string{
		s,
		s + "|toys|i|x|y", // an id containing '|'
		s + "|boxes|h",
		dedupeKey(&validRecord{Stream: record.Toys, Size: s, ID: "t-1"}),
		dedupeKey(&validRecord{Stream: record.Boxes, Size: s, ID: "b|2|"}),
		dedupeKey(&validRecord{Stream: record.Toys, Size: s, Heartbeat: true, ID: "ignored"}),
		dedupeKey(&validRecord{Stream: record.Boxes, Size: s, Heartbeat: true}),
		slotKey(s, 1_798_070_400_000_000, 3),
		slotKey(s, -10_000_000, 1),
		s + "|",
		s + "||",
	}
}

func TestHasherSamePartitionAsSize(t *testing.T) {
	for _, s := range record.Sizes {
		// The input topics are partitioned by the elves with sarama's default
		// hasher, FNV-1a of the whole key (the size).
		ref := fnv.New32a()
		ref.Write([]byte(s))
		for n := int32(1); n <= 12; n++ {
			want := partitionOf(ref, n)
			// Where observe expects the records of size s.
			if got := sizePartition(s, n); got != want {
				t.Errorf("sizePartition(%s, %d) = %d, want %d", s, n, got, want)
			}
			for _, k := range stageKeys(s) {
				h := sizeHasher()
				h.Write([]byte(k))
				if got := partitionOf(h, n); got != want {
					t.Errorf("size %s n=%d: key %q -> partition %d, size -> %d", s, n, k, got, want)
				}
				// The same through sarama's own partitioner built on sizeHasher,
				// as goka's producer builds it, against sarama's default one.
				msg := &sarama.ProducerMessage{Key: sarama.StringEncoder(k)}
				got, err := sarama.NewCustomHashPartitioner(sizeHasher)("t").Partition(msg, n)
				if err != nil {
					t.Fatal(err)
				}
				ref, err := sarama.NewHashPartitioner("t").Partition(&sarama.ProducerMessage{Key: sarama.StringEncoder(s)}, n)
				if err != nil {
					t.Fatal(err)
				}
				if got != ref || got != want {
					t.Errorf("size %s n=%d: sarama puts %q in %d and %q in %d (formula %d)", s, n, k, got, s, ref, want)
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
		h := sizeHasher()
		h.Write([]byte(k))
		if h.Sum32() != ref.Sum32() {
			t.Errorf("key %q: sum %08x, want FNV-1a of %q = %08x", k, h.Sum32(), prefix, ref.Sum32())
		}
	}
}

// TestHasherReset: one hasher reused with Reset, as sarama's partitioner
// reuses it for every message, hashes each key afresh.
func TestHasherReset(t *testing.T) {
	h := sizeHasher()
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
			fresh := sizeHasher()
			fresh.Write([]byte(k))
			if h.Sum32() != fresh.Sum32() {
				t.Errorf("sequence %q: after Reset, %q hashes to %08x, a fresh hasher to %08x", seq, k, h.Sum32(), fresh.Sum32())
			}
		}
	}
	// Through sarama, which calls Reset before every key.
	part := sarama.NewCustomHashPartitioner(sizeHasher)("t")
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
		whole := sizeHasher()
		whole.Write([]byte(k))
		for cut := 0; cut <= len(k); cut++ {
			h := sizeHasher()
			h.Write([]byte(k[:cut]))
			h.Write([]byte(k[cut:]))
			if h.Sum32() != whole.Sum32() {
				t.Errorf("key %q cut at %d: %08x, whole %08x", k, cut, h.Sum32(), whole.Sum32())
			}
		}
	}
}

func TestKeyShapes(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{dedupeKey(&validRecord{Stream: record.Toys, Size: "M", ID: "a"}), "M|toys|i|a"},
		{dedupeKey(&validRecord{Stream: record.Boxes, Size: "XL", Heartbeat: true, ID: "a"}), "XL|boxes|h"},
		{slotKey("S", -10, 3), "S|-10|3"},
		{itemKey("M", "t1"), "M|t1"},
		{lateKey(record.Boxes, "L", "b1"), "boxes|L|b1"},
		{deadKey("toys", 2, 17), "toys/2/17"},
	} {
		if c.got != c.want {
			t.Errorf("key %q, want %q", c.got, c.want)
		}
	}
}

package packer

import (
	"hash"
	"hash/fnv"
	"strconv"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
)

// The clock group keys its state by the packing line, the input records'
// Kafka key (a clock), or by strings that start with it and a '|' (a dedupe
// entry; a line never holds a '|'). lineHasher hashes only the line, with the
// same FNV-1a that sarama and goka use for the input topics' keys, so every
// key of line l lives in the partition of the input records of line l. That
// keeps one line's records, its clock and its dedupe entries in one
// partition, where Kafka's per-partition order is the input's offset order:
// ranks are assigned in offset order without any reordering buffer.
func lineHasher() hash.Hash32 { return &prefixHash{Hash32: fnv.New32a()} }

type prefixHash struct {
	hash.Hash32
	done bool
}

func (h *prefixHash) Write(p []byte) (int, error) {
	if h.done {
		return len(p), nil
	}
	for i, b := range p {
		if b == '|' {
			h.done = true
			h.Hash32.Write(p[:i])
			return len(p), nil
		}
	}
	return h.Hash32.Write(p)
}

func (h *prefixHash) Reset() { h.Hash32.Reset(); h.done = false }

// linePartition is the partition of n that line's keys hash to: sarama's
// hash partitioner (and the packer's producer, gokakit.NewWriter) on lineHasher.
// It hashes in place: observe asks it for every input record, and a
// hash.Hash32 would cost two allocations each time.
func linePartition(line string, n int32) int32 {
	// FNV-1a, 32 bits (hash/fnv's New32a).
	const offset32, prime32 = 2166136261, 16777619
	h := uint32(offset32)
	for i := range len(line) {
		h ^= uint32(line[i])
		h *= prime32
	}
	part := int32(h) % n
	if part < 0 {
		part = -part
	}
	return part
}

// Keys that hold an id hold it whole when it is short and its digest
// otherwise (keyID), behind a different separator: an id can never pose as
// another id's digest.
func dedupeKey(o *validRecord, window int64) string {
	k, whole := keyID(o.ID)
	// Appended in one buffer: a key for every toy and box.
	b := make([]byte, 0, 64)
	b = append(b, o.Line...)
	b = append(b, '|')
	b = append(b, o.Stream...)
	b = append(b, '|')
	b = strconv.AppendInt(b, window, 10)
	if whole {
		b = append(b, "|i|"...)
	} else {
		b = append(b, "|d|"...)
	}
	b = append(b, k...)
	return string(b)
}

// itemKey is the key of an item's output row (results.ItemKey): a
// consumer deduplicates by it.
func itemKey(line string, window int64, id string) string {
	k, whole := keyID(id)
	return results.ItemKey{Line: line, Window: window, ID: k, Digest: !whole}.String()
}

// lineSize is the size class of a well-formed line: the key up to its
// slash, or the whole key.
func lineSize(line string) string {
	size, _, _ := record.SplitLine(line)
	return size
}

// lateKey is the late record's position, like a dead letter's: each late
// record is a row of its own, two late copies of one id two rows.
func lateKey(topic string, partition int32, offset int64) string {
	return deadKey(topic, partition, offset)
}

func deadKey(topic string, partition int32, offset int64) string {
	return topic + "/" + strconv.FormatInt(int64(partition), 10) + "/" + strconv.FormatInt(offset, 10)
}

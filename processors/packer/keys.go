package packer

import (
	"strconv"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
)

// The clock group keys its state, its table's records and its loop's by
// the packing line, the input records' Kafka key, so that goka's default
// hasher (FNV-1a of the whole key, as sarama's and the elves') puts every
// record of line l in the partition of the input records of line l. That
// keeps one line's records and its clock in one partition, where Kafka's
// per-partition order is the input's offset order: ranks are assigned in
// offset order without any reordering buffer.

// linePartition is the partition of n that line hashes to with sarama's
// hash partitioner (and goka's, and the packer's producer's). It hashes in
// place: observe asks it for every input record, and a
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

// itemKey is the key of an item's output row (results.ItemKey): a
// consumer deduplicates by it. It holds the id whole when it is short and
// its digest otherwise (keyID), behind a different separator: an id can
// never pose as another id's digest.
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

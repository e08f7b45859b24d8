package packer

import (
	"testing"

	"github.com/northpole-workshop/northpole/internal/record"
)

// The contract has every record of a (stream, size) in one partition. When a
// producer breaks that (another partitioner, a changed partition count), the
// packer must still give every record an outcome: an offset in one partition
// says nothing about an offset in another, so a record from a second
// partition is never mistaken for a replay.

func TestDedupeStepAcrossPartitions(t *testing.T) {
	obs := func(part int32, off int64) *validRecord {
		return &validRecord{Stream: record.Toys, Partition: part, Offset: off, Size: "M", ID: "a"}
	}
	type step struct {
		obs       *validRecord
		write     bool // a state is written: only by the first record of the id
		dup       bool
		wantFirst [2]int64 // partition, offset of First after the step
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"one partition: first, duplicate, replays", []step{
			{obs(0, 10), true, false, [2]int64{0, 10}},
			{obs(0, 12), false, true, [2]int64{0, 10}},
			{obs(0, 10), false, false, [2]int64{0, 10}}, // replay of the first: its event again
			{obs(0, 12), false, true, [2]int64{0, 10}},  // replay of the duplicate: dead letter again
		}},
		{"a second partition with a lower offset is a duplicate", []step{
			{obs(0, 50), true, false, [2]int64{0, 50}},
			{obs(3, 5), false, true, [2]int64{0, 50}},
		}},
		{"the same offset in another partition is not the first record", []step{
			{obs(0, 50), true, false, [2]int64{0, 50}},
			{obs(3, 50), false, true, [2]int64{0, 50}},
		}},
		{"a replay of the first after a record from another partition stays the first", []step{
			{obs(0, 50), true, false, [2]int64{0, 50}},
			{obs(3, 5), false, true, [2]int64{0, 50}},
			{obs(0, 50), false, false, [2]int64{0, 50}},
			{obs(3, 5), false, true, [2]int64{0, 50}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var st *firstSeen
			for i, s := range tc.steps {
				next, dup := dedupeStep(st, s.obs)
				if (next != nil) != s.write || dup != s.dup {
					t.Fatalf("step %d (%d@%d): write %v dup %v, want write %v dup %v", i, s.obs.Partition, s.obs.Offset, next != nil, dup, s.write, s.dup)
				}
				if next != nil {
					st = next
				}
				if got := [2]int64{int64(st.FirstPart), st.First}; got != s.wantFirst {
					t.Fatalf("step %d: first %v, want %v", i, got, s.wantFirst)
				}
			}
		})
	}
}

func TestClockAppliesEachPartitionOnce(t *testing.T) {
	p := paramsUS{WindowUS: 10, LatenessUS: 5}
	item := func(part int32, off, made int64) validRecord {
		return validRecord{Stream: record.Toys, Partition: part, Offset: off, Size: "M", ID: "x", MadeUS: made}
	}
	var st sizeClock
	for i, s := range []struct {
		obs     validRecord
		applied bool
		newPart bool
	}{
		{item(0, 1, 1), true, false},
		{item(0, 2, 2), true, false},
		{item(3, 1, 3), true, true}, // lower offset, other partition: applied, not a replay
		{item(3, 1, 3), false, false},
		{item(0, 2, 2), false, false},
		{item(3, 2, 4), true, false},
		{item(0, 3, 5), true, false},
	} {
		if got := st.apply(p, s.obs); got != s.applied {
			t.Fatalf("step %d (%d@%d): applied %v, want %v", i, s.obs.Partition, s.obs.Offset, got, s.applied)
		}
		if s.applied && st.Ev.NewPartition != s.newPart {
			t.Fatalf("step %d: NewPartition %v, want %v", i, st.Ev.NewPartition, s.newPart)
		}
	}
	if len(st.Open) != 1 || st.Open[0].Toys != 5 {
		t.Fatalf("open windows %+v, want one with the 5 applied toys", st.Open)
	}
}

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

func TestClockAppliesEachPartitionOnce(t *testing.T) {
	p := paramsUS{WindowUS: 10, LatenessUS: 5}
	item := func(part int32, off, made int64) validRecord {
		return validRecord{Stream: record.Toys, Partition: part, Offset: off, Line: "M", ID: "x", MadeUS: made}
	}
	var kc keyClock
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
		if got := kc.apply(p, s.obs); got != s.applied {
			t.Fatalf("step %d (%d@%d): applied %v, want %v", i, s.obs.Partition, s.obs.Offset, got, s.applied)
		}
		if s.applied && kc.Ev.NewPartition != s.newPart {
			t.Fatalf("step %d: NewPartition %v, want %v", i, kc.Ev.NewPartition, s.newPart)
		}
	}
	if len(kc.Open) != 1 || kc.Open[0].Toys != 5 {
		t.Fatalf("open windows %+v, want one with the 5 applied toys", kc.Open)
	}
}

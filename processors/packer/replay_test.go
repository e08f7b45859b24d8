package packer

import (
	"reflect"
	"testing"

	"github.com/northpole-workshop/northpole/internal/record"
)

// TestReplayAcrossInputs: the group commits each input on its own, so a
// decision whose record is not committed can sit in the table before one
// whose record is (a box committed, a toy before it not). A restart must
// replay the toy's decision, and keep the slots of its window for it,
// although a committed record closed that window after it: the toy's pair
// is written again whatever order toys and boxes come again in.
func TestReplayAcrossInputs(t *testing.T) {
	for _, boxesFirst := range []bool{false, true} {
		u := newUnitPipeline(t)
		u.box("b1", "M", at("00:00:01"))
		toy := u.toy("t1", "M", at("00:00:02")) // completes the pair
		hbT := u.heartbeat(record.Toys, "M", at("00:01:00"))
		u.heartbeat(record.Boxes, "M", at("00:01:00")) // closes window 0
		packed := u.take(u.cfg.Topics.Packed)
		if len(packed) != 1 || packed[0].offset != toy {
			t.Fatalf("live rows %+v, want t1's pair from its record", packed)
		}
		// Crashed with every box committed, the toys from t1 on not.
		committed := u.committed()
		committed[inToys] = toy
		re := startUnit(t, u.cfg, u.table, committed)
		if n := len(re.clockPart().replays); n != 2 {
			t.Fatalf("%d replays, want t1's and the toys' heartbeat's", n)
		}
		re.next[record.Toys] = toy
		if boxesFirst {
			// A box heartbeat after the crash, before the toys come
			// again.
			re.next[record.Boxes] = u.next[record.Boxes]
			re.heartbeat(record.Boxes, "M", at("00:01:01"))
		}
		re.toy("t1", "M", at("00:00:02"))
		if hb := re.heartbeat(record.Toys, "M", at("00:01:00")); hb != hbT {
			t.Fatalf("heartbeat again at %d, want %d", hb, hbT)
		}
		got := re.take(u.cfg.Topics.Packed)
		if len(got) != 1 || got[0].key != packed[0].key || !reflect.DeepEqual(got[0].val, packed[0].val) {
			t.Errorf("boxes first %v: replayed %+v, want %+v", boxesFirst, got, packed)
		}
		if n := len(slotContents(t, re.clockPart())); n != 0 || len(re.clockPart().replays) != 0 {
			t.Errorf("boxes first %v: %d slots and %d replays left after every replay", boxesFirst, n, len(re.clockPart().replays))
		}
	}
}

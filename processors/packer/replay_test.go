package packer

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

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

// TestReplayRandomCrashes restarts a packer from the whole table of a
// random run with the inputs committed each at a random offset, and
// delivers the records after those offsets again, toys and boxes
// interleaved at random (each in its order): every row the live packer
// wrote for a record delivered again is written again, with the same key
// and value, nothing is written that the live packer did not write, and
// the restarted packer ends with the live one's clocks and slots, no replay
// left.
func TestReplayRandomCrashes(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 7))
	live := newUnitPipeline(t)
	inputs := randomInputs(r, 3000, time.Date(2026, 12, 24, 0, 0, 0, 0, time.UTC))
	type delivery struct {
		in  randomInput
		off int64
	}
	var byStream [2][]delivery
	for _, in := range inputs {
		off := live.send(in.x, in.key, in.value)
		byStream[streamIndex(in.x)] = append(byStream[streamIndex(in.x)], delivery{in, off})
	}
	everything := rowsByKey(t, live.rows, live.cfg, [nInputs]int64{})
	for crash := range 30 {
		var at [nInputs]int64
		var again [2][]delivery
		for x := range byStream {
			at[x] = r.Int64N(int64(len(byStream[x])) + 1)
			again[x] = byStream[x][at[x]:]
		}
		re := startUnit(t, live.cfg, live.table, at)
		for len(again[0])+len(again[1]) > 0 {
			x := r.IntN(2)
			if len(again[x]) == 0 {
				x = 1 - x
			}
			d := again[x][0]
			again[x] = again[x][1:]
			re.next[d.in.x] = d.off
			re.send(d.in.x, d.in.key, d.in.value)
		}
		what := fmt.Sprintf("crash %d, committed %v", crash, at)
		got := rowsByKey(t, re.rows, live.cfg, [nInputs]int64{})
		for k, v := range rowsByKey(t, live.rows, live.cfg, at) {
			if got[k] != v {
				t.Errorf("%s: %s written live as %s, again as %q", what, k, v, got[k])
			}
		}
		for k, v := range got {
			if everything[k] != v {
				t.Errorf("%s: %s written again as %s, live as %q", what, k, v, everything[k])
			}
		}
		if n := len(re.clockPart().replays); n != 0 {
			t.Errorf("%s: %d replays left", what, n)
		}
		expectSameClocks(t, what, live, re)
		expectSameSlots(t, what, live, re)
	}
}

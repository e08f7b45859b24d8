package packer

import (
	"fmt"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
)

// clockAt is an event time s seconds into the test's day, as at() takes it.
func clockAt(s int) string {
	d := time.Duration(s) * time.Second
	return at(fmt.Sprintf("%02d:%02d:%02d", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60))
}

// lineState counts what the packer holds for one line: its open windows,
// its dedupe entries and its slots.
func (u *unitPipeline) lineState(line string) (open, dedupe, slots int) {
	if kc := u.clockPart().keyClocks[line]; kc != nil {
		open = len(kc.Open)
	}
	if kc := u.clockPart().keyClocks[line]; kc != nil {
		for _, ws := range kc.ids {
			for _, w := range ws {
				dedupe += w.n
			}
		}
	}
	u.clockPart().eachSlot(func(ref slotRef, _ *slotState) {
		if ref.line == line {
			slots++
		}
	})
	return open, dedupe, slots
}

// TestQuietHallHoldsNoOneBack: two halls make toys and boxes of size M. One
// hall goes quiet without its final heartbeats (its elves gone); the other
// goes on for a hundred windows, then sends its final heartbeats. Each line
// closes its windows by its own clock: the busy hall's windows all close and
// report their unpacked toys, whatever the quiet one does, and the quiet
// hall keeps exactly the windows its own watermark left open (their pairs
// reported, their unpacked toys not, as the contract says of a window open
// at quiescence) and no more state than it had when it went quiet.
func TestQuietHallHoldsNoOneBack(t *testing.T) {
	u := newUnitPipeline(t) // W 10 s, L 5 s
	const busy, quiet = "M/hall-1", "M/hall-2"
	send := func(line string, x record.Stream, id string, s int) {
		if x == record.Toys {
			u.send(x, line, toyValue(id, "M", clockAt(s)))
		} else {
			u.send(x, line, boxValue(id, "M", clockAt(s)))
		}
	}
	// Each window of each line: two toys and one box, so one pair and one
	// unpacked toy per closed window.
	window := func(line string, start int) {
		send(line, record.Toys, fmt.Sprintf("t%d-a", start), start+1)
		send(line, record.Boxes, fmt.Sprintf("b%d", start), start+2)
		send(line, record.Toys, fmt.Sprintf("t%d-b", start), start+3)
	}
	for start := 0; start <= 50; start += 10 {
		window(busy, start)
		window(quiet, start)
	}
	// The quiet hall's watermark is 53 - 5 = 48 s on both streams: the
	// windows ending at 40 s or before are closed, [40, 50) and [50, 60)
	// stay open.
	open0, dedupe0, slots0 := u.lineState(quiet)
	if open0 != 2 {
		t.Fatalf("the quiet hall has %d open windows when it goes quiet, want 2", open0)
	}
	for start := 60; start < 1060; start += 10 {
		window(busy, start)
	}
	for _, x := range []record.Stream{record.Toys, record.Boxes} {
		u.send(x, busy, heartbeatValue("M", clockAt(3600)))
	}

	unpacked := map[string]int{}
	packed := map[string]int{}
	for _, r := range u.take() {
		switch v := r.val.(type) {
		case *results.Unpacked:
			unpacked[v.Line]++
		case *results.Packed:
			packed[v.Line]++
		case *results.Spare:
			t.Errorf("a spare box on %s: every window has as many boxes as pairs", v.Line)
		}
	}
	if packed[busy] != 106 || unpacked[busy] != 106 {
		t.Errorf("the busy hall: %d pairs and %d unpacked toys, want 106 and 106 (every window closed by its own final heartbeats)", packed[busy], unpacked[busy])
	}
	if packed[quiet] != 6 || unpacked[quiet] != 4 {
		t.Errorf("the quiet hall: %d pairs and %d unpacked toys, want 6 pairs and 4 unpacked (windows [40, 50) and [50, 60) stay open)", packed[quiet], unpacked[quiet])
	}
	if open, dedupe, slots := u.lineState(quiet); open != open0 || dedupe != dedupe0 || slots != slots0 {
		t.Errorf("the quiet hall holds %d open windows, %d dedupe entries, %d slots after the busy one's 100 windows, want what it held when it went quiet: %d, %d, %d",
			open, dedupe, slots, open0, dedupe0, slots0)
	}
	if open, dedupe, slots := u.lineState(busy); open != 0 || dedupe != 0 || slots != 0 {
		t.Errorf("the busy hall holds %d open windows, %d dedupe entries, %d slots after its final heartbeats, want none", open, dedupe, slots)
	}
}

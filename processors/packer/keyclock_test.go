package packer

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/contract"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
)

// Small units keep the tables readable: W = 10, L = 5 (µs).
var clockP = paramsUS{WindowUS: 10, LatenessUS: 5}

func clockItem(x record.Stream, off, t int64, id string) validRecord {
	return validRecord{Stream: x, Line: "M", Offset: off, MadeUS: t, ID: id}
}
func cToy(off, t int64, id string) validRecord { return clockItem(record.Toys, off, t, id) }
func cBox(off, t int64, id string) validRecord { return clockItem(record.Boxes, off, t, id) }
func cHB(x record.Stream, off, t int64) validRecord {
	return validRecord{Stream: x, Line: "M", Offset: off, MadeUS: t, Heartbeat: true}
}
func cDup(x record.Stream, off, t int64, id string) validRecord {
	o := clockItem(x, off, t, id)
	o.Dup = true
	return o
}

// want is what one apply must decide. Closed nil means no window closed.
type clockWant struct {
	ok     bool
	class  class
	window int64
	rank   int
	closed []closedWindow
}

func item(window int64, rank int, closed ...closedWindow) clockWant {
	return clockWant{ok: true, class: classItem, window: window, rank: rank, closed: closed}
}
func late(window int64, closed ...closedWindow) clockWant {
	return clockWant{ok: true, class: classLate, window: window, closed: closed}
}
func hbW(window int64, closed ...closedWindow) clockWant {
	return clockWant{ok: true, class: classHeartbeat, window: window, closed: closed}
}
func dupW(window int64, closed ...closedWindow) clockWant {
	return clockWant{ok: true, class: classDuplicate, window: window, closed: closed}
}

var redelivered = clockWant{ok: false}

type clockStep struct {
	obs  validRecord
	want clockWant
}

// cloneClock deep-copies a keyClock so that later apply calls cannot alias it.
func cloneClock(s keyClock) keyClock {
	c := s
	c.Open = slices.Clone(s.Open)
	c.Toys.Lasts = slices.Clone(s.Toys.Lasts)
	c.Boxes.Lasts = slices.Clone(s.Boxes.Lasts)
	if s.Ev != nil {
		ev := *s.Ev
		ev.Closed = slices.Clone(s.Ev.Closed)
		ev.Rec.Raw = slices.Clone(s.Ev.Rec.Raw)
		ev.Rec.Key = slices.Clone(s.Ev.Rec.Key)
		c.Ev = &ev
	}
	return c
}

func runClockSteps(t *testing.T, p paramsUS, kc *keyClock, steps []clockStep) {
	t.Helper()
	for i, s := range steps {
		before := cloneClock(*kc)
		ok := kc.apply(p, s.obs)
		if ok != s.want.ok {
			t.Fatalf("step %d %+v: apply = %v, want %v", i, s.obs, ok, s.want.ok)
		}
		if !ok {
			if !reflect.DeepEqual(*kc, before) {
				t.Fatalf("step %d %+v: redelivery changed the state\nbefore %+v\nafter  %+v", i, s.obs, before, *kc)
			}
			continue
		}
		ev := kc.Ev
		// The decision holds the record, marked a duplicate only when it
		// is one: a late record or a heartbeat is not, whatever admit said.
		wantRec := s.obs
		wantRec.Dup = s.want.class == classDuplicate
		if !reflect.DeepEqual(ev.Rec, wantRec) {
			t.Errorf("step %d: Ev.Rec = %+v, want %+v", i, ev.Rec, wantRec)
		}
		if c, b := kc.stream(s.obs.Stream), before.stream(s.obs.Stream); ev.Max != c.Max || (b.Seen && ev.Max < b.Max) || ev.Max < s.obs.MadeUS {
			t.Errorf("step %d %+v: Max %d, want the stream's greatest made_at %d", i, s.obs, ev.Max, c.Max)
		}
		if ev.Class != s.want.class || ev.Window != s.want.window || ev.Rank != s.want.rank {
			t.Errorf("step %d %+v: got class %s window %d rank %d, want class %s window %d rank %d",
				i, s.obs, ev.Class, ev.Window, ev.Rank, s.want.class, s.want.window, s.want.rank)
		}
		if !slices.Equal(ev.Closed, s.want.closed) {
			t.Errorf("step %d %+v: closed %+v, want %+v", i, s.obs, ev.Closed, s.want.closed)
		}
	}
}

// seenClock is a clock whose last record applied is at offset last of
// partition 0, where every record of TestClockApplyTable is.
func seenClock(last, maxMade int64) streamClock {
	return streamClock{Seen: true, Lasts: []partOffset{{Partition: 0, Offset: last}}, Max: maxMade}
}

func TestClockApplyTable(t *testing.T) {
	type tc struct {
		name  string
		p     paramsUS
		steps []clockStep
		// final checks
		open       []openWindow
		toys, boxs streamClock
	}
	cases := []tc{
		{
			name: "ranks per stream per window in offset order",
			steps: []clockStep{
				{cToy(0, 1, "t0"), item(0, 1)},
				{cToy(1, 3, "t1"), item(0, 2)},
				{cBox(0, 2, "b0"), item(0, 1)},
				{cToy(2, 12, "t2"), item(10, 1)},
				{cBox(1, 9, "b1"), item(0, 2)},
				{cToy(3, 0, "t3"), item(0, 3)},
				{cBox(2, 19, "b2"), item(10, 1)},
				{cBox(3, 10, "b3"), item(10, 2)},
			},
			open: []openWindow{{Start: 0, Toys: 3, Boxes: 2}, {Start: 10, Toys: 1, Boxes: 2}},
			toys: seenClock(3, 12),
			boxs: seenClock(3, 19),
		},
		{
			name: "late exactly when prior_max - L == window_end",
			steps: []clockStep{
				{cToy(0, 15, "a"), item(10, 1)},
				// window 0 ends at 10 = 15 - 5: late.
				{cToy(1, 9, "b"), late(0)},
				// window 10 ends at 20 > 10: on time.
				{cToy(2, 10, "c"), item(10, 2)},
			},
			open: []openWindow{{Start: 10, Toys: 2}},
			toys: seenClock(2, 15),
		},
		{
			name: "not late 1µs before the bound",
			steps: []clockStep{
				{cToy(0, 14, "a"), item(10, 1)},
				// 14 - 5 = 9 < 10: not late.
				{cToy(1, 9, "b"), item(0, 1)},
				{cToy(2, 0, "c"), item(0, 2)},
			},
			open: []openWindow{{Start: 0, Toys: 2}, {Start: 10, Toys: 1}},
			toys: seenClock(2, 14),
		},
		{
			name: "lateness is per stream",
			steps: []clockStep{
				{cToy(0, 100, "a"), item(100, 1)},
				// Boxes have no prior record: prior_max is minus infinity.
				{cBox(0, 1, "x"), item(0, 1)},
			},
			open: []openWindow{{Start: 0, Boxes: 1}, {Start: 100, Toys: 1}},
			toys: seenClock(0, 100),
			boxs: seenClock(0, 1),
		},
		{
			name: "late records get no rank",
			steps: []clockStep{
				{cToy(0, 30, "a"), item(30, 1)},
				{cToy(1, 2, "b"), late(0)},
				{cToy(2, 24, "c"), item(20, 1)},
			},
			open: []openWindow{{Start: 20, Toys: 1}, {Start: 30, Toys: 1}},
			toys: seenClock(2, 30),
		},
		{
			name: "heartbeats advance the clock without a rank",
			steps: []clockStep{
				{cHB(record.Toys, 0, 30), hbW(30)},
				{cToy(1, 26, "a"), item(20, 1)},
				// 30 - 5 = 25 >= 20: late.
				{cToy(2, 19, "b"), late(10)},
				{cHB(record.Toys, 3, 31), hbW(30)},
				{cToy(4, 27, "c"), item(20, 2)},
			},
			open: []openWindow{{Start: 20, Toys: 2}},
			toys: seenClock(4, 31),
		},
		{
			name: "a heartbeat behind the clock does not move it back",
			steps: []clockStep{
				{cHB(record.Boxes, 0, 50), hbW(50)},
				{cHB(record.Boxes, 1, 3), hbW(0)},
				{cBox(2, 41, "b"), item(40, 1)},
				{cBox(3, 39, "c"), late(30)},
			},
			open: []openWindow{{Start: 40, Boxes: 1}},
			boxs: seenClock(3, 50),
		},
		{
			name: "duplicates get no rank but advance the clock",
			steps: []clockStep{
				{cToy(0, 1, "a"), item(0, 1)},
				{cToy(1, 51, "a"), item(50, 1)}, // the same id in another window: an item
				{cDup(record.Toys, 2, 52, "a"), dupW(50)},
				// prior_max is now 52: 47 >= 10.
				{cToy(3, 2, "b"), late(0)},
				// Late wins over duplicate: admit does not even look a late
				// record's id up, and a duplicate flag on one changes nothing.
				{cDup(record.Toys, 4, 0, "b"), late(0)},
				{cDup(record.Toys, 5, 1, "a"), late(0)},
				{cToy(6, 49, "c"), item(40, 1)},
			},
			open: []openWindow{{Start: 0, Toys: 1}, {Start: 40, Toys: 1}, {Start: 50, Toys: 1}},
			toys: seenClock(6, 52),
		},
		{
			name: "a heartbeat that is a duplicate or late is a heartbeat",
			steps: []clockStep{
				{cHB(record.Toys, 0, 100), hbW(100)},
				{validRecord{Stream: record.Toys, Line: "M", Offset: 1, MadeUS: 1, Heartbeat: true, Dup: true, ID: "z"}, hbW(0)},
				{cHB(record.Toys, 2, 2), hbW(0)},
			},
			toys: seenClock(2, 100),
		},
		{
			name: "redelivery returns false and changes nothing",
			steps: []clockStep{
				{cToy(0, 1, "a"), item(0, 1)},
				{cToy(0, 1, "a"), redelivered},
				{cToy(1, 2, "b"), item(0, 2)},
				{cToy(0, 1, "a"), redelivered},
				{cToy(1, 2, "b"), redelivered},
				// Offsets are per stream: box offset 0 is new.
				{cBox(0, 3, "x"), item(0, 1)},
				{cBox(0, 3, "x"), redelivered},
				{cHB(record.Toys, 2, 40), hbW(40)},
				{cHB(record.Toys, 2, 40), redelivered},
				{cBox(1, 60, "y"), item(60, 1, closedWindow{Start: 0, Toys: 2, Boxes: 1})},
				// Replaying the closing event closes nothing a second time.
				{cBox(1, 60, "y"), redelivered},
				{cDup(record.Boxes, 1, 60, "y"), redelivered},
				{cToy(1, 2, "b"), redelivered},
				{cToy(3, 41, "c"), item(40, 1)},
			},
			open: []openWindow{{Start: 40, Toys: 1}, {Start: 60, Boxes: 1}},
			toys: seenClock(3, 41),
			boxs: seenClock(1, 60),
		},
		{
			name: "windows close only when both watermarks reach the end",
			steps: []clockStep{
				{cToy(0, 1, "t"), item(0, 1)},
				{cBox(0, 2, "b"), item(0, 1)},
				// toys watermark 10 >= 10, boxes watermark -3: open.
				{cHB(record.Toys, 1, 15), hbW(10)},
				// boxes watermark 9 < 10: open.
				{cHB(record.Boxes, 1, 14), hbW(10)},
				// boxes watermark 10: closed now, by this event.
				{cHB(record.Boxes, 2, 15), hbW(10, closedWindow{Start: 0, Toys: 1, Boxes: 1})},
				// and never again.
				{cHB(record.Boxes, 3, 100), hbW(100)},
			},
			toys: seenClock(1, 15),
			boxs: seenClock(3, 100),
		},
		{
			name: "the lagging stream closes, whichever it is",
			steps: []clockStep{
				{cToy(0, 1, "t"), item(0, 1)},
				{cHB(record.Boxes, 0, 100), hbW(100)},
				{cToy(1, 14, "u"), item(10, 1)},
				{cToy(2, 15, "v"), item(10, 2, closedWindow{Start: 0, Toys: 1})},
			},
			open: []openWindow{{Start: 10, Toys: 2}},
			toys: seenClock(2, 15),
			boxs: seenClock(0, 100),
		},
		{
			name: "a big jump closes several windows at once, in start order",
			p:    paramsUS{WindowUS: 10, LatenessUS: 30},
			steps: []clockStep{
				{cToy(0, 25, "t25"), item(20, 1)},
				{cToy(1, 5, "t5"), item(0, 1)},
				{cBox(0, 13, "b13"), item(10, 1)},
				{cBox(1, 31, "b31"), item(30, 1)},
				{cToy(2, 19, "t19"), item(10, 1)},
				{cBox(2, 30, "b30"), item(30, 2)},
				// toys watermark 970, boxes watermark 1: nothing closes.
				{cHB(record.Toys, 3, 1000), hbW(1000)},
				// boxes watermark 14: window 0 closes.
				{cBox(3, 44, "b44"), item(40, 1, closedWindow{Start: 0, Toys: 1})},
				// boxes watermark 70: windows 10 to 40 close together.
				{cHB(record.Boxes, 4, 100), hbW(100,
					closedWindow{Start: 10, Toys: 1, Boxes: 1}, closedWindow{Start: 20, Toys: 1},
					closedWindow{Start: 30, Boxes: 2}, closedWindow{Start: 40, Boxes: 1})},
			},
			toys: seenClock(3, 1000),
			boxs: seenClock(4, 100),
		},
		{
			name: "a stream with no records keeps every window open",
			steps: []clockStep{
				{cToy(0, 1, "a"), item(0, 1)},
				{cToy(1, 11, "b"), item(10, 1)},
				{cToy(2, 12, "c"), item(10, 2)},
				{cHB(record.Toys, 3, 1_000_000), hbW(1_000_000)},
			},
			open: []openWindow{{Start: 0, Toys: 1}, {Start: 10, Toys: 2}},
			toys: seenClock(3, 1_000_000),
		},
		{
			name: "negative times floor",
			steps: []clockStep{
				{cToy(0, -21, "a"), item(-30, 1)},
				{cToy(1, -11, "b"), item(-20, 1)},
				{cToy(2, -20, "c"), item(-20, 2)},
				{cToy(3, -1, "d"), item(-10, 1)},
				{cToy(4, -10, "e"), item(-10, 2)},
				{cToy(5, 0, "f"), item(0, 1)},
				// toys watermark -5, boxes -14: window -30 (end -20) closes.
				{cBox(0, -9, "x"), item(-10, 1, closedWindow{Start: -30, Toys: 1})},
				// boxes watermark 1: window -20 (end -10) closes, -10 (end 0) not.
				{cBox(1, 6, "y"), item(0, 1, closedWindow{Start: -20, Toys: 2})},
				// toys prior_max 0: -5 >= -10, the end of window -20: late.
				{cToy(6, -15, "g"), late(-20)},
				{cToy(7, -14, "h"), late(-20)},
				// -5 < 0, the end of window -10.
				{cToy(8, -6, "i"), item(-10, 3)},
			},
			open: []openWindow{{Start: -10, Toys: 3, Boxes: 1}, {Start: 0, Toys: 1, Boxes: 1}},
			toys: seenClock(8, 0),
			boxs: seenClock(1, 6),
		},
		{
			name: "negative times with a window that does not divide them",
			p:    paramsUS{WindowUS: 7, LatenessUS: 20},
			steps: []clockStep{
				{cToy(0, -1, "a"), item(-7, 1)},
				{cToy(1, -7, "b"), item(-7, 2)},
				{cToy(2, -8, "c"), item(-14, 1)},
				{cToy(3, -15, "d"), item(-21, 1)},
				{cHB(record.Toys, 4, 6), hbW(0)},
				// prior_max 6: -14 >= -14, the end of window -21: late.
				{cToy(5, -15, "e"), late(-21)},
				{cToy(6, -14, "f"), item(-14, 2)},
				// toys watermark -14, boxes 10: window -21 closes.
				{cHB(record.Boxes, 0, 30), hbW(28, closedWindow{Start: -21, Toys: 1})},
			},
			open: []openWindow{{Start: -14, Toys: 2}, {Start: -7, Toys: 2}},
			toys: seenClock(6, 6),
			boxs: seenClock(0, 30),
		},
		{
			name: "real units before 1970",
			p:    paramsUS{WindowUS: 10_000_000, LatenessUS: 5_000_000},
			steps: []clockStep{
				{cToy(0, time.Date(1969, 12, 31, 23, 59, 55, 500_000_000, time.UTC).UnixMicro(), "a"),
					item(time.Date(1969, 12, 31, 23, 59, 50, 0, time.UTC).UnixMicro(), 1)},
				{cToy(1, time.Date(1969, 12, 31, 23, 59, 50, 0, time.UTC).UnixMicro(), "b"),
					item(time.Date(1969, 12, 31, 23, 59, 50, 0, time.UTC).UnixMicro(), 2)},
				// prior_max - L = -9.5 s >= -10 s, the end of window -20 s: late.
				{cToy(2, time.Date(1969, 12, 31, 23, 59, 49, 999_999_000, time.UTC).UnixMicro(), "c"),
					late(time.Date(1969, 12, 31, 23, 59, 40, 0, time.UTC).UnixMicro())},
				{cBox(0, time.Date(1969, 12, 31, 23, 59, 49, 999_999_000, time.UTC).UnixMicro(), "x"),
					item(time.Date(1969, 12, 31, 23, 59, 40, 0, time.UTC).UnixMicro(), 1)},
			},
			open: []openWindow{
				{Start: time.Date(1969, 12, 31, 23, 59, 40, 0, time.UTC).UnixMicro(), Boxes: 1},
				{Start: time.Date(1969, 12, 31, 23, 59, 50, 0, time.UTC).UnixMicro(), Toys: 2},
			},
			toys: seenClock(2, time.Date(1969, 12, 31, 23, 59, 55, 500_000_000, time.UTC).UnixMicro()),
			boxs: seenClock(0, time.Date(1969, 12, 31, 23, 59, 49, 999_999_000, time.UTC).UnixMicro()),
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := c.p
			if p == (paramsUS{}) {
				p = clockP
			}
			var kc keyClock
			runClockSteps(t, p, &kc, c.steps)
			if len(kc.Open) == 0 {
				kc.Open = nil
			}
			if !slices.Equal(kc.Open, c.open) {
				t.Errorf("Open = %+v, want %+v", kc.Open, c.open)
			}
			if !reflect.DeepEqual(kc.Toys, c.toys) {
				t.Errorf("Toys clock = %+v, want %+v", kc.Toys, c.toys)
			}
			if !reflect.DeepEqual(kc.Boxes, c.boxs) {
				t.Errorf("Boxes clock = %+v, want %+v", kc.Boxes, c.boxs)
			}
		})
	}
}

// TestClockApplyRedeliveryDeepEqual replays every earlier event at every point
// of a sequence and checks that the state stays deep-equal.
func TestClockApplyRedeliveryDeepEqual(t *testing.T) {
	seq := []validRecord{
		cToy(0, 1, "a"), cBox(0, 2, "x"), cToy(1, 3, "b"), cHB(record.Toys, 2, 17),
		cDup(record.Boxes, 1, 4, "x"), cToy(3, 4, "c"), cBox(2, 16, "y"), cHB(record.Boxes, 3, 30),
		cToy(4, 12, "d"), cToy(5, 40, "e"),
	}
	var kc keyClock
	for i, o := range seq {
		if !kc.apply(clockP, o) {
			t.Fatalf("event %d %+v: apply = false on first delivery", i, o)
		}
		for j := 0; j <= i; j++ {
			before := cloneClock(kc)
			if kc.apply(clockP, seq[j]) {
				t.Fatalf("after event %d: redelivery of event %d %+v returned true", i, j, seq[j])
			}
			if !reflect.DeepEqual(kc, before) {
				t.Fatalf("after event %d: redelivery of event %d changed the state\nbefore %+v\nafter  %+v", i, j, before, kc)
			}
		}
	}
}

// TestClockRestoreMatchesApply: restoring the decisions that apply made,
// from the first or from any record a horizon's mark keeps, gives the
// clock that apply left: the same watermarks, offsets and open windows
// with their counts. Nothing is decided again: a restore trusts the
// decisions, whatever the lateness they were made with.
func TestClockRestoreMatchesApply(t *testing.T) {
	suffixes := 0
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 13))
		p := paramsUS{WindowUS: 1 + int64(r.IntN(12)), LatenessUS: int64(r.IntN(10))}
		seq := randomClockInput(r, int64(r.IntN(200))-100)
		markDups(p, seq)
		var live keyClock
		var evs []decision
		h := newHorizon()
		var keeps []int64
		for i, o := range seq {
			if !live.apply(p, o) {
				t.Fatalf("seed %d: %+v refused", seed, o)
			}
			ev := *cloneClock(live).Ev
			if i%7 == 6 {
				// A walk of one key, as the clock stage's pieces carry.
				ev.Snapshot = &snapshot{Walk: uint64(i), First: true, Last: true, Keys: []keyStreams{{Key: "M", Toys: live.Toys.clone(), Boxes: live.Boxes.clone()}}}
			}
			evs = append(evs, ev)
			observeDecision(h, int64(i), &ev)
			h.mark(int64(i))
			keeps = append(keeps, h.marks[len(h.marks)-1].keep)
		}
		for _, from := range append([]int64{0}, keeps...) {
			if from > 0 {
				suffixes++
			}
			var got keyClock
			for i := from; i < int64(len(evs)); i++ {
				ev := evs[i]
				if ok, err := got.restore(p, &ev); !ok || err != nil {
					t.Fatalf("seed %d: restore of decision %d: %v, %v", seed, i, ok, err)
				}
				if sn := evs[i].Snapshot; sn != nil {
					got.Toys.merge(sn.Keys[0].Toys)
					got.Boxes.merge(sn.Keys[0].Boxes)
				}
			}
			if !reflect.DeepEqual(got.Toys, live.Toys) || !reflect.DeepEqual(got.Boxes, live.Boxes) || !slices.Equal(got.Open, live.Open) {
				t.Fatalf("seed %d %+v, restored from decision %d of %d:\n got toys %+v boxes %+v open %+v\nwant toys %+v boxes %+v open %+v",
					seed, p, from, len(evs), got.Toys, got.Boxes, got.Open, live.Toys, live.Boxes, live.Open)
			}
			// Every decision again, as a table that holds some twice: none
			// is restored a second time.
			before := cloneClock(got)
			for i := from; i < int64(len(evs)); i++ {
				ev := evs[i]
				if ok, err := got.restore(p, &ev); ok || err != nil {
					t.Fatalf("seed %d: decision %d restored twice (%v)", seed, i, err)
				}
			}
			if !reflect.DeepEqual(cloneClock(got), before) {
				t.Fatalf("seed %d: restoring decisions again changed the clock", seed)
			}
		}
	}
	if suffixes == 0 {
		t.Error("no mark dropped a decision")
	}
}

// TestClockRestoreRefusesAnotherWindowWidth: a table written with another
// window width would restore windows that this packer's records never
// fall in; recovery fails and says what to do.
func TestClockRestoreRefusesAnotherWindowWidth(t *testing.T) {
	var kc keyClock
	kc.apply(paramsUS{WindowUS: 10, LatenessUS: 5}, cToy(0, 17, "a"))
	ev := *kc.Ev
	var got keyClock
	if ok, err := got.restore(paramsUS{WindowUS: 7, LatenessUS: 5}, &ev); ok || err == nil || !strings.Contains(err.Error(), "window width") {
		t.Fatalf("restore with another width: %v, %v", ok, err)
	}
	if !reflect.DeepEqual(got, keyClock{}) {
		t.Errorf("a refused decision changed the clock: %+v", got)
	}
}

// ----- randomized test against a naive transcription of the contract -----

type rankKey struct {
	stream record.Stream
	window int64
	id     string
}

type naiveOut struct {
	ranks   map[rankKey]int // item -> rank
	classes map[string]class
	// closeAt[window] = index (in the delivery sequence, first deliveries
	// only) of the event after which the window is closed; counts at that time.
	closedAt map[int64]int
	counts   map[int64][2]int
}

// naiveClock computes from the contract's definitions (version 2),
// record by record, ignoring the Dup flags it is given: prior_max, late,
// duplicate (an earlier non-heartbeat record of the same stream and window
// with the id; late is decided first), ranks, and when each window with
// items first has both watermarks at its end.
func naiveClock(p paramsUS, seq []validRecord) naiveOut {
	out := naiveOut{ranks: map[rankKey]int{}, classes: map[string]class{}, closedAt: map[int64]int{}, counts: map[int64][2]int{}}
	type sc struct {
		seen bool
		max  int64
	}
	clocks := map[record.Stream]*sc{record.Toys: {}, record.Boxes: {}}
	windows := map[int64]bool{}
	earlier := map[rankKey]bool{} // the non-heartbeat records so far, by (stream, window, id)
	for i, o := range seq {
		c := clocks[o.Stream]
		w := naiveFloor(p, o.MadeUS)
		var cl class
		switch {
		case o.Heartbeat:
			cl = classHeartbeat
		case c.seen && c.max-p.LatenessUS >= w+p.WindowUS:
			cl = classLate
		case earlier[rankKey{o.Stream, w, o.ID}]:
			cl = classDuplicate
		default:
			cl = classItem
			n := out.counts[w]
			si := 0
			if o.Stream == record.Boxes {
				si = 1
			}
			n[si]++
			out.counts[w] = n
			out.ranks[rankKey{o.Stream, w, o.ID}] = n[si]
			windows[w] = true
		}
		if !o.Heartbeat {
			earlier[rankKey{o.Stream, w, o.ID}] = true
		}
		out.classes[fmt.Sprintf("%s/%d", o.Stream, o.Offset)] = cl
		if !c.seen || o.MadeUS > c.max {
			c.max, c.seen = o.MadeUS, true
		}
		for w := range windows {
			if _, done := out.closedAt[w]; done {
				continue
			}
			ok := true
			for _, x := range []*sc{clocks[record.Toys], clocks[record.Boxes]} {
				if !x.seen || x.max-p.LatenessUS < w+p.WindowUS {
					ok = false
				}
			}
			if ok {
				out.closedAt[w] = i
			}
		}
	}
	return out
}

// naiveFloor is floor(t / W) * W by repeated steps: no shared arithmetic
// with windowStart.
func naiveFloor(p paramsUS, t int64) int64 {
	w := t / p.WindowUS * p.WindowUS
	for w > t {
		w -= p.WindowUS
	}
	return w
}

// randomClockInput is one size's records: toys and boxes in their own offset
// order, interleaved at random. Ids come from a small set, so they repeat
// within windows (duplicates) and across windows (new items); made_at
// wanders so that some records are late; some records are exact re-sends of
// an earlier one, which arrive while their window is open for their stream
// (duplicates) or after it closed (late); and some records are heartbeats.
// Dup flags are set by markDups.
func randomClockInput(r *rand.Rand, base int64) []validRecord {
	n := 1 + r.IntN(60)
	var seq []validRecord
	next := map[record.Stream]int64{}
	cursor := map[record.Stream]int64{record.Toys: base, record.Boxes: base + int64(r.IntN(30)) - 15}
	sent := map[record.Stream][]validRecord{}
	for range n {
		x := record.Toys
		if r.IntN(2) == 0 {
			x = record.Boxes
		}
		cursor[x] += int64(r.IntN(6))
		o := validRecord{Stream: x, Line: "M", Offset: next[x], MadeUS: cursor[x] + int64(r.IntN(20)) - 14}
		next[x] += 1 + int64(r.IntN(2)) // offsets need not be contiguous
		switch k := r.IntN(7); {
		case k == 0:
			o.Heartbeat = true
		case k == 1 && len(sent[x]) > 0:
			old := sent[x][r.IntN(len(sent[x]))]
			o.MadeUS, o.ID = old.MadeUS, old.ID
		default:
			o.ID = fmt.Sprintf("%c%d", x[0], r.IntN(25))
			sent[x] = append(sent[x], o)
		}
		seq = append(seq, o)
	}
	return seq
}

// markDups sets the Dup flag of each toy or box that an earlier one of its
// stream and window had the id of, late or not: admit looks ids up only
// for records that are not late, so apply must find lateness first
// whatever the flag says.
func markDups(p paramsUS, seq []validRecord) {
	seen := map[rankKey]bool{}
	for i := range seq {
		o := &seq[i]
		if o.Heartbeat {
			continue
		}
		k := rankKey{o.Stream, naiveFloor(p, o.MadeUS), o.ID}
		o.Dup = seen[k]
		seen[k] = true
	}
}

func TestClockApplyRandomMatchesDefinition(t *testing.T) {
	var cover clockCoverage
	defer cover.expect(t)
	for seed := range uint64(400) {
		r := rand.New(rand.NewPCG(seed, 7))
		p := paramsUS{WindowUS: 1 + int64(r.IntN(12)), LatenessUS: int64(r.IntN(10))}
		base := int64(r.IntN(200)) - 100 // before and after 1970
		seq := randomClockInput(r, base)
		markDups(p, seq)
		want := naiveClock(p, seq)
		cover.count(seq, want)

		var kc keyClock
		got := naiveOut{ranks: map[rankKey]int{}, classes: map[string]class{}, closedAt: map[int64]int{}, counts: map[int64][2]int{}}
		applied := map[record.Stream][]validRecord{}
		for i, o := range seq {
			// Redeliveries: sometimes replay a run of earlier events of a
			// stream, as a restart after a crash would.
			for _, x := range []record.Stream{record.Toys, record.Boxes} {
				if len(applied[x]) == 0 || r.IntN(4) != 0 {
					continue
				}
				from := r.IntN(len(applied[x]))
				for _, old := range applied[x][from:] {
					before := cloneClock(kc)
					if kc.apply(p, old) {
						t.Fatalf("seed %d: redelivery of %+v applied again", seed, old)
					}
					if !reflect.DeepEqual(kc, before) {
						t.Fatalf("seed %d: redelivery of %+v changed the state", seed, old)
					}
				}
			}
			if !kc.apply(p, o) {
				t.Fatalf("seed %d: first delivery of %+v refused", seed, o)
			}
			applied[o.Stream] = append(applied[o.Stream], o)
			ev := kc.Ev
			if ev.Rec.Offset != o.Offset || ev.Rec.Stream != o.Stream {
				t.Fatalf("seed %d: Ev is %+v, want the event of %+v", seed, ev.Rec, o)
			}
			got.classes[fmt.Sprintf("%s/%d", o.Stream, o.Offset)] = ev.Class
			if ev.Class == classItem {
				got.ranks[rankKey{o.Stream, ev.Window, o.ID}] = ev.Rank
			} else if ev.Rank != 0 {
				t.Errorf("seed %d: %+v is %s but has rank %d", seed, o, ev.Class, ev.Rank)
			}
			for j, c := range ev.Closed {
				if j > 0 && ev.Closed[j-1].Start >= c.Start {
					t.Errorf("seed %d: closed windows not in start order: %+v", seed, ev.Closed)
				}
				if _, dup := got.closedAt[c.Start]; dup {
					t.Errorf("seed %d: window %d closed twice", seed, c.Start)
				}
				got.closedAt[c.Start] = i
				got.counts[c.Start] = [2]int{c.Toys, c.Boxes}
			}
		}
		if !reflect.DeepEqual(got.classes, want.classes) {
			t.Fatalf("seed %d %+v: classes\n got %v\nwant %v", seed, p, got.classes, want.classes)
		}
		if !reflect.DeepEqual(got.ranks, want.ranks) {
			t.Fatalf("seed %d %+v: ranks\n got %v\nwant %v", seed, p, got.ranks, want.ranks)
		}
		if !reflect.DeepEqual(got.closedAt, want.closedAt) {
			t.Fatalf("seed %d %+v: closing times\n got %v\nwant %v", seed, p, got.closedAt, want.closedAt)
		}
		for w, c := range got.counts {
			if want.counts[w] != c {
				t.Errorf("seed %d: window %d closed with counts %v, final counts are %v", seed, w, c, want.counts[w])
			}
		}
		// What is still open is exactly the windows with items not closed.
		var open []openWindow
		for w, n := range want.counts {
			if _, closed := want.closedAt[w]; !closed {
				open = append(open, openWindow{Start: w, Toys: n[0], Boxes: n[1]})
			}
		}
		slices.SortFunc(open, func(a, b openWindow) int { return int(a.Start - b.Start) })
		if !slices.Equal(kc.Open, open) {
			t.Fatalf("seed %d: Open = %+v, want %+v", seed, kc.Open, open)
		}
	}
}

// TestClockApplyRandomMatchesContract derives packed, unpacked (closed windows
// only), spare, late and duplicate rows from apply's decisions and compares
// them with the batch reference implementation, internal/contract, with
// ClosedOnly: an independent check of the whole clock, given the duplicate
// flags of markDups (the storage's dedupe entries are checked against the
// reference by TestCallbackPipelineMatchesContract and
// TestHorizonRestartFromSuffix).
func TestClockApplyRandomMatchesContract(t *testing.T) {
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 11))
		W := time.Duration(1+r.IntN(12)) * time.Second
		L := time.Duration(r.IntN(10)) * time.Second
		p := paramsUS{WindowUS: W.Microseconds(), LatenessUS: L.Microseconds()}
		base := time.Date(1969, 12, 31, 23, 59, 0, 0, time.UTC).Add(time.Duration(r.IntN(120)) * time.Second)
		seq := randomClockInput(r, 0)

		// Each second of the generator's gets microseconds of its own, the
		// same for a re-send as for its original.
		frac := map[[2]int64]int64{}
		var inputs []record.Input
		for i := range seq {
			o := &seq[i]
			k := [2]int64{o.MadeUS, int64(len(o.ID))}
			if _, ok := frac[k]; !ok || o.Heartbeat {
				frac[k] = int64(r.IntN(1_000_000))
			}
			o.MadeUS = base.UnixMicro() + o.MadeUS*1_000_000 + frac[k]
			made := record.FormatTime(time.UnixMicro(o.MadeUS))
			var v string
			switch {
			case o.Heartbeat:
				v = fmt.Sprintf(`{"heartbeat":true,"size":"M","made_at":%q}`, made)
			default:
				v = fmt.Sprintf(`{%q:%q,"size":"M","made_at":%q}`, o.Stream.IDField(), o.ID, made)
			}
			inputs = append(inputs, record.Input{Stream: o.Stream, Partition: 0, Offset: o.Offset, Key: []byte("M"), Value: []byte(v)})
		}
		markDups(p, seq)
		want := contract.Compute(inputs, contract.Params{Window: W, Lateness: L}, contract.ClosedOnly)

		var kc keyClock
		var got results.Set
		byRank := map[string]string{} // "stream/window/rank" -> id
		closed := map[int64]closedWindow{}
		for _, o := range seq {
			if !kc.apply(p, o) {
				t.Fatalf("seed %d: %+v refused", seed, o)
			}
			ev := kc.Ev
			switch ev.Class {
			case classItem:
				byRank[fmt.Sprintf("%s/%d/%d", o.Stream, ev.Window, ev.Rank)] = o.ID
			case classLate:
				got.Late = append(got.Late, results.Late{Stream: string(o.Stream), Partition: o.Partition, Offset: o.Offset, ID: o.ID, Line: "M", Size: "M", MadeAt: o.madeAt()})
			case classDuplicate:
				got.Dead = append(got.Dead, results.Dead{Stream: string(o.Stream), Offset: o.Offset, Reason: string(record.ReasonDuplicate)})
			}
			for _, c := range ev.Closed {
				closed[c.Start] = c
			}
		}
		windows := map[int64]bool{}
		for _, w := range kc.Open {
			windows[w.Start] = true
		}
		for w := range closed {
			windows[w] = true
		}
		for w := range windows {
			ws := record.FormatMicros(w)
			for k := 1; ; k++ {
				toy, okT := byRank[fmt.Sprintf("toys/%d/%d", w, k)]
				box, okB := byRank[fmt.Sprintf("boxes/%d/%d", w, k)]
				if !okT && !okB {
					break
				}
				c, isClosed := closed[w]
				switch {
				case okT && okB:
					got.Packed = append(got.Packed, results.Packed{ToyID: toy, BoxID: box, Line: "M", Size: "M", WindowStart: ws})
				case okT && isClosed:
					if k <= c.Boxes || k > c.Toys {
						t.Errorf("seed %d: toy rank %d outside the closed counts %+v", seed, k, c)
					}
					got.Unpacked = append(got.Unpacked, results.Unpacked{ToyID: toy, Line: "M", Size: "M", WindowStart: ws})
				case okB && isClosed:
					if k <= c.Toys || k > c.Boxes {
						t.Errorf("seed %d: box rank %d outside the closed counts %+v", seed, k, c)
					}
					got.Spare = append(got.Spare, results.Spare{BoxID: box, Line: "M", Size: "M", WindowStart: ws})
				}
			}
		}
		got.Sort()
		if d := diffSets(got, want); d != "" {
			t.Fatalf("seed %d W=%v L=%v: clock differs from the contract:\n%s", seed, W, L, d)
		}
	}
}

// clockCoverage counts, over the random runs, the cases the v2 contract
// changed, so that a generator that stops making them fails the test.
type clockCoverage struct {
	reusedAcrossWindows int // an id that is an item of two windows of its stream
	resentLate          int // a re-sent record (same stream, made_at, id) that is late
	resentDup           int // ... that is a duplicate
	lateFlaggedDup      int // a late record that an earlier one of its window had the id of
}

func (c *clockCoverage) count(seq []validRecord, out naiveOut) {
	windows := map[string]map[int64]bool{}
	for k := range out.ranks {
		id := string(k.stream) + "/" + k.id
		if windows[id] == nil {
			windows[id] = map[int64]bool{}
		}
		windows[id][k.window] = true
	}
	for _, ws := range windows {
		if len(ws) > 1 {
			c.reusedAcrossWindows++
		}
	}
	type sent struct {
		x    record.Stream
		made int64
		id   string
	}
	seen := map[sent]bool{}
	for _, o := range seq {
		if o.Heartbeat {
			continue
		}
		k := sent{o.Stream, o.MadeUS, o.ID}
		cl := out.classes[fmt.Sprintf("%s/%d", o.Stream, o.Offset)]
		if seen[k] && cl == classLate {
			c.resentLate++
		}
		if seen[k] && cl == classDuplicate {
			c.resentDup++
		}
		if o.Dup && cl == classLate {
			c.lateFlaggedDup++
		}
		seen[k] = true
	}
}

func (c *clockCoverage) expect(t *testing.T) {
	t.Helper()
	if c.reusedAcrossWindows == 0 || c.resentLate == 0 || c.resentDup == 0 || c.lateFlaggedDup == 0 {
		t.Errorf("the random inputs miss a case: %+v", *c)
	}
}

func diffSets(got, want results.Set) string {
	var out string
	check := func(name string, g, w any) {
		if !reflect.DeepEqual(g, w) {
			out += fmt.Sprintf("%s:\n got %+v\nwant %+v\n", name, g, w)
		}
	}
	norm := func(s *results.Set) {
		if len(s.Packed) == 0 {
			s.Packed = nil
		}
		if len(s.Unpacked) == 0 {
			s.Unpacked = nil
		}
		if len(s.Spare) == 0 {
			s.Spare = nil
		}
		if len(s.Late) == 0 {
			s.Late = nil
		}
		if len(s.Dead) == 0 {
			s.Dead = nil
		}
	}
	norm(&got)
	norm(&want)
	check("packed", got.Packed, want.Packed)
	check("unpacked", got.Unpacked, want.Unpacked)
	check("spare", got.Spare, want.Spare)
	check("late", got.Late, want.Late)
	check("dead", got.Dead, want.Dead)
	return out
}

// BenchmarkClockEvent is the clock stage's own work for one toy, with n
// windows open, as its callback does it: apply the toy to the size's state
// and encode the decision, the table's value. Windows stay open while one
// stream is ahead of the other in event time (the boxes here have not passed
// the first window), so n grows with that lead divided by W; neither the
// work nor the value written grows with it.
func BenchmarkClockEvent(b *testing.B) {
	p := paramsUS{WindowUS: 10_000_000, LatenessUS: 5_000_000}
	codec := binCodec[decision, *decision]{}
	// Real times: window starts of this century take 8 bytes as varints.
	t0 := time.Date(2026, 12, 24, 0, 0, 0, 0, time.UTC).UnixMicro()
	for _, n := range []int{1, 10, 100, 1000} {
		b.Run(fmt.Sprintf("open=%d", n), func(b *testing.B) {
			kc := &keyClock{}
			kc.apply(p, validRecord{Stream: record.Boxes, Line: "M", Offset: 0, MadeUS: t0, ID: "b0"})
			for i := range n {
				kc.apply(p, validRecord{Stream: record.Toys, Line: "M", Offset: int64(i), MadeUS: t0 + int64(i)*p.WindowUS, ID: "t"})
			}
			if len(kc.Open) != n {
				b.Fatalf("%d windows open, want %d", len(kc.Open), n)
			}
			last := t0 + int64(n-1)*p.WindowUS // the newest open window: it stays open
			off := int64(n)
			var enc []byte
			for b.Loop() {
				if !kc.apply(p, validRecord{Stream: record.Toys, Line: "M", Offset: off, MadeUS: last, ID: "t"}) {
					b.Fatal("not applied")
				}
				var err error
				if enc, err = codec.Encode(kc.Ev); err != nil {
					b.Fatal(err)
				}
				off++
			}
			b.ReportMetric(float64(len(enc)), "value-bytes")
		})
	}
}

package packer

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/record"
)

// hd is a decision as the horizon sees it: its size, stream, source
// partition, class and window (in units of 10), and the windows it closed.
func hd(size string, x record.Stream, part int32, cl class, window int64, closed ...int64) *decision {
	ev := &decision{Rec: validRecord{Stream: x, Partition: part, Line: size}, Class: cl, Window: window * 10}
	for _, c := range closed {
		ev.Closed = append(ev.Closed, closedWindow{Start: c * 10, Toys: 1})
	}
	return ev
}

// observeDecision has h observe the decision ev at offset.
func observeDecision(h *horizon, offset int64, ev *decision) {
	f := factOf(ev)
	h.observe(offset, &f)
}

// upTo is the committed offsets of the inputs after every record of toys
// below offset: a table whose decision i answers toy i.
func upTo(offset int64) [nInputs]int64 { return [nInputs]int64{inToys: offset} }

// piece makes ev carry a piece of walk id (its keys do not matter to the
// horizon).
func piece(ev *decision, id uint64, first, last bool) *decision {
	ev.Snapshot = &snapshot{Walk: id, First: first, Last: last}
	return ev
}

// TestHorizonMarkKeep: a mark keeps the first item of every window still
// open and the first piece of the last complete walk over the lines' clocks,
// and nothing else; before a walk is complete, it keeps everything.
func TestHorizonMarkKeep(t *testing.T) {
	const T, B = record.Toys, record.Boxes
	hb := func(x record.Stream) *decision { return hd("M", x, 0, classHeartbeat, 0) }
	for _, c := range []struct {
		name string
		evs  []*decision // at offsets 0, 1, ...
		keep int64       // of a mark at the last offset
	}{
		{"without a walk everything is kept", []*decision{hb(T), hb(B), hb(T)}, 0},
		{"a walk of one piece keeps itself on", []*decision{hb(T), hb(B), piece(hb(T), 1, true, true), hb(B)}, 2},
		{"a walk in pieces keeps its first piece", []*decision{
			hb(T), piece(hb(B), 1, true, false), hb(T), piece(hb(T), 1, false, false), piece(hb(B), 1, false, true), hb(T),
		}, 1},
		{"a walk not yet complete keeps the last complete one", []*decision{
			piece(hb(T), 1, true, true), hb(B), piece(hb(T), 2, true, false), hb(B), piece(hb(T), 2, false, false),
		}, 0},
		{"a walk cut short completes nothing", []*decision{
			piece(hb(T), 1, true, true), piece(hb(B), 2, true, false), piece(hb(T), 3, true, false), piece(hb(T), 2, false, true), hb(B),
		}, 0},
		{"the walk after a cut-short one", []*decision{
			piece(hb(T), 2, true, false), piece(hb(T), 3, true, false), hb(B), piece(hb(T), 3, false, true), hb(B),
		}, 1},
		{"an open window keeps its first item", []*decision{
			hd("M", T, 0, classHeartbeat, 0), hd("M", T, 0, classItem, 1), hd("M", B, 0, classItem, 1), hd("M", T, 0, classItem, 1),
			piece(hd("M", B, 0, classHeartbeat, 0), 1, true, true), hd("M", T, 0, classHeartbeat, 0),
		}, 1},
		{"its closing releases it", []*decision{
			hd("M", T, 0, classHeartbeat, 0), hd("M", T, 0, classItem, 1), hd("M", B, 0, classItem, 1), piece(hd("M", T, 0, classItem, 2), 1, true, true),
			hd("M", B, 0, classHeartbeat, 3, 1), hd("M", T, 0, classHeartbeat, 3),
		}, 3},
		{"late records and duplicates open no window", []*decision{
			hd("M", T, 0, classLate, 1), hd("M", T, 0, classDuplicate, 2), hd("M", B, 0, classLate, 1), piece(hd("M", B, 0, classHeartbeat, 9), 1, true, true),
			hd("M", T, 0, classHeartbeat, 9),
		}, 3},
		{"a window of one line is not another's", []*decision{
			hd("S", T, 0, classItem, 1), hd("M", T, 0, classItem, 1), hd("M", B, 0, classItem, 1), hd("S", B, 0, classHeartbeat, 5, 1),
			piece(hd("S", T, 0, classHeartbeat, 5), 1, true, true), hd("M", T, 0, classHeartbeat, 0),
		}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHorizon()
			for i, ev := range c.evs {
				observeDecision(h, int64(i), ev)
			}
			last := int64(len(c.evs) - 1)
			h.mark(last)
			if got := h.marks[len(h.marks)-1]; got.at != last || got.keep != c.keep {
				t.Errorf("mark %+v, want keep %d at %d", got, c.keep, last)
			}
		})
	}
}

// TestHorizonObserveOnce: an offset the horizon followed already (the
// recovery read a write whose acknowledgement comes after) counts once.
func TestHorizonObserveOnce(t *testing.T) {
	h := newHorizon()
	evs := []*decision{hd("M", record.Toys, 0, classItem, 1), piece(hd("M", record.Boxes, 0, classHeartbeat, 5), 1, true, true), hd("M", record.Toys, 0, classHeartbeat, 5, 1)}
	for i, ev := range evs {
		observeDecision(h, int64(i), ev)
	}
	count, opened, lines := h.count, maps.Clone(h.opened), h.lines
	for i, ev := range evs {
		observeDecision(h, int64(i), ev)
	}
	// An item of the closed window at an old offset would open it again.
	observeDecision(h, 1, hd("M", record.Toys, 0, classItem, 1))
	if h.count != count || !maps.Equal(h.opened, opened) || h.lines != lines || h.next != 3 {
		t.Errorf("observing old offsets again changed the horizon: count %d opened %v lines %d next %d", h.count, h.opened, h.lines, h.next)
	}
	// The records from the next offset on count, and a mark is taken at the
	// closing (offset 2) and every horizonEvery decisions.
	for off := int64(3); off < 3*horizonEvery; off++ {
		observeDecision(h, off, hd("M", record.Toys, 0, classHeartbeat, 5))
		observeDecision(h, off, hd("M", record.Toys, 0, classHeartbeat, 5))
	}
	want := []horizonMark{{at: 2, keep: 1}, {at: horizonEvery - 1, keep: 1}, {at: 2*horizonEvery - 1, keep: 1}, {at: 3*horizonEvery - 1, keep: 1}}
	for i := range want {
		want[i].pos = upTo(1) // every decision answers toy 0 or box 0
		want[i].pos[inBoxes] = 1
	}
	if !slices.Equal(h.marks, want) {
		t.Errorf("marks %+v, want %+v", h.marks, want)
	}
}

// TestHorizonDeletable: the cleaner may delete below the keep of the last
// mark whose decisions' records the group has committed (a table here whose
// decision i answers toy i), never one of a mark with a record after the
// committed offset: the group may process that record again, and replay
// its decision. What it deleted is not offered again.
func TestHorizonDeletable(t *testing.T) {
	h := newHorizon()
	h.marks = []horizonMark{{at: 10, keep: 5, pos: upTo(11)}, {at: 20, keep: 8, pos: upTo(21)}, {at: 30, keep: 8, pos: upTo(31)}, {at: 40, keep: 15, pos: upTo(41)}}
	for i, s := range []struct {
		committed int64
		deleted   int64 // the cleaner deleted below it, after this step; 0: nothing
		want      int64
	}{
		{0, 0, 0},
		{10, 0, 0}, // the record of the first mark may be processed again
		{11, 5, 5},
		{11, 0, 0}, // deleted already
		{25, 0, 8}, // a later mark
		{31, 8, 8}, // the deletion failed: offered again, from the mark after
		{31, 0, 0}, // deleted already
		{30, 0, 0}, // a committed offset behind the last mark used
		{1000, 0, 15},
		{1000, 15, 15},
		{1001, 0, 0}, // no newer mark
	} {
		if got := h.deletable(upTo(s.committed)); got != s.want {
			t.Errorf("step %d: deletable(%d) = %d, want %d (marks %+v, gone %d)", i, s.committed, got, s.want, h.marks, h.gone)
		}
		if s.deleted > 0 {
			h.deleted(s.deleted)
		}
	}
	if len(h.marks) != 1 || h.marks[0].at != 40 {
		t.Errorf("marks kept %+v, want only the last one used", h.marks)
	}
	// A low watermark that moved back (a deletion below what was gone) is
	// ignored.
	h.deleted(3)
	if h.gone != 15 {
		t.Errorf("gone %d after a smaller deletion, want 15", h.gone)
	}
}

// TestHorizonMarksNeverDecrease: over a long random run through the
// group, a mark taken after every decision never keeps less than the one
// before, keeps no more than its own offset, and the cleaner is only
// offered offsets that grow and that a mark whose records are committed
// allowed; the partition's own horizon, fed by the acknowledgements, takes
// a mark at least every horizonEvery decisions (and at each closing), each
// equal to the one a horizon over the table gives.
func TestHorizonMarksNeverDecrease(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	base := time.Date(2026, 12, 24, 0, 0, 0, 0, time.UTC)
	u := newUnitPipeline(t)
	inputs := randomInputs(r, 6000, base)
	for _, in := range append(inputs, finalHeartbeats(inputs, base)...) {
		u.send(in.x, in.key, in.value)
	}
	h := newHorizon()
	var every []horizonMark
	for _, rec := range u.table {
		observeDecision(h, rec.offset, decodeDecision(t, rec.value))
		h.mark(rec.offset)
		m := h.marks[len(h.marks)-1]
		if m.keep > m.at {
			t.Fatalf("mark %+v keeps more than its own offset", m)
		}
		if len(every) > 0 && (m.keep < every[len(every)-1].keep || m.at <= every[len(every)-1].at) {
			t.Fatalf("mark %+v after %+v", m, every[len(every)-1])
		}
		every = append(every, m)
	}
	// Every window is closed: the last mark keeps the last complete walk
	// over the lines' clocks, which began within a few pieces' cadence.
	if last := every[len(every)-1]; last.keep != h.lines || last.keep < int64(len(u.table))-4*snapshotEvery {
		t.Errorf("the last mark %+v, after the final heartbeats, keeps more than the last complete walk (from %d of %d)", last, h.lines, len(u.table))
	}
	natural := u.clockPart().horizon.marks
	if len(natural) < len(u.table)/horizonEvery {
		t.Fatalf("%d marks for %d decisions: fewer than one every %d", len(natural), len(u.table), horizonEvery)
	}
	for _, m := range natural {
		if m != every[m.at] {
			t.Errorf("the partition's mark %+v, a horizon over the table %+v", m, every[m.at])
		}
	}
	// The group commits its inputs up to the records of the decisions
	// before table offset committed.
	var prev int64
	for committed := int64(0); committed <= int64(len(u.table)); committed += int64(r.IntN(900)) {
		var inputs [nInputs]int64
		if committed > 0 {
			inputs = every[committed-1].pos
		}
		got := u.clockPart().horizon.deletable(inputs)
		if got == 0 {
			continue
		}
		var allowed int64
		for _, m := range natural {
			if m.at < committed {
				allowed = m.keep
			}
		}
		if got != allowed || got <= prev {
			t.Errorf("deletable(%d) = %d, after %d; the last mark before it keeps %d", committed, got, prev, allowed)
		}
		u.clockPart().horizon.deleted(got)
		prev = got
	}
	if prev == 0 {
		t.Errorf("nothing was ever deletable")
	}
}

// TestHorizonRestartFromSuffix is the safety of the table's truncation: a
// restart from the records a mark keeps gives the clocks, dedupe entries
// and slots of the live packer; the group, resuming its inputs at any
// offsets committed after the mark, writes the rows the live one wrote from
// there on; and
// both packers then decide and write the same for the records that follow.
func TestHorizonRestartFromSuffix(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 21))
			base := time.Date(2026, 12, 24, 0, 0, 0, 0, time.UTC)
			if seed == 1 {
				base = time.Date(1969, 12, 31, 23, 0, 0, 0, time.UTC)
			}
			edit := func(c *Config) {}
			if seed == 2 {
				edit = func(c *Config) { c.Window, c.Lateness = 3*time.Second, 0 }
			}
			live := newUnitPipeline(t, edit)
			inputs := randomInputs(r, 4000, base)
			split := 3000
			for _, in := range inputs[:split] {
				live.send(in.x, in.key, in.value)
			}
			recs := slices.Clone(live.table)
			end := int64(len(recs))
			liveRows := slices.Clone(live.rows)
			h := newHorizon()
			for i, rec := range recs {
				observeDecision(h, rec.offset, decodeDecision(t, rec.value))
				if i%97 == 96 || i == len(recs)-1 {
					h.mark(rec.offset)
				}
			}
			if last := h.marks[len(h.marks)-1]; last.keep < end/2 {
				t.Fatalf("the last mark %+v drops less than half of %d records: a weak run", last, end)
			}
			for i, m := range h.marks {
				if i%4 != 0 && i != len(h.marks)-1 {
					continue
				}
				what := fmt.Sprintf("restart from offset %d of %d (mark at %d)", m.keep, end, m.at)
				suffix := recs[m.keep:]

				// The group resumes at the offsets it committed, past the
				// records of the decisions up to the mark: the decisions
				// after the records committed are replays, and what the
				// restarted group writes for the records delivered again
				// is what the live group wrote for them.
				committed := m.at + 1 + r.Int64N(end-m.at)
				var at [nInputs]int64
				if committed > 0 {
					at = posAt(t, recs, committed-1)
				}
				re := startUnit(t, live.cfg, suffix, at)
				re.next = map[record.Stream]int64{record.Toys: at[inToys], record.Boxes: at[inBoxes]}
				sent := map[record.Stream]int64{}
				for _, in := range inputs[:split] {
					if sent[in.x] >= at[streamIndex(in.x)] {
						re.send(in.x, in.key, in.value)
					}
					sent[in.x]++
				}
				want := rowsByKey(t, liveRows, live.cfg, at)
				if got := rowsByKey(t, re.rows, live.cfg, at); !reflect.DeepEqual(got, want) {
					t.Errorf("%s, resuming at %v: rows differ:\n got %v\nwant %v", what, at, got, want)
				}
				if n := len(re.clockPart().replays); n != 0 {
					t.Errorf("%s: %d replays left after every record came again", what, n)
				}
				expectSameClocks(t, what, live, re)
				expectSameSlots(t, what+", after processing to the end", live, re)

				// Resuming at the end, both go on alike.
				re = startUnit(t, live.cfg, suffix, live.committed())
				re.next = maps.Clone(live.next)
				expectSameSlots(t, what, live, re)
				// The recovery observed the suffix and marked at its end: a
				// mark that bounds the table as one over the whole table does.
				if got, want := re.clockPart().horizon.marks[len(re.clockPart().horizon.marks)-1], h.marks[len(h.marks)-1]; got != want {
					t.Errorf("%s: a mark of the restarted group %+v, want %+v", what, got, want)
				}
				if i != len(h.marks)-1 {
					continue
				}
				live.rows = nil
				for _, in := range inputs[split:] {
					live.send(in.x, in.key, in.value)
					re.send(in.x, in.key, in.value)
				}
				// The restarted clock walks its lines anew: its pieces differ,
				// its decisions do not.
				if !slices.EqualFunc(re.table[end:], live.table[end:], func(a, b tableRecord) bool {
					da, db := decodeDecision(t, a.value), decodeDecision(t, b.value)
					da.Snapshot, db.Snapshot = nil, nil
					return a.offset == b.offset && a.key == b.key && reflect.DeepEqual(da, db)
				}) {
					t.Errorf("%s: the decisions that follow differ", what)
				}
				if got, want := rowList(t, re.rows), rowList(t, live.rows); !slices.Equal(got, want) {
					t.Errorf("%s: the rows that follow differ:\n got %q\nwant %q", what, got, want)
				}
				expectSameClocks(t, what+", then more records", live, re)
				expectSameSlots(t, what+", then more records", live, re)
				// The restarted group's horizon, built from the suffix, bounds
				// the table as one over the whole table does: it can be
				// truncated again, and again safely.
				full := newHorizon()
				var keeps []int64
				for _, rec := range live.table {
					observeDecision(full, rec.offset, decodeDecision(t, rec.value))
					full.mark(rec.offset)
					keeps = append(keeps, full.marks[len(full.marks)-1].keep)
				}
				re.clockPart().horizon.mark(int64(len(live.table) - 1))
				for _, m := range re.clockPart().horizon.marks {
					if m.keep != keeps[m.at] {
						t.Errorf("%s: the restarted group's mark %+v, a horizon over the whole table keeps %d", what, m, keeps[m.at])
					}
				}
			}
		})
	}
}

// TestHorizonRestartKeepsTheGreatestMadeAt: the record that holds a
// stream's greatest made_at can be older than everything a restart needs
// (a heartbeat far ahead, then items of a window still open behind it):
// the decisions kept carry that made_at (decision.Max), so the restarted
// clock has the live watermark.
func TestHorizonRestartKeepsTheGreatestMadeAt(t *testing.T) {
	u := newUnitPipeline(t)
	u.heartbeat(record.Toys, "M", at("00:01:40"))
	u.heartbeat(record.Boxes, "M", at("00:01:40"))
	for i, made := range []string{"00:01:36", "00:01:37", "00:01:38", "00:01:39"} {
		u.toy(fmt.Sprint("t", i), "M", at(made))
		u.box(fmt.Sprint("b", i), "M", at(made))
	}
	// Up to the next toy that carries a piece of a walk, which completes
	// it (one line): the lines' clocks need nothing before it.
	for range snapshotEvery - 4 {
		u.heartbeat(record.Toys, "M", at("00:01:40"))
	}
	h := newHorizon()
	for _, rec := range u.table {
		observeDecision(h, rec.offset, decodeDecision(t, rec.value))
	}
	h.mark(int64(len(u.table) - 1))
	keep := h.marks[0].keep
	if keep != 2 {
		t.Fatalf("mark %+v, want one that drops the two heartbeats", h.marks[0])
	}
	re := startUnit(t, u.cfg, u.table[keep:], u.committed())
	expectSameClocks(t, "restart without the heartbeats", u, re)
	if got, want := re.clockPart().keyClocks["M"].Toys.Max, micros("00:01:40"); got != want {
		t.Errorf("restarted toys' greatest made_at %d, want %d", got, want)
	}
}

// rowsByKey are the rows written while the group processed the input
// records from offsets from on, by topic and key, with their JSON; a key
// written with two values fails the test.
func rowsByKey(t testing.TB, rows []unitRow, c Config, from [nInputs]int64) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, r := range rows {
		in := inToys
		if r.input == c.Topics.Boxes {
			in = inBoxes
		}
		if r.offset < from[in] {
			continue
		}
		j, err := json.Marshal(r.val)
		if err != nil {
			t.Fatal(err)
		}
		k := r.topic + " " + r.key
		if prev, ok := out[k]; ok && prev != string(j) {
			t.Errorf("%s written as %s and as %s", k, prev, j)
		}
		out[k] = string(j)
	}
	return out
}

// rowList is rows as text, in order.
func rowList(t testing.TB, rows []unitRow) []string {
	t.Helper()
	var out []string
	for _, r := range rows {
		j, err := json.Marshal(r.val)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s@%d %s %s %s", r.input, r.offset, r.topic, r.key, j))
	}
	return out
}

// TestHorizonQuietSizeDoesNotPinTheTable: a size whose elves stopped (their
// final heartbeats closed its every window) needs nothing of the table any
// more but its last decisions, and the other sizes go on: what the table
// keeps must stay about the records of the open windows, not grow with
// every record processed since that size went quiet (contract, "State is
// bounded by what is still open"). The snapshots of the partition's clocks
// that decisions carry now and then release the quiet size's last
// decisions: DeleteRecords can only delete a prefix.
func TestHorizonQuietSizeDoesNotPinTheTable(t *testing.T) {
	u := newUnitPipeline(t)
	u.toy("s", "S", at("00:00:01"))
	u.box("s", "S", at("00:00:01"))
	u.heartbeat(record.Toys, "S", at("00:01:00"))
	u.heartbeat(record.Boxes, "S", at("00:01:00"))
	start := time.Date(2026, 12, 24, 0, 1, 0, 0, time.UTC)
	for i := range 5 * horizonEvery {
		made := record.FormatTime(start.Add(time.Duration(i) * 100 * time.Millisecond))
		u.toy(fmt.Sprint("t", i), "M", made)
		u.box(fmt.Sprint("b", i), "M", made)
	}
	// M's open windows are its last W + L: 300 records.
	keep := u.clockPart().horizon.deletable(u.committed())
	if need := int64(len(u.table)) - 4*horizonEvery; keep < need {
		t.Errorf("after %d decisions the cleaner may delete below %d only; the open windows need nothing below %d", len(u.table), keep, need)
	}
}

// TestHorizonNotKeptWithoutCleaning: with cleaning off (CleanEvery 0) no
// cleaner ever trims the marks that a horizon takes at every window closing
// and every horizonEvery decisions, so the partitions must not keep one:
// memory would grow with every decision.
func TestHorizonNotKeptWithoutCleaning(t *testing.T) {
	u := newUnitPipeline(t, func(c *Config) { c.CleanEvery = 0 })
	start := time.Date(2026, 12, 24, 0, 1, 0, 0, time.UTC)
	for i := range 3 * horizonEvery {
		made := record.FormatTime(start.Add(time.Duration(i) * 100 * time.Millisecond))
		u.toy(fmt.Sprint("t", i), "M", made)
		u.box(fmt.Sprint("b", i), "M", made)
	}
	for part, h := range u.pk.clockStores.horizons() {
		t.Errorf("partition %d keeps a horizon with %d marks and %d window offsets after %d decisions, with nothing to trim them",
			part, len(h.marks), len(h.firsts), len(u.table))
	}
}

// posAt is where the inputs are after the record of the decision at
// offset of recs: what the group commits once it processed them.
func posAt(t testing.TB, recs []tableRecord, offset int64) [nInputs]int64 {
	t.Helper()
	var pos [nInputs]int64
	for _, r := range recs[:offset+1] {
		in, off := deliveredBy(&decodeDecision(t, r.value).Rec)
		pos[in] = max(pos[in], off+1)
	}
	return pos
}

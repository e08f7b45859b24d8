package packer

// These tests run the packer's goka group in goka's tester
// (github.com/lovoo/goka/tester). What the tester does, as found by reading
// it and by these tests:
//
//   - SetValue writes the group table's changelog into the tester's queue for
//     "<group>-table", which nothing consumes. Loopbacks go to "<group>-loop",
//     which the group consumes. tt.Consume returns only when the group has
//     consumed every queued message, so after one Consume the whole callback
//     (observe, admit, clock and slots) has run, the loop's hop included.
//   - Every topic has one partition (partition 0), and each topic's offsets
//     are assigned by the tester, 0, 1, 2, ... in Consume order. The hasher is
//     therefore not exercised, and a record cannot be delivered twice at the
//     same offset through tt.Consume. Redeliveries are simulated by consuming
//     a crafted *validRecord (with the offset of an earlier record) into
//     "packer-clock-loop", where the clock group takes a record it was
//     handed by another partition.
//   - The group table's storage is the tester's, and the one the callbacks
//     set the values at other keys in (the dedupe entries, the slots). The
//     tester recovers no table: expectRecovered does what a restart does,
//     through recoverClock.
//   - No crash, rebalance or table recovery with partial state can be
//     simulated; those are for the integration tests against a broker.
//   - tt.Consume(topic, key, nil) delivers a null value, as Kafka does for a
//     tombstone; that is how TestCallbackNullValueIsDeadLetter found that goka
//     drops such records before the input callback (NilIgnore).
//
// The processors are built with Run's own options followed by
// goka.WithTester, which replaces every Kafka builder, so option choices made
// in run.go (hasher, nil handling, ...) are what these tests run.

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/storage"
	"github.com/lovoo/goka/tester"
	"go.opentelemetry.io/otel/trace"

	"github.com/northpole-workshop/northpole/internal/contract"
	"github.com/northpole-workshop/northpole/internal/gokakit"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
	"github.com/northpole-workshop/northpole/internal/testsupport/gokatest"
)

type testerPipeline struct {
	t   testing.TB
	tt  *tester.Tester
	pk  *Packer
	cfg Config
	// trackers of every topic the tests look at
	dead, packed, unpacked, spare, late *tester.QueueTracker
	clockLoop, clockTab                 *tester.QueueTracker
}

func newTesterPipeline(t testing.TB) *testerPipeline {
	t.Helper()
	return newTracedTesterPipeline(t, nil)
}

// newTracedTesterPipeline is newTesterPipeline with the packer traced by
// tracer (Config.Tracer).
func newTracedTesterPipeline(t testing.TB, tracer trace.TracerProvider) *testerPipeline {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Kafka.Brokers = []string{"unused:9092"}
	cfg.Tracer = tracer
	pk, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	tt := tester.New(t)
	quiet := gokakit.Logger(slog.New(slog.DiscardHandler))
	// The processor gets Run's own options (hasher, and whatever else Run
	// sets), then the tester, which replaces every builder that would
	// reach Kafka, and a quiet logger. The tester's storage is wrapped as
	// Run wraps its own.
	opts, _ := pk.options()
	opts = append(opts, goka.WithTester(tt), goka.WithLogger(quiet),
		goka.WithStorageBuilder(pk.storageBuilder(tt.StorageBuilder())))
	proc, err := goka.NewProcessor(nil, pk.Graph(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	gokatest.Run(t, proc)
	p := &testerPipeline{t: t, tt: tt, pk: pk, cfg: cfg}
	tp := cfg.Topics
	p.dead = tt.NewQueueTracker(tp.Dead)
	p.packed = tt.NewQueueTracker(tp.Packed)
	p.unpacked = tt.NewQueueTracker(tp.Unpacked)
	p.spare = tt.NewQueueTracker(tp.Spare)
	p.late = tt.NewQueueTracker(tp.Late)
	p.clockLoop = tt.NewQueueTracker(cfg.clockGroup() + "-loop")
	p.clockTab = tt.NewQueueTracker(string(goka.GroupTable(goka.Group(cfg.clockGroup()))))
	return p
}

// keyClock is the clock of key, with the decision of its last event.
func (p *testerPipeline) keyClock(t *testing.T, key string) *keyClock {
	t.Helper()
	kc, ok := p.pk.clockStores.parts()[0].keyClocks[key]
	if !ok {
		t.Fatalf("no clock of key %s", key)
	}
	return kc
}

// hasEntry reports whether the clock of size lists the dedupe entry of
// (stream, window, id).
func (p *testerPipeline) hasEntry(t *testing.T, x record.Stream, size string, window int64, id string) bool {
	t.Helper()
	kc := p.pk.clockStores.parts()[0].keyClocks[size]
	return kc != nil && kc.ids[streamIndex(x)].has(window, id, hashID)
}

// slot is the slot of a line's window and rank; nil when there is none.
func (p *testerPipeline) slot(line string, window int64, rank int) *slotState {
	return p.pk.clockStores.parts()[0].slotAt(slotRef{line, window, rank})
}

// slotAt is the slot ref, nil when there is none.
func (t *tablePart) slotAt(ref slotRef) *slotState {
	w := t.slots[windowRef{ref.line, ref.window}]
	if w == nil || ref.rank < 1 {
		return nil
	}
	p, i := (ref.rank-1)/slotPiece, (ref.rank-1)%slotPiece
	if p >= len(w.pieces) || i >= len(w.pieces[p]) || w.pieces[p][i].Line == "" {
		return nil
	}
	return &w.pieces[p][i]
}

// eachSlot calls f with every slot t holds.
func (t *tablePart) eachSlot(f func(slotRef, *slotState)) {
	for ref, w := range t.slots {
		for p, piece := range w.pieces {
			for i := range piece {
				if s := &piece[i]; s.Line != "" {
					f(slotRef{ref.line, ref.start, p*slotPiece + i + 1}, s)
				}
			}
		}
	}
}

// send consumes one raw record into toys or boxes; it returns its offset.
func (p *testerPipeline) send(x record.Stream, key, value string) int64 {
	topic := p.pk.topicOf(x)
	off := p.tt.NewQueueTracker(topic).Hwm()
	p.tt.Consume(topic, key, []byte(value))
	return off
}

func (p *testerPipeline) toy(id, size, made string) int64 {
	return p.send(record.Toys, size, fmt.Sprintf(`{"toy_id":%q,"kind":"teddy-bear","size":%q,"elf":"e","made_at":%q}`, id, size, made))
}

func (p *testerPipeline) box(id, size, made string) int64 {
	return p.send(record.Boxes, size, fmt.Sprintf(`{"box_id":%q,"size":%q,"elf":"e","made_at":%q}`, id, size, made))
}

func (p *testerPipeline) heartbeat(x record.Stream, size, made string) int64 {
	return p.send(x, size, fmt.Sprintf(`{"heartbeat":true,"size":%q,"elf":"e","made_at":%q}`, size, made))
}

type kv struct {
	key string
	val any
}

func drain(q *tester.QueueTracker) []kv {
	var out []kv
	for {
		k, v, ok := q.Next()
		if !ok {
			return out
		}
		out = append(out, kv{k, v})
	}
}

// expectNone fails when any of the trackers has a new message.
func (p *testerPipeline) expectNone(what string, qs ...*tester.QueueTracker) {
	p.t.Helper()
	for _, q := range qs {
		if got := drain(q); len(got) > 0 {
			p.t.Errorf("%s: unexpected messages: %s", what, show(got))
		}
	}
}

// expectOne returns the one new message of q.
func (p *testerPipeline) expectOne(what string, q *tester.QueueTracker) kv {
	p.t.Helper()
	got := drain(q)
	if len(got) != 1 {
		p.t.Fatalf("%s: got %d messages, want 1: %s", what, len(got), show(got))
	}
	return got[0]
}

func show(ms []kv) string {
	var b strings.Builder
	for _, m := range ms {
		j, _ := json.Marshal(m.val)
		fmt.Fprintf(&b, "\n  %s => %s", m.key, j)
	}
	return b.String()
}

func at(clock string) string { return "2026-12-24T" + clock + "Z" }

func TestCallbackInvalidRecordsAreDeadLetters(t *testing.T) {
	p := newTesterPipeline(t)
	good := at("00:00:01")
	cases := []struct {
		x          record.Stream
		key, value string
		reason     record.Reason
	}{
		{record.Toys, "M", `garbage`, record.ReasonMalformedJSON},
		{record.Toys, "M", `[{"toy_id":"a","size":"M","made_at":"` + good + `"}]`, record.ReasonMalformedJSON},
		{record.Boxes, "M", `{"box_id":"a","size":"M","made_at":"` + good + `"} {}`, record.ReasonMalformedJSON},
		{record.Toys, "M", "\xff\xfe{}", record.ReasonMalformedJSON},
		{record.Toys, "M", "", record.ReasonMalformedJSON}, // empty, not null
		{record.Toys, "M", "  ", record.ReasonMalformedJSON},
		{record.Toys, "M", `{"toy_id":"a","size":"M","made_at":"yesterday"}`, record.ReasonBadMadeAt},
		{record.Boxes, "M", `{"box_id":"a","size":"M"}`, record.ReasonBadMadeAt},
		{record.Boxes, "XXL", `{"box_id":"a","size":"XXL","made_at":"` + good + `"}`, record.ReasonBadSize},
		{record.Boxes, "S", `{"box_id":"a","size":"M","made_at":"` + good + `"}`, record.ReasonSizeNotKey},
		{record.Toys, "", `{"toy_id":"a","size":"M","made_at":"` + good + `"}`, record.ReasonSizeNotKey},
		{record.Toys, "M", `{"size":"M","made_at":"` + good + `"}`, record.ReasonNoID},
		{record.Toys, "M", `{"box_id":"a","size":"M","made_at":"` + good + `"}`, record.ReasonNoID},
		{record.Boxes, "M", `{"box_id":"","heartbeat":false,"size":"M","made_at":"` + good + `"}`, record.ReasonNoID},
	}
	for i, c := range cases {
		off := p.send(c.x, c.key, c.value)
		topic := p.pk.topicOf(c.x)
		m := p.expectOne(fmt.Sprintf("case %d", i), p.dead)
		if want := fmt.Sprintf("%s/0/%d", topic, off); m.key != want {
			t.Errorf("case %d: dead letter key %q, want %q", i, m.key, want)
		}
		dl := m.val.(*DeadLetter)
		if dl.Stream != c.x || dl.Topic != topic || dl.Partition != 0 || dl.Offset != off || dl.Reason != c.reason || dl.Key != c.key {
			t.Errorf("case %d: dead letter %+v, want stream %s topic %s partition 0 offset %d reason %q key %q",
				i, dl, c.x, topic, off, c.reason, c.key)
		}
		if dl.Detail == "" {
			t.Errorf("case %d: dead letter without detail", i)
		}
		if strings.HasPrefix(c.value, "\xff") {
			if dl.Value != nil || string(dl.ValueBase64) != c.value {
				t.Errorf("case %d: invalid UTF-8 value should be in value_base64: %+v", i, dl)
			}
		} else if dl.Value == nil || *dl.Value != c.value || dl.ValueBase64 != nil {
			t.Errorf("case %d: dead letter value %v, want %q", i, dl.Value, c.value)
		}
		p.expectNone(fmt.Sprintf("case %d", i), p.clockLoop, p.clockTab, p.packed, p.late)
	}
}

// TestCallbackNullValueIsDeadLetter: a record whose value is null (a Kafka
// tombstone, which sarama hands over as a nil []byte) is not "UTF-8 text
// holding one JSON object", so the contract makes it a dead letter, and
// internal/contract reports it as "malformed json". goka's default nil
// handling, NilIgnore, would drop such a message before the input callback
// runs; the clock group therefore sets goka.WithNilHandling(NilProcess).
func TestCallbackNullValueIsDeadLetter(t *testing.T) {
	in := record.Input{Stream: record.Boxes, Topic: "boxes", Partition: 0, Offset: 0, Key: []byte("M"), Value: nil}
	ref := contract.Compute([]record.Input{in}, contract.DefaultParams(), contract.Literal)
	if len(ref.Dead) != 1 || ref.Dead[0].Reason != string(record.ReasonMalformedJSON) {
		t.Fatalf("reference: %+v", ref.Dead)
	}
	p := newTesterPipeline(t)
	p.tt.Consume("boxes", "M", nil)
	got := drain(p.dead)
	if len(got) != 1 || got[0].key != "boxes/0/0" || got[0].val.(*DeadLetter).Reason != record.ReasonMalformedJSON {
		t.Fatalf("null value on boxes/0 offset 0: dead letters %s, want boxes/0/0 with reason %q (as the reference: %+v)",
			show(got), record.ReasonMalformedJSON, ref.Dead)
	}
}

func TestCallbackDuplicateIsDeadLetter(t *testing.T) {
	p := newTesterPipeline(t)
	w0, w10 := micros("00:00:00"), micros("00:00:10")
	p.toy("a", "M", at("00:00:01"))
	p.toy("b", "M", at("00:00:02"))
	p.expectNone("first ids", p.dead)

	dupValue := `{"toy_id":"a","size":"M","made_at":"2026-12-24T00:00:03Z","elf":"x"}`
	off := p.send(record.Toys, "M", dupValue)
	m := p.expectOne("duplicate", p.dead)
	if m.key != fmt.Sprintf("toys/0/%d", off) {
		t.Errorf("duplicate dead letter key %q", m.key)
	}
	dl := m.val.(*DeadLetter)
	if dl.Reason != record.ReasonDuplicate || dl.Stream != record.Toys || dl.Topic != "toys" || dl.Offset != off || dl.Key != "M" ||
		dl.Value == nil || *dl.Value != dupValue || !strings.Contains(dl.Detail, `"a"`) {
		t.Errorf("duplicate dead letter %+v", dl)
	}
	if !p.hasEntry(t, record.Toys, "M", w0, "a") {
		t.Errorf("no dedupe entry of a in window 0")
	}
	// The clock saw it as a duplicate: no rank.
	clk := p.keyClock(t, "M")
	if ev := p.lastDecision(t); ev.Class != classDuplicate || ev.Rank != 0 || ev.Rec.Offset != off {
		t.Errorf("clock event of the duplicate: %+v", ev)
	}
	if len(clk.Open) != 1 || clk.Open[0].Toys != 2 {
		t.Errorf("open windows %+v, want one with 2 toys", clk.Open)
	}

	// Not duplicates: a heartbeat carrying the id, the same id on boxes, in
	// another size, and in another window of the same stream and size.
	p.send(record.Toys, "M", `{"heartbeat":true,"toy_id":"a","size":"M","made_at":"2026-12-24T00:00:04Z"}`)
	p.box("a", "M", at("00:00:04"))
	p.toy("a", "S", at("00:00:04"))
	p.toy("a", "M", at("00:00:11"))
	p.expectNone("not duplicates", p.dead, p.late)
	drain(p.packed) // toy a and box a of window 0
	if !p.hasEntry(t, record.Toys, "M", w10, "a") || !p.hasEntry(t, record.Boxes, "M", w0, "a") || !p.hasEntry(t, record.Toys, "S", w0, "a") {
		t.Errorf("dedupe entries of the items with id a missing")
	}

	// A third "a" of window 0 is a duplicate too.
	off3 := p.toy("a", "M", at("00:00:09"))
	if m := p.expectOne("third a", p.dead); m.key != fmt.Sprintf("toys/0/%d", off3) || m.val.(*DeadLetter).Reason != record.ReasonDuplicate {
		t.Errorf("dead letter %s, want the duplicate toys/0/%d", show([]kv{m}), off3)
	}

	// Once the toys' watermark has reached window 0's end, an "a" of window
	// 0 is late, not a duplicate: late is decided first. Each late copy is
	// a row of its own, at its position.
	p.toy("z", "M", at("00:00:15"))
	if p.hasEntry(t, record.Toys, "M", w0, "a") || !p.hasEntry(t, record.Toys, "M", w10, "a") {
		t.Errorf("toys' entries: window 0's should be forgotten, window 10's kept")
	}
	offLate := p.toy("a", "M", at("00:00:05"))
	offLate2 := p.toy("a", "M", at("00:00:05"))
	lates := drain(p.late)
	if len(lates) != 2 || lates[0].key != lateKey("toys", 0, offLate) || lates[1].key != lateKey("toys", 0, offLate2) {
		t.Fatalf("late rows %s, want toys/0/%d and toys/0/%d", show(lates), offLate, offLate2)
	}
	want := results.Late{Stream: "toys", Partition: 0, Offset: offLate, ID: "a", Line: "M", Size: "M", MadeAt: at("00:00:05")}
	if got := *lates[0].val.(*results.Late); got != want {
		t.Errorf("late row %+v, want %+v", got, want)
	}
	p.expectNone("late copies", p.dead, p.packed)
}

// TestCallbackResentAfterCloseIsLate: an exact re-send of an item (its
// elf retried) is a duplicate while its window is open for its stream, and
// late once the window has closed, however it closed: a late row at the
// re-sent record's position, never a dead letter, and never a second item.
func TestCallbackResentAfterCloseIsLate(t *testing.T) {
	p := newTesterPipeline(t)
	value := toyValue("t1", "M", at("00:00:01"))
	first := p.send(record.Toys, "M", value)
	p.box("b1", "M", at("00:00:02"))
	p.expectOne("packed", p.packed)
	again := p.send(record.Toys, "M", value)
	if m := p.expectOne("re-sent while open", p.dead); m.key != deadKey("toys", 0, again) || m.val.(*DeadLetter).Reason != record.ReasonDuplicate {
		t.Errorf("re-sent while open: %s, want a duplicate at toys/0/%d", show([]kv{m}), again)
	}
	p.heartbeat(record.Toys, "M", at("00:00:30"))
	p.heartbeat(record.Boxes, "M", at("00:00:30"))
	late := p.send(record.Toys, "M", value)
	m := p.expectOne("re-sent after closing", p.late)
	want := &results.Late{Stream: "toys", Partition: 0, Offset: late, ID: "t1", Line: "M", Size: "M", MadeAt: at("00:00:01")}
	if m.key != lateKey("toys", 0, late) || !reflect.DeepEqual(m.val, want) || late == first {
		t.Errorf("late %s, want toys/0/%d => %+v", show([]kv{m}), late, want)
	}
	p.expectNone("re-sent after closing", p.dead, p.packed, p.unpacked, p.spare)
}

// TestCallbackReusedIDIsANewItem: ids are unique within a window only: the
// same toy and box ids in a later window are new items, packed again, under
// keys of their own.
func TestCallbackReusedIDIsANewItem(t *testing.T) {
	p := newTesterPipeline(t)
	w0, w10 := micros("00:00:00"), micros("00:00:10")
	p.toy("t1", "M", at("00:00:01"))
	p.box("b1", "M", at("00:00:02"))
	p.toy("t1", "M", at("00:00:11"))
	p.box("b1", "M", at("00:00:12"))
	got := drain(p.packed)
	if len(got) != 2 || got[0].key != itemKey("M", w0, "t1") || got[1].key != itemKey("M", w10, "t1") {
		t.Fatalf("packed %s, want t1 in windows 0 and 10", show(got))
	}
	for i, ws := range []string{at("00:00:00"), at("00:00:10")} {
		if want := (&results.Packed{ToyID: "t1", BoxID: "b1", Line: "M", Size: "M", WindowStart: ws}); !reflect.DeepEqual(got[i].val, want) {
			t.Errorf("packed %+v, want %+v", got[i].val, want)
		}
	}
	p.expectNone("reused ids", p.dead, p.late)
}

func TestCallbackPackedRow(t *testing.T) {
	p := newTesterPipeline(t)
	w0, w10 := micros("00:00:00"), micros("00:00:10")
	p.toy("t1", "M", at("00:00:01"))
	p.expectNone("toy alone", p.packed, p.unpacked, p.spare, p.late, p.dead)
	p.box("b1", "M", at("00:00:09.999999"))
	m := p.expectOne("packed", p.packed)
	want := &results.Packed{ToyID: "t1", BoxID: "b1", Line: "M", Size: "M", WindowStart: at("00:00:00")}
	if m.key != itemKey("M", w0, "t1") || !reflect.DeepEqual(m.val, want) {
		t.Errorf("packed %s => %+v, want %s => %+v", m.key, m.val, itemKey("M", w0, "t1"), want)
	}
	// Other windows and sizes do not pair.
	p.box("b2", "M", at("00:00:10"))
	p.toy("t2", "S", at("00:00:02"))
	p.box("b3", "L", at("00:00:02"))
	p.expectNone("other window or size", p.packed, p.unpacked, p.spare, p.late, p.dead)
	p.toy("t3", "M", at("00:00:19"))
	m = p.expectOne("second window", p.packed)
	want = &results.Packed{ToyID: "t3", BoxID: "b2", Line: "M", Size: "M", WindowStart: at("00:00:10")}
	if m.key != itemKey("M", w10, "t3") || !reflect.DeepEqual(m.val, want) {
		t.Errorf("packed %s => %+v, want %s => %+v", m.key, m.val, itemKey("M", w10, "t3"), want)
	}
	// The slot of (M, window 0, rank 1) holds both items until the window
	// closes, in the storage only.
	if s := p.slot("M", w0, 1); s == nil || s.Toy != "t1" || s.Box != "b1" || s.Closed {
		t.Errorf("slot state %+v, want toy t1 and box b1", s)
	}
}

func TestCallbackClosingGivesUnpackedAndSpare(t *testing.T) {
	p := newTesterPipeline(t)
	w0, w10 := micros("00:00:00"), micros("00:00:10")
	// Window 00:00:00: two toys, one box. Window 00:00:10: one toy, two boxes.
	p.toy("t1", "M", at("00:00:01"))
	p.toy("t2", "M", at("00:00:02"))
	p.box("b1", "M", at("00:00:03"))
	p.box("b2", "M", at("00:00:11"))
	p.box("b3", "M", at("00:00:12"))
	p.toy("t3", "M", at("00:00:13"))
	got := drain(p.packed)
	if len(got) != 2 || got[0].key != itemKey("M", w0, "t1") || got[1].key != itemKey("M", w10, "t3") ||
		got[0].val.(*results.Packed).BoxID != "b1" || got[1].val.(*results.Packed).BoxID != "b2" {
		t.Fatalf("packed %s", show(got))
	}
	p.expectNone("before closing", p.unpacked, p.spare)

	// The toys' watermark reaches 00:00:20, the boxes' stays 1µs short of
	// 00:00:10: both windows stay open.
	p.heartbeat(record.Toys, "M", at("00:00:25"))
	p.heartbeat(record.Boxes, "M", at("00:00:14.999999"))
	p.expectNone("one watermark short", p.unpacked, p.spare, p.packed)

	// Now both: windows 0 and 10 close.
	p.heartbeat(record.Boxes, "M", at("00:00:25"))
	u := p.expectOne("unpacked", p.unpacked)
	if want := (&results.Unpacked{ToyID: "t2", Line: "M", Size: "M", WindowStart: at("00:00:00")}); u.key != itemKey("M", w0, "t2") || !reflect.DeepEqual(u.val, want) {
		t.Errorf("unpacked %s => %+v, want %s => %+v", u.key, u.val, itemKey("M", w0, "t2"), want)
	}
	s := p.expectOne("spare", p.spare)
	if want := (&results.Spare{BoxID: "b3", Line: "M", Size: "M", WindowStart: at("00:00:10")}); s.key != itemKey("M", w10, "b3") || !reflect.DeepEqual(s.val, want) {
		t.Errorf("spare %s => %+v, want %s => %+v", s.key, s.val, itemKey("M", w10, "b3"), want)
	}
	p.expectNone("closing", p.packed, p.late, p.dead)
	clk := p.keyClock(t, "M")
	if ev := p.lastDecision(t); len(clk.Open) != 0 || len(ev.Closed) != 2 {
		t.Errorf("clock after closing: open %+v, closed %+v", clk.Open, ev.Closed)
	}
	// A closed window's slots are forgotten: nothing mentions them again.
	if n := len(slotContents(t, p.pk.clockStores.parts()[0])); n != 0 {
		t.Errorf("%d slots kept after every window closed", n)
	}

	// A toy for the closed window is late, never a new unpacked row.
	off := p.toy("t4", "M", at("00:00:05"))
	p.expectNone("after closing", p.unpacked, p.spare, p.packed)
	if l := p.expectOne("late after closing", p.late); l.key != lateKey("toys", 0, off) {
		t.Errorf("late key %q", l.key)
	}
	// More heartbeats close nothing again.
	drain(p.clockTab)
	p.heartbeat(record.Toys, "M", at("00:01:00"))
	p.heartbeat(record.Boxes, "M", at("00:01:00"))
	p.expectNone("heartbeats after closing", p.unpacked, p.spare, p.packed)
	for _, m := range drain(p.clockTab) {
		if ev := m.val.(*decision); len(ev.Closed) > 0 {
			t.Errorf("a heartbeat after closing closed %+v", ev.Closed)
		}
	}
}

func TestCallbackLateRow(t *testing.T) {
	p := newTesterPipeline(t)
	p.toy("t1", "M", at("00:00:30"))
	// Window 00:00:00 ends at 10 s <= 30 s - 5 s: late. The row's made_at is
	// the record's, in UTC.
	off := p.toy("t2", "M", "2026-12-24T01:00:05.123+01:00")
	m := p.expectOne("late toy", p.late)
	want := &results.Late{Stream: "toys", Partition: 0, Offset: off, ID: "t2", Line: "M", Size: "M", MadeAt: "2026-12-24T00:00:05.123Z"}
	if m.key != lateKey("toys", 0, off) || !reflect.DeepEqual(m.val, want) {
		t.Errorf("late %s => %+v, want %s => %+v", m.key, m.val, lateKey("toys", 0, off), want)
	}

	// 1µs before the bound is on time: window 10 ends at 20 s > 24.999999 s - 5 s.
	p.box("b1", "M", at("00:00:24.999999"))
	p.box("b2", "M", at("00:00:15"))
	p.expectNone("1µs before the bound", p.late)
	// Exactly on the bound (prior_max - L == window_end) is late.
	p.box("b3", "M", at("00:00:25"))
	off = p.box("b4", "M", at("00:00:19.999999"))
	m = p.expectOne("late box", p.late)
	if want := (&results.Late{Stream: "boxes", Partition: 0, Offset: off, ID: "b4", Line: "M", Size: "M", MadeAt: at("00:00:19.999999")}); m.key != lateKey("boxes", 0, off) || !reflect.DeepEqual(m.val, want) {
		t.Errorf("late %s => %+v, want %s => %+v", m.key, m.val, lateKey("boxes", 0, off), want)
	}

	// Late records take no rank: b1 and b3 are ranks 1 and 2 of window 20.
	w10, w20 := micros("00:00:10"), micros("00:00:20")
	p.toy("t3", "M", at("00:00:25"))
	p.toy("t4", "M", at("00:00:26"))
	got := drain(p.packed)
	if len(got) != 2 || got[0].key != itemKey("M", w20, "t3") || got[0].val.(*results.Packed).BoxID != "b1" ||
		got[1].key != itemKey("M", w20, "t4") || got[1].val.(*results.Packed).BoxID != "b3" {
		t.Fatalf("packed %s, want t3/b1 and t4/b3", show(got))
	}
	// b3 moved the boxes' watermark to 20 s and t1 the toys' to 25 s: window
	// 10 closed with b2 alone in it.
	if s := p.expectOne("spare", p.spare); s.key != itemKey("M", w10, "b2") {
		t.Errorf("spare key %q, want %q", s.key, itemKey("M", w10, "b2"))
	}
	p.expectNone("no more", p.late, p.dead, p.unpacked)
}

// TestCallbackRedeliveryNotCountedTwice delivers again records already
// handled (the tester cannot redeliver one of its own offsets, so the
// redeliveries are crafted) and checks that no rank is counted twice and
// that a record the clock applied already, in a packer that did not
// restart (no replays), writes nothing at all. Replays after a restart are
// TestDedupeDeadLetterFromDecision's and TestHorizonRestartFromSuffix's.
func TestCallbackRedeliveryNotCountedTwice(t *testing.T) {
	p := newTesterPipeline(t)
	w0 := micros("00:00:00")
	toyValue := `{"toy_id":"t1","size":"M","made_at":"2026-12-24T00:00:01Z"}`
	offT := p.send(record.Toys, "M", toyValue)
	p.box("b1", "M", at("00:00:02"))
	p.expectOne("packed", p.packed)
	if !p.hasEntry(t, record.Toys, "M", w0, "t1") {
		t.Fatalf("no dedupe entry of t1")
	}
	drain(p.clockTab)
	// The tester cannot deliver toys offset offT again, so the redelivery
	// comes through the clock group's loop, which hands a record to the same
	// decisions as the input callback (the way a stray record reaches them).
	observed := &validRecord{Stream: record.Toys, Partition: 0, Offset: offT, Line: "M", ID: "t1",
		MadeUS: micros("00:00:01"), Raw: []byte(toyValue), Key: []byte("M")}
	redeliver := func(obs *validRecord) {
		t.Helper()
		p.tt.Consume(p.cfg.clockGroup()+"-loop", "M", obs)
		drain(p.clockLoop) // the crafted message itself
	}

	// 1. toys offset offT is delivered again (the group restarted before
	// committing it): the clock has applied it, so nothing is written,
	// although its id is in the window's dedupe entries.
	redeliver(observed)
	p.expectNone("redelivered record", p.clockTab, p.dead, p.packed)

	// 2. A duplicate, then its redelivery: the clock has applied it, so the
	// redelivery writes nothing, not even its dead letter.
	offDup := p.toy("t1", "M", at("00:00:03"))
	dup := p.expectOne("duplicate", p.dead)
	c := drain(p.clockTab)
	if len(c) != 1 || c[0].val.(*decision).Class != classDuplicate {
		t.Fatalf("clock of the duplicate: %s", show(c))
	}
	dupObs := *observed
	dupObs.Offset, dupObs.MadeUS = offDup, micros("00:00:03")
	dupObs.Raw = []byte(*dup.val.(*DeadLetter).Value)
	redeliver(&dupObs)
	p.expectNone("duplicate redelivered", p.clockTab, p.dead)
	// The original redelivered after the duplicate: nothing.
	redeliver(observed)
	p.expectNone("old record redelivered", p.dead, p.clockTab)

	// 3. Had t1 been counted twice, the next box (rank 2) would pack with it.
	p.box("b2", "M", at("00:00:04"))
	p.expectNone("second box", p.packed)
	p.heartbeat(record.Toys, "M", at("00:00:15"))
	p.heartbeat(record.Boxes, "M", at("00:00:15"))
	s := p.expectOne("spare", p.spare)
	if s.key != itemKey("M", w0, "b2") {
		t.Errorf("spare key %q", s.key)
	}
	p.expectNone("end", p.unpacked, p.packed)
}

// clockTableRecords are the clock table's records, from its first.
// lastDecision is the clock table's last record.
func (p *testerPipeline) lastDecision(t *testing.T) *decision {
	t.Helper()
	recs := p.clockTableRecords()
	if len(recs) == 0 {
		t.Fatal("empty clock table")
	}
	return decodeDecision(t, recs[len(recs)-1].value)
}

func (p *testerPipeline) clockTableRecords() []tableRecord {
	q := p.tt.NewQueueTracker(p.cfg.clockTable())
	q.Seek(0)
	var out []tableRecord
	for {
		off := q.NextOffset()
		k, v, ok := q.NextRaw()
		if !ok {
			return out
		}
		out = append(out, tableRecord{offset: off, key: k, value: v})
	}
}

// expectRecovered restarts the packer from the clock table's records, as
// Run does after a crash (startUnit), and fails unless that gives the state
// the callbacks built: the same clocks, dedupe entries and slots. It does so
// from the whole table, and from each suffix that a horizon over the same
// records would let the cleaner keep: what the truncation of the table
// relies on. It returns the most records a suffix dropped.
func (p *testerPipeline) expectRecovered(t *testing.T) (dropped int64) {
	t.Helper()
	recs := p.clockTableRecords()
	if len(recs) == 0 {
		t.Fatal("empty clock table")
	}
	live := &unitPipeline{t: t, pk: p.pk, cfg: p.cfg}
	all := p.committed()

	// With nothing committed, every decision is a replay: the restored
	// slots keep also the windows that closed, whose closing a replay
	// writes again. Those are exactly the slots the live callbacks forgot.
	fresh := startUnit(t, p.cfg, recs, [nInputs]int64{})
	expectSameClocks(t, "restored from the whole table, nothing committed", live, fresh)
	if n := len(fresh.clockPart().replays); n != len(recs) {
		t.Errorf("restored with nothing committed: %d replays, want %d", n, len(recs))
	}
	liveSlots, restoredSlots := slotContents(t, live.clockPart()), slotContents(t, fresh.clockPart())
	closed := map[string]bool{}
	for _, r := range recs {
		ev := decodeDecision(t, r.value)
		for _, c := range ev.Closed {
			for k := 1; k <= max(c.Toys, c.Boxes); k++ {
				closed[slotName(ev.Rec.Line, c.Start, k)] = true
			}
		}
	}
	for k, v := range restoredSlots {
		if lv, ok := liveSlots[k]; ok && lv != v {
			t.Errorf("restored slot %q is %q, live %q", k, v, lv)
		} else if !ok && !closed[k] {
			t.Errorf("restored slot %q is not live, and not of a window closed", k)
		}
	}
	for k := range liveSlots {
		if _, ok := restoredSlots[k]; !ok {
			t.Errorf("live slot %q not restored", k)
		}
	}
	// With every record committed, none is: the slots are the live ones.
	fresh = startUnit(t, p.cfg, recs, all)
	if n := len(fresh.clockPart().replays); n != 0 {
		t.Errorf("restored with everything committed: %d replays", n)
	}
	expectSameSlots(t, "restored from the whole table, everything committed", live, fresh)

	// Restarts from suffixes: a mark every few records, as the cleaner
	// would keep one every horizonEvery.
	h := newHorizon()
	for i, r := range recs {
		f := factOf(decodeDecision(t, r.value))
		h.observe(r.offset, &f)
		if i%5 == 4 || i == len(recs)-1 {
			h.mark(r.offset)
		}
	}
	for _, m := range h.marks {
		what := fmt.Sprintf("restored from offset %d (mark at %d)", m.keep, m.at)
		fresh := startUnit(t, p.cfg, recs[m.keep-recs[0].offset:], all)
		expectSameClocks(t, what, live, fresh)
		expectSameSlots(t, what, live, fresh)
		dropped = max(dropped, m.keep)
	}
	return dropped
}

// committed are the offsets of the inputs after every record consumed:
// what the group has committed once it processed them all.
func (p *testerPipeline) committed() [nInputs]int64 {
	var at [nInputs]int64
	for i, topic := range p.cfg.inputTopics() {
		at[i] = p.tt.NewQueueTracker(topic).Hwm()
	}
	return at
}

// expectSameClocks fails unless got, a packer restarted from the clock
// table, has live's clocks (watermarks, offsets applied, open windows with
// their counts), the same clock storage (each size's last decision, the
// dedupe entries) and lists every dedupe entry to forget it.
func expectSameClocks(t testing.TB, what string, live, got *unitPipeline) {
	t.Helper()
	lc, gc := live.clockPart().keyClocks, got.clockPart().keyClocks
	if len(lc) == 0 {
		t.Fatalf("%s: no live clocks", what)
	}
	for size := range mergeKeys(lc, gc) {
		l, g := lc[size], gc[size]
		if l == nil || g == nil {
			t.Errorf("%s: clock of size %s live %v, restored %v", what, size, l != nil, g != nil)
			continue
		}
		if !reflect.DeepEqual(g.Toys, l.Toys) || !reflect.DeepEqual(g.Boxes, l.Boxes) || !slices.Equal(g.Open, l.Open) {
			t.Errorf("%s: clock of size %s:\n got toys %+v boxes %+v open %+v\nwant toys %+v boxes %+v open %+v",
				what, size, g.Toys, g.Boxes, g.Open, l.Toys, l.Boxes, l.Open)
		}
	}
	// The dedupe entries. (goka also keeps each line's last decision at the
	// line's key in the storage, which nothing reads, and which a restart
	// from a suffix lacks for a line whose last decision a walk's piece
	// made needless.) The slots are expectSameSlots'.
	want, have := dedupeEntries(t, live.clockPart()), dedupeEntries(t, got.clockPart())
	if !reflect.DeepEqual(have, want) {
		t.Errorf("%s: dedupe entries differ (%d, want %d):\n got %v\nwant %v", what, len(have), len(want), slices.Sorted(maps.Keys(have)), slices.Sorted(maps.Keys(want)))
	}
}

// expectSameSlots fails unless got's slots storage is live's.
func expectSameSlots(t testing.TB, what string, live, got *unitPipeline) {
	t.Helper()
	want, have := slotContents(t, live.clockPart()), slotContents(t, got.clockPart())
	if !reflect.DeepEqual(have, want) {
		t.Errorf("%s: slots differ (%d, want %d):\n got %q\nwant %q", what, len(have), len(want), have, want)
	}
}

func mergeKeys[V any](a, b map[string]V) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

func storageContents(t testing.TB, store storage.Storage) map[string]string {
	t.Helper()
	it, err := store.Iterator()
	if err != nil {
		t.Fatal(err)
	}
	defer it.Release()
	out := map[string]string{}
	for it.Next() {
		v, err := it.Value()
		if err != nil {
			t.Fatal(err)
		}
		out[string(it.Key())] = string(v)
	}
	return out
}

// changelogRecord is what goka tells an update callback about a table record.
type changelogRecord struct {
	topic  string
	offset int64
}

func (c changelogRecord) Topic() goka.Stream    { return goka.Stream(c.topic) }
func (c changelogRecord) Partition() int32      { return 0 }
func (c changelogRecord) Offset() int64         { return c.offset }
func (c changelogRecord) Headers() goka.Headers { return nil }
func (c changelogRecord) Timestamp() time.Time  { return time.Time{} }

// TestCallbackPipelineMatchesContract feeds random records (valid, invalid,
// duplicates, ids reused across windows, late ones, re-sends after their
// window closed, heartbeats, four sizes) through the group and compares
// the outputs, deduplicated by key as a consumer would, with the batch
// reference implementation; then restarts from the clock table, whole and
// truncated, and compares the state (expectRecovered).
func TestCallbackPipelineMatchesContract(t *testing.T) {
	for seed := range uint64(12) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 99))
			p := newTesterPipeline(t)
			base := time.Date(2026, 12, 24, 0, 0, 0, 0, time.UTC)
			if seed%3 == 0 {
				base = time.Date(1969, 12, 31, 23, 58, 0, 0, time.UTC)
			}
			var inputs []record.Input
			add := func(in randomInput) {
				off := p.send(in.x, in.key, in.value)
				inputs = append(inputs, record.Input{Stream: in.x, Topic: p.pk.topicOf(in.x), Partition: 0, Offset: off, Key: []byte(in.key), Value: []byte(in.value)})
			}
			random := randomInputs(r, 60+r.IntN(90), base)
			for _, in := range random {
				add(in)
			}
			closeAll := seed%2 == 0
			if closeAll {
				for _, in := range finalHeartbeats(random, base) {
					add(in)
				}
			}
			mode := contract.ClosedOnly
			if closeAll {
				mode = contract.Literal
			}
			want := contract.Compute(inputs, contract.Params{Window: 10 * time.Second, Lateness: 5 * time.Second}, mode)

			var got results.Set
			collect := func(q *tester.QueueTracker, add func(any)) {
				seen := map[string]string{}
				for _, m := range drain(q) {
					j, _ := json.Marshal(m.val)
					if prev, ok := seen[m.key]; ok {
						if prev != string(j) {
							t.Errorf("key %s written with two values: %s and %s", m.key, prev, j)
						}
						continue
					}
					seen[m.key] = string(j)
					add(m.val)
				}
			}
			collect(p.packed, func(v any) { got.Packed = append(got.Packed, *v.(*results.Packed)) })
			collect(p.unpacked, func(v any) { got.Unpacked = append(got.Unpacked, *v.(*results.Unpacked)) })
			collect(p.spare, func(v any) { got.Spare = append(got.Spare, *v.(*results.Spare)) })
			collect(p.late, func(v any) { got.Late = append(got.Late, *v.(*results.Late)) })
			collect(p.dead, func(v any) {
				d := v.(*DeadLetter)
				got.Dead = append(got.Dead, results.Dead{Stream: string(d.Stream), Partition: d.Partition, Offset: d.Offset, Reason: string(d.Reason)})
			})
			got.Sort()
			if d := diffSets(got, want); d != "" {
				t.Fatalf("%d inputs, closeAll=%v: pipeline differs from the contract:\n%s", len(inputs), closeAll, d)
			}
			if dropped := p.expectRecovered(t); closeAll && dropped == 0 && len(p.clockTableRecords()) > 4*snapshotEvery {
				// The final heartbeats close every window: the last mark
				// needs nothing before the last complete walk, which a
				// run of this length has.
				t.Errorf("no restart from a suffix: every mark keeps the whole table")
			}
			c := want.Counts()
			if len(want.Packed) == 0 || len(want.Late) == 0 || !slices.ContainsFunc(want.Dead, func(d results.Dead) bool { return d.Reason == string(record.ReasonDuplicate) }) {
				t.Logf("weak seed: %+v", c)
			}
		})
	}
}

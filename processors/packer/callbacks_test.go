package packer

// These tests run the two goka groups in goka's tester
// (github.com/lovoo/goka/tester). What the tester does, as found by reading
// it and by these tests:
//
//   - It chains the groups: SetValue writes the group table's changelog into
//     the tester's queue for "<group>-table", and a downstream group that
//     declares that topic as an input stream consumes it. Loopbacks go to
//     "<group>-loop", which the group consumes. tt.Consume returns only when
//     every group has consumed every queued message, so after one Consume the
//     whole pipeline (observe, dedupe and clock, then slots) has run.
//   - Every topic has one partition (partition 0), and each topic's offsets
//     are assigned by the tester, 0, 1, 2, ... in Consume order. The hasher is
//     therefore not exercised, and a record cannot be delivered twice at the
//     same offset through tt.Consume. Redeliveries are simulated by consuming
//     a crafted message into a stage's input: a *validRecord (with the offset
//     of an earlier record) into "packer-clock-loop", where the clock group
//     takes a record it was handed by another partition, and a *decision
//     into "packer-clock-table".
//   - A group table's storage is the tester's, and the one the group's
//     callbacks set the values at other keys in (the dedupe entries, the
//     slots). The tester recovers no table: expectRecovered does what goka's
//     recovery does, through the groups' update callbacks.
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
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/storage"
	"github.com/lovoo/goka/tester"

	"github.com/northpole-workshop/northpole/internal/contract"
	"github.com/northpole-workshop/northpole/internal/gokakit"
	"github.com/northpole-workshop/northpole/internal/gokastore"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
)

type testerPipeline struct {
	t   testing.TB
	tt  *tester.Tester
	pk  *Packer
	cfg Config
	// trackers of every topic the tests look at
	dead, packed, unpacked, spare, late *tester.QueueTracker
	clockLoop, clockTab, slotTable      *tester.QueueTracker
}

func newTesterPipeline(t testing.TB, opts ...Option) *testerPipeline {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Kafka.Brokers = []string{"unused:9092"}
	pk, err := New(cfg, nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	tt := tester.New(t)
	quiet := gokakit.Logger(slog.New(slog.DiscardHandler))
	for _, gg := range pk.Graphs() {
		// The processors get Run's own options (hasher, and whatever else Run
		// sets), then the tester, which replaces every builder that would
		// reach Kafka, and a quiet logger. The tester's storage is wrapped as
		// Run wraps its own.
		group := string(gg.Group())
		opts := append(pk.options(group), goka.WithTester(tt), goka.WithLogger(quiet),
			goka.WithStorageBuilder(pk.storageBuilder(tt.StorageBuilder())))
		proc, err := goka.NewProcessor(nil, gg, opts...)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- proc.Run(ctx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("processor %s: %v", gg.Group(), err)
			}
		})
	}
	p := &testerPipeline{t: t, tt: tt, pk: pk, cfg: cfg}
	tp := cfg.Topics
	p.dead = tt.NewQueueTracker(tp.Dead)
	p.packed = tt.NewQueueTracker(tp.Packed)
	p.unpacked = tt.NewQueueTracker(tp.Unpacked)
	p.spare = tt.NewQueueTracker(tp.Spare)
	p.late = tt.NewQueueTracker(tp.Late)
	p.clockLoop = tt.NewQueueTracker(cfg.clockGroup() + "-loop")
	p.clockTab = tt.NewQueueTracker(string(goka.GroupTable(goka.Group(cfg.clockGroup()))))
	p.slotTable = tt.NewQueueTracker(cfg.slotTable())
	return p
}

// send consumes one raw record into toys or boxes; it returns its offset.
// clock is the clock stage's state of size, with the decision of its last
// event.
func (p *testerPipeline) clock(t *testing.T, size string) *sizeClock {
	t.Helper()
	st, ok := p.pk.clocks.m[0].clocks[size]
	if !ok {
		t.Fatalf("no clock of size %s", size)
	}
	return st
}

// dedupeEntry is the dedupe entry at key, in the clock table's storage; nil
// when there is none.
func (p *testerPipeline) dedupeEntry(t *testing.T, key string) *firstSeen {
	t.Helper()
	b, err := p.pk.clocks.m[0].st.Get(key)
	if err != nil || b == nil {
		return nil
	}
	v, err := firstSeenCodec.Decode(b)
	if err != nil {
		t.Fatalf("dedupe entry %s: %v", key, err)
	}
	return v.(*firstSeen)
}

// slot is the slot at key, in the slots group table's storage.
func (p *testerPipeline) slot(t *testing.T, key string) *slotState {
	t.Helper()
	b, err := p.pk.slots.m[0].st.Get(key)
	if err != nil {
		t.Fatalf("slot %s: %v", key, err)
	}
	v, err := slotStateCodec.Decode(b)
	if err != nil {
		t.Fatalf("slot %s: %v", key, err)
	}
	return v.(*slotState)
}

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
	if st := p.dedupeEntry(t, "M|toys|i|a"); st == nil || st.First != 0 || st.FirstPart != 0 {
		t.Errorf("dedupe entry of a: %+v", st)
	}
	// The clock saw it as a duplicate: no rank.
	clk := p.clock(t, "M")
	if clk.Ev.Class != classDuplicate || clk.Ev.Rank != 0 || clk.Ev.Rec.Offset != off {
		t.Errorf("clock event of the duplicate: %+v", clk.Ev)
	}
	if len(clk.Open) != 1 || clk.Open[0].Toys != 2 {
		t.Errorf("open windows %+v, want one with 2 toys", clk.Open)
	}

	// Not duplicates: a heartbeat carrying the id, the same id on boxes, the
	// same id in another size.
	p.send(record.Toys, "M", `{"heartbeat":true,"toy_id":"a","size":"M","made_at":"2026-12-24T00:00:04Z"}`)
	p.box("a", "M", at("00:00:04"))
	p.toy("a", "S", at("00:00:04"))
	p.expectNone("not duplicates", p.dead)

	// A third "a" and a late then repeated id are duplicates too.
	off3 := p.toy("a", "M", at("00:00:09"))
	p.toy("z", "M", at("00:01:00"))
	p.toy("late", "M", at("00:00:01"))
	offLateDup := p.toy("late", "M", at("00:00:59"))
	got := drain(p.dead)
	if len(got) != 2 || got[0].key != fmt.Sprintf("toys/0/%d", off3) || got[1].key != fmt.Sprintf("toys/0/%d", offLateDup) {
		t.Errorf("dead letters %s, want toys/0/%d and toys/0/%d", show(got), off3, offLateDup)
	}
	for _, g := range got {
		if g.val.(*DeadLetter).Reason != record.ReasonDuplicate {
			t.Errorf("dead letter %s: reason %q", g.key, g.val.(*DeadLetter).Reason)
		}
	}
	// The late one is reported once, as late, and its duplicate not at all.
	lates := drain(p.late)
	if len(lates) != 1 || lates[0].key != "toys|M|late" {
		t.Errorf("late rows %s", show(lates))
	}
}

func TestCallbackPackedRow(t *testing.T) {
	p := newTesterPipeline(t)
	p.toy("t1", "M", at("00:00:01"))
	p.expectNone("toy alone", p.packed, p.unpacked, p.spare, p.late, p.dead)
	p.box("b1", "M", at("00:00:09.999999"))
	m := p.expectOne("packed", p.packed)
	want := &results.Packed{ToyID: "t1", BoxID: "b1", Size: "M", WindowStart: at("00:00:00")}
	if m.key != "M|t1" || !reflect.DeepEqual(m.val, want) {
		t.Errorf("packed %s => %+v, want M|t1 => %+v", m.key, m.val, want)
	}
	// Other windows and sizes do not pair.
	p.box("b2", "M", at("00:00:10"))
	p.toy("t2", "S", at("00:00:02"))
	p.box("b3", "L", at("00:00:02"))
	p.expectNone("other window or size", p.packed, p.unpacked, p.spare, p.late, p.dead)
	p.toy("t3", "M", at("00:00:19"))
	m = p.expectOne("second window", p.packed)
	want = &results.Packed{ToyID: "t3", BoxID: "b2", Size: "M", WindowStart: at("00:00:10")}
	if m.key != "M|t3" || !reflect.DeepEqual(m.val, want) {
		t.Errorf("packed %s => %+v, want M|t3 => %+v", m.key, m.val, want)
	}
	// The slot of (M, window 0, rank 1) holds its first item only: the one
	// that completed the pair is not written (slot).
	slot := p.slot(t, slotKey("M", time.Date(2026, 12, 24, 0, 0, 0, 0, time.UTC).UnixMicro(), 1))
	if s := slot; s.Toy != "t1" || s.Box != "" || s.Closed {
		t.Errorf("slot state %+v, want toy t1 alone", slot)
	}
}

func TestCallbackClosingGivesUnpackedAndSpare(t *testing.T) {
	p := newTesterPipeline(t)
	// Window 00:00:00: two toys, one box. Window 00:00:10: one toy, two boxes.
	p.toy("t1", "M", at("00:00:01"))
	p.toy("t2", "M", at("00:00:02"))
	p.box("b1", "M", at("00:00:03"))
	p.box("b2", "M", at("00:00:11"))
	p.box("b3", "M", at("00:00:12"))
	p.toy("t3", "M", at("00:00:13"))
	got := drain(p.packed)
	if len(got) != 2 || got[0].key != "M|t1" || got[1].key != "M|t3" ||
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
	if want := (&results.Unpacked{ToyID: "t2", Size: "M", WindowStart: at("00:00:00")}); u.key != "M|t2" || !reflect.DeepEqual(u.val, want) {
		t.Errorf("unpacked %s => %+v, want M|t2 => %+v", u.key, u.val, want)
	}
	s := p.expectOne("spare", p.spare)
	if want := (&results.Spare{BoxID: "b3", Size: "M", WindowStart: at("00:00:10")}); s.key != "M|b3" || !reflect.DeepEqual(s.val, want) {
		t.Errorf("spare %s => %+v, want M|b3 => %+v", s.key, s.val, want)
	}
	p.expectNone("closing", p.packed, p.late, p.dead)
	clk := p.clock(t, "M")
	if len(clk.Open) != 0 || len(clk.Ev.Closed) != 2 {
		t.Errorf("clock after closing: open %+v, closed %+v", clk.Open, clk.Ev.Closed)
	}

	// A toy for the closed window is late, never a new unpacked row.
	p.toy("t4", "M", at("00:00:05"))
	p.expectNone("after closing", p.unpacked, p.spare, p.packed)
	if l := p.expectOne("late after closing", p.late); l.key != "toys|M|t4" {
		t.Errorf("late key %q", l.key)
	}
	// More heartbeats close nothing again.
	drain(p.slotTable)
	p.heartbeat(record.Toys, "M", at("00:01:00"))
	p.heartbeat(record.Boxes, "M", at("00:01:00"))
	p.expectNone("heartbeats after closing", p.unpacked, p.spare, p.packed, p.slotTable)
}

func TestCallbackLateRow(t *testing.T) {
	p := newTesterPipeline(t)
	p.toy("t1", "M", at("00:00:30"))
	// Window 00:00:00 ends at 10 s <= 30 s - 5 s: late. The row's made_at is
	// the record's, in UTC.
	p.toy("t2", "M", "2026-12-24T01:00:05.123+01:00")
	m := p.expectOne("late toy", p.late)
	want := &results.Late{Stream: "toys", ID: "t2", Size: "M", MadeAt: "2026-12-24T00:00:05.123Z"}
	if m.key != "toys|M|t2" || !reflect.DeepEqual(m.val, want) {
		t.Errorf("late %s => %+v, want toys|M|t2 => %+v", m.key, m.val, want)
	}

	// 1µs before the bound is on time: window 10 ends at 20 s > 24.999999 s - 5 s.
	p.box("b1", "M", at("00:00:24.999999"))
	p.box("b2", "M", at("00:00:15"))
	p.expectNone("1µs before the bound", p.late)
	// Exactly on the bound (prior_max - L == window_end) is late.
	p.box("b3", "M", at("00:00:25"))
	p.box("b4", "M", at("00:00:19.999999"))
	m = p.expectOne("late box", p.late)
	if want := (&results.Late{Stream: "boxes", ID: "b4", Size: "M", MadeAt: at("00:00:19.999999")}); m.key != "boxes|M|b4" || !reflect.DeepEqual(m.val, want) {
		t.Errorf("late %s => %+v, want boxes|M|b4 => %+v", m.key, m.val, want)
	}

	// Late records take no rank: b1 and b3 are ranks 1 and 2 of window 20.
	p.toy("t3", "M", at("00:00:25"))
	p.toy("t4", "M", at("00:00:26"))
	got := drain(p.packed)
	if len(got) != 2 || got[0].key != "M|t3" || got[0].val.(*results.Packed).BoxID != "b1" ||
		got[1].key != "M|t4" || got[1].val.(*results.Packed).BoxID != "b3" {
		t.Fatalf("packed %s, want t3/b1 and t4/b3", show(got))
	}
	// b3 moved the boxes' watermark to 20 s and t1 the toys' to 25 s: window
	// 10 closed with b2 alone in it.
	if s := p.expectOne("spare", p.spare); s.key != "M|b2" {
		t.Errorf("spare key %q, want M|b2", s.key)
	}
	p.expectNone("no more", p.late, p.dead, p.unpacked)
}

// TestCallbackRedeliveryNotCountedTwice replays each stage's input for an
// already handled record (the tester cannot redeliver one of its own offsets,
// so the replays are crafted) and checks that no rank is counted twice and
// that replayed outputs are byte-identical under the same key.
func TestCallbackRedeliveryNotCountedTwice(t *testing.T) {
	p := newTesterPipeline(t)
	toyValue := `{"toy_id":"t1","size":"M","made_at":"2026-12-24T00:00:01Z"}`
	offT := p.send(record.Toys, "M", toyValue)
	p.box("b1", "M", at("00:00:02"))
	first := p.expectOne("packed", p.packed)
	if st := p.dedupeEntry(t, "M|toys|i|t1"); st == nil || st.First != offT {
		t.Fatalf("dedupe entry of t1: %+v, want offset %d", st, offT)
	}
	lastClock := drain(p.clockTab)
	drain(p.slotTable)
	// The tester cannot deliver toys offset offT again, so the redelivery
	// comes through the clock group's loop, which hands a record to the same
	// decisions as the input callback (the way a stray record reaches them).
	observed := &validRecord{Stream: record.Toys, Partition: 0, Offset: offT, Size: "M", ID: "t1",
		MadeUS: time.Date(2026, 12, 24, 0, 0, 1, 0, time.UTC).UnixMicro(), MadeAt: at("00:00:01"),
		Raw: []byte(toyValue), Key: []byte("M")}
	redeliver := func(obs *validRecord) {
		t.Helper()
		p.tt.Consume(p.cfg.clockGroup()+"-loop", "M", obs)
		drain(p.clockLoop) // the crafted message itself
	}

	// 1. toys offset offT is delivered again (the group restarted before
	// committing it): its dedupe entry says it is the first with its id,
	// and the clock skips an offset it has applied.
	redeliver(observed)
	p.expectNone("redelivered record", p.clockTab, p.slotTable, p.dead, p.packed)

	// 2. The clock table event that packed t1 is consumed again by the slots
	// stage: the same packed row again, same key, same value.
	p.tt.Consume(string(goka.GroupTable(goka.Group(p.cfg.clockGroup()))), "M", lastClock[len(lastClock)-1].val)
	drain(p.clockTab) // the crafted message itself
	again := p.expectOne("replayed packed", p.packed)
	if again.key != first.key || !reflect.DeepEqual(again.val, first.val) {
		t.Errorf("replay produced %s => %+v, first %s => %+v", again.key, again.val, first.key, first.val)
	}
	drain(p.slotTable)

	// 3. A duplicate, then its redelivery: the same dead letter again
	// (consumers deduplicate by key), and no state change.
	offDup := p.toy("t1", "M", at("00:00:03"))
	dup := p.expectOne("duplicate", p.dead)
	if c := drain(p.clockTab); len(c) != 1 || c[0].val.(*decision).Class != classDuplicate {
		t.Fatalf("clock of the duplicate: %s", show(c))
	}
	dupObs := *observed
	dupObs.Offset, dupObs.MadeUS, dupObs.MadeAt = offDup, time.Date(2026, 12, 24, 0, 0, 3, 0, time.UTC).UnixMicro(), at("00:00:03")
	dupObs.Raw = []byte(*dup.val.(*DeadLetter).Value)
	redeliver(&dupObs)
	p.expectNone("duplicate redelivered", p.clockTab)
	dup2 := p.expectOne("duplicate redelivered", p.dead)
	if dup2.key != dup.key || dup.key != fmt.Sprintf("toys/0/%d", offDup) || !reflect.DeepEqual(dup2.val, dup.val) {
		t.Errorf("redelivered duplicate %s, first %s", show([]kv{dup2}), show([]kv{dup}))
	}
	// The original redelivered after the duplicate: nothing.
	redeliver(observed)
	p.expectNone("old record redelivered", p.dead, p.clockTab)
	if st := p.dedupeEntry(t, "M|toys|i|t1"); st == nil || st.First != offT {
		t.Errorf("dedupe entry of t1 after the replays: %+v, want offset %d", st, offT)
	}

	// 5. Had t1 been counted twice, the next box (rank 2) would pack with it.
	p.box("b2", "M", at("00:00:04"))
	p.expectNone("second box", p.packed)
	p.heartbeat(record.Toys, "M", at("00:00:15"))
	p.heartbeat(record.Boxes, "M", at("00:00:15"))
	s := p.expectOne("spare", p.spare)
	if s.key != "M|b2" {
		t.Errorf("spare key %q", s.key)
	}
	p.expectNone("end", p.unpacked, p.packed)
}

// expectRecovered recovers the two groups' tables as goka does after a
// restart, from their changelogs (every record since the pipeline started)
// through the update callbacks of a new packer, and fails unless that gives
// the states the callbacks built: the same clocks, dedupe entries and slots.
func (p *testerPipeline) expectRecovered(t *testing.T) {
	t.Helper()
	fresh, err := New(p.cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	build := fresh.storageBuilder(gokastore.Memory())
	recover := func(table string, q *tester.QueueTracker, c goka.Codec, update goka.UpdateCallback, live storage.Storage) {
		t.Helper()
		recovered, err := build(table, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range drain(q) {
			enc, err := c.Encode(m.val)
			if err == nil {
				// goka hands the callback its own proxy of the storage.
				err = update(changelogRecord{topic: table, offset: int64(i)}, struct{ storage.Storage }{recovered}, m.key, enc)
			}
			if err != nil {
				t.Fatalf("recover %s offset %d: %v", table, i, err)
			}
		}
		want, got := storageContents(t, live), storageContents(t, recovered)
		if len(want) < 5 || !reflect.DeepEqual(got, want) {
			t.Errorf("recovered %s differs from the live storage (%d keys, want %d):\n got %q\nwant %q", table, len(got), len(want), got, want)
		}
	}
	recover(p.cfg.clockTable(), p.clockTab, binCodec[decision, *decision]{}, fresh.recoverClock, p.pk.clocks.m[0].st)
	recover(p.cfg.slotTable(), p.slotTable, binCodec[slotWrite, *slotWrite]{}, fresh.recoverSlots, p.pk.slots.m[0].st)
	got, want := fresh.clocks.m[0].clocks, p.pk.clocks.m[0].clocks
	if len(want) == 0 || !reflect.DeepEqual(got, want) {
		t.Errorf("recovered clocks differ from the live ones:\n got %+v\nwant %+v", got, want)
	}
}

func storageContents(t *testing.T, st storage.Storage) map[string]string {
	t.Helper()
	it, err := st.Iterator()
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
// duplicates, late, heartbeats, four sizes) through the two groups and
// compares the outputs, deduplicated by key as a consumer would, with the
// batch reference implementation.
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
			add := func(x record.Stream, key, value string) {
				off := p.send(x, key, value)
				inputs = append(inputs, record.Input{Stream: x, Topic: p.pk.topicOf(x), Partition: 0, Offset: off, Key: []byte(key), Value: []byte(value)})
			}
			cursor := map[string]time.Duration{}
			for range 60 + r.IntN(60) {
				x := record.Toys
				if r.IntN(2) == 0 {
					x = record.Boxes
				}
				size := record.Sizes[r.IntN(2)]
				if r.IntN(5) == 0 {
					size = record.Sizes[2+r.IntN(2)]
				}
				cursor[size] += time.Duration(r.IntN(1500)) * time.Millisecond
				made := base.Add(cursor[size] + time.Duration(r.IntN(14_000)-11_000)*time.Millisecond + time.Duration(r.IntN(1000))*time.Microsecond)
				ts := record.FormatTime(made)
				id := fmt.Sprintf("%c%d", x[0], r.IntN(40))
				switch k := r.IntN(20); {
				case k == 0:
					add(x, size, `{"oops"`)
				case k == 1:
					add(x, "L", fmt.Sprintf(`{%q:%q,"size":%q,"made_at":%q}`, x.IDField(), id, size, ts))
				case k < 4:
					add(x, size, fmt.Sprintf(`{"heartbeat":true,"size":%q,"made_at":%q}`, size, ts))
				default:
					add(x, size, fmt.Sprintf(`{%q:%q,"size":%q,"made_at":%q}`, x.IDField(), id, size, ts))
				}
			}
			closeAll := seed%2 == 0
			if closeAll {
				for _, size := range record.Sizes {
					ts := record.FormatTime(base.Add(cursor[size] + time.Minute))
					add(record.Toys, size, fmt.Sprintf(`{"heartbeat":true,"size":%q,"made_at":%q}`, size, ts))
					add(record.Boxes, size, fmt.Sprintf(`{"heartbeat":true,"size":%q,"made_at":%q}`, size, ts))
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
			p.expectRecovered(t)
			if len(want.Packed) == 0 || len(want.Dead) == 0 {
				t.Logf("weak seed: %+v", want.Counts())
			}
		})
	}
}

package packer

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/storage"

	"github.com/northpole-workshop/northpole/internal/gokastore"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
)

// unitPipeline runs the group's callbacks directly, without goka: an input
// record goes through observe (and so admit, the clock and the slots), and
// each decision the clock sets is encoded as goka would write it to the
// clock table and acknowledged at its offset there, as goka tells the
// storage (held.SetOffset). goka's tester does the same wiring, but at a
// cost per record that rules out the long runs which show that state stays
// bounded, and without the table's records at hand, which restarts from a
// suffix need. Every record is in partition 0, and the packer has one
// partition, so no record is looped.
type unitPipeline struct {
	t     testing.TB
	pk    *Packer
	cfg   Config
	next  map[record.Stream]int64 // the next input offset of each stream
	table []tableRecord           // the clock table, record i at offset i
	acked int                     // the table records acknowledged
	loops int64                   // the next loop offset (redeliver)
	rows  []unitRow               // everything written to an output, in order
	// held is the clock table's storage as goka holds it; clockStore
	// counts the calls to the storage beneath, for what a callback must
	// not do.
	held       storage.Storage
	clockStore *countingStorage
}

// tableRecord is one record of the clock table.
type tableRecord struct {
	offset int64
	key    string
	value  []byte
}

// unitRow is one record the group wrote to an output topic, processing the
// record at offset of input.
type unitRow struct {
	input, topic, key string
	offset            int64
	val               any
}

func newUnitPipeline(t testing.TB, edit ...func(*Config)) *unitPipeline {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Kafka.Brokers = []string{"unused:9092"}
	for _, e := range edit {
		e(&cfg)
	}
	return startUnit(t, cfg, nil, [nInputs]int64{})
}

// startUnit builds a packer and the storage goka would build for its table.
// With table, it starts as a restart does from that table (the records the
// clock table holds, from its oldest kept): goka recovers the table through
// recoverClock, with committed the group's committed offsets of toys, boxes
// and the loop, and marks it recovered.
func startUnit(t testing.TB, cfg Config, table []tableRecord, committed [nInputs]int64) *unitPipeline {
	t.Helper()
	cfg.Partitions = 1
	pk, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	u := &unitPipeline{t: t, pk: pk, cfg: cfg, next: map[record.Stream]int64{}}
	pk.clockStores.open = func(partition int32, part *tablePart) error {
		if partition != 0 {
			return fmt.Errorf("open partition %d", partition)
		}
		part.committed = committed
		return nil
	}
	mem := gokastore.Memory()
	build := pk.storageBuilder(func(topic string, partition int32) (storage.Storage, error) {
		store, err := mem(topic, partition)
		if err == nil {
			u.clockStore = &countingStorage{Storage: store}
			return u.clockStore, nil
		}
		return store, err
	})
	store, err := build(cfg.clockTable(), 0)
	if err == nil {
		err = store.Open()
	}
	if err != nil {
		t.Fatal(err)
	}
	u.held = store
	for _, r := range table {
		// goka hands the callback its own proxy of the storage.
		if err := pk.recoverClock(changelogRecord{topic: cfg.clockTable(), offset: r.offset}, struct{ storage.Storage }{store}, r.key, r.value); err != nil {
			t.Fatalf("recover the clock table at offset %d: %v", r.offset, err)
		}
		if err := store.SetOffset(r.offset); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.MarkRecovered(); err != nil {
		t.Fatal(err)
	}
	// The table keeps its offsets: the records below the oldest kept are
	// gone, and never read again.
	if len(table) > 0 {
		u.table = append(make([]tableRecord, table[0].offset), table...)
	}
	u.acked = len(u.table)
	return u
}

func (u *unitPipeline) clockPart() *tablePart { return u.pk.clockStores.parts()[0] }

// send runs one raw input record through the group; it returns its offset.
func (u *unitPipeline) send(x record.Stream, key, value string) int64 {
	off := u.next[x]
	u.next[x]++
	u.pk.observe(x)(u.ctx(u.pk.topicOf(x), key, off), []byte(value))
	u.ack()
	return off
}

// committed are the offsets of the inputs after every record sent: what
// the group has committed once it processed them all.
func (u *unitPipeline) committed() [nInputs]int64 {
	return [nInputs]int64{u.next[record.Toys], u.next[record.Boxes], u.loops}
}

func (u *unitPipeline) toy(id, size, made string) int64 {
	return u.send(record.Toys, size, toyValue(id, size, made))
}

func (u *unitPipeline) box(id, size, made string) int64 {
	return u.send(record.Boxes, size, boxValue(id, size, made))
}

func (u *unitPipeline) heartbeat(x record.Stream, size, made string) int64 {
	return u.send(x, size, heartbeatValue(size, made))
}

func toyValue(id, size, made string) string {
	return fmt.Sprintf(`{"toy_id":%q,"kind":"teddy-bear","size":%q,"elf":"e","made_at":%q}`, id, size, made)
}

func boxValue(id, size, made string) string {
	return fmt.Sprintf(`{"box_id":%q,"size":%q,"elf":"e","made_at":%q}`, id, size, made)
}

func heartbeatValue(size, made string) string {
	return fmt.Sprintf(`{"heartbeat":true,"size":%q,"elf":"e","made_at":%q}`, size, made)
}

// redeliver hands obs to the group again, as the loop of a stray record
// does: the way to deliver an input offset a second time.
func (u *unitPipeline) redeliver(obs *validRecord) {
	u.pk.stray(u.ctx(u.cfg.clockLoop(), obs.Line, u.loops), obs)
	u.loops++
	u.ack()
}

// ack acknowledges the table records written and not yet acknowledged,
// as goka does: it tells the storage each one's offset, but for offset 0.
func (u *unitPipeline) ack() {
	for ; u.acked < len(u.table); u.acked++ {
		if off := u.table[u.acked].offset; off != 0 {
			if err := u.held.SetOffset(off); err != nil {
				u.t.Fatal(err)
			}
		}
	}
}

func decodeDecision(t testing.TB, b []byte) *decision {
	t.Helper()
	v, err := binCodec[decision, *decision]{}.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return v.(*decision)
}

func (u *unitPipeline) ctx(topic, key string, offset int64) *unitCtx {
	return &unitCtx{u: u, topic: topic, key: key, offset: offset}
}

// take returns the rows written since the last take, of the topics given
// (all when none is).
func (u *unitPipeline) take(topics ...string) []unitRow {
	var got, rest []unitRow
	for _, r := range u.rows {
		if len(topics) == 0 || slices.Contains(topics, r.topic) {
			got = append(got, r)
		} else {
			rest = append(rest, r)
		}
	}
	u.rows = rest
	return got
}

// unitArrival is every input record's Kafka timestamp in the unit pipeline.
var unitArrival = time.Date(2026, 12, 24, 0, 0, 0, 0, time.UTC)

// gokaCtx names the embedded goka.Context, whose Context method unitCtx
// has its own of.
type gokaCtx = goka.Context

// unitCtx is the goka.Context of one callback: what the packer's callbacks
// call of it. Anything else panics on the nil embedded Context.
type unitCtx struct {
	gokaCtx
	u          *unitPipeline
	topic, key string
	offset     int64
}

func (c *unitCtx) Topic() goka.Stream       { return goka.Stream(c.topic) }
func (c *unitCtx) Key() string              { return c.key }
func (c *unitCtx) Partition() int32         { return 0 }
func (c *unitCtx) Offset() int64            { return c.offset }
func (c *unitCtx) Headers() goka.Headers    { return nil }
func (c *unitCtx) Timestamp() time.Time     { return unitArrival }
func (c *unitCtx) Context() context.Context { return context.Background() }
func (c *unitCtx) Fail(err error) {
	c.u.t.Fatalf("callback at %s offset %d failed: %v", c.topic, c.offset, err)
}

// SetValue encodes v at once, as goka does: the clock hands over its own
// state's decision, which the next record changes.
func (c *unitCtx) SetValue(v any, _ ...goka.ContextOption) {
	b, err := binCodec[decision, *decision]{}.Encode(v)
	if err == nil {
		err = c.u.clockPart().store.Set(c.key, b)
	}
	if err != nil {
		c.u.t.Fatal(err)
	}
	c.u.table = append(c.u.table, tableRecord{offset: int64(len(c.u.table)), key: c.key, value: b})
}

func (c *unitCtx) Emit(topic goka.Stream, key string, v any, _ ...goka.ContextOption) {
	c.u.rows = append(c.u.rows, unitRow{input: c.topic, topic: string(topic), key: key, offset: c.offset, val: v})
}

func (c *unitCtx) Loopback(key string, _ any, _ ...goka.ContextOption) {
	c.u.t.Fatalf("record of %s looped: the unit pipeline has one partition", key)
}

// countingStorage counts the reads and writes of a storage.
type countingStorage struct {
	storage.Storage
	gets, sets, deletes int
}

func (s *countingStorage) Get(key string) ([]byte, error) { s.gets++; return s.Storage.Get(key) }
func (s *countingStorage) Set(key string, v []byte) error { s.sets++; return s.Storage.Set(key, v) }
func (s *countingStorage) Delete(key string) error        { s.deletes++; return s.Storage.Delete(key) }

func (s *countingStorage) calls() [3]int { return [3]int{s.gets, s.sets, s.deletes} }

// dedupeEntry is one id that a line's window lists for a stream.
type dedupeEntry struct {
	size   string
	stream record.Stream
	window int64
	id     string // as the decision carries it (carryID)
}

// entryOf is the dedupe entry an item of window sets.
func entryOf(rec *validRecord, window int64) dedupeEntry {
	return dedupeEntry{size: rec.Line, stream: rec.Stream, window: window, id: rec.ID}
}

// entryName is an entry as text, for messages and comparisons.
func entryName(rec *validRecord, window int64) string {
	e := entryOf(rec, window)
	return e.name()
}

func (e dedupeEntry) name() string {
	return e.size + "|" + string(e.stream) + "|" + strconv.FormatInt(e.window, 10) + "|" + e.id
}

// dedupeEntries are the dedupe entries the key clocks of a partition list,
// by name. Each is listed once, in a window listed once, windows in order,
// and each is found by the window's lookup (has), index or not.
func dedupeEntries(t testing.TB, part *tablePart) map[string]dedupeEntry {
	t.Helper()
	out := map[string]dedupeEntry{}
	for line, kc := range part.keyClocks {
		for x, ws := range kc.ids {
			stream := []record.Stream{record.Toys, record.Boxes}[x]
			for i, w := range ws {
				if i > 0 && ws[i-1].start >= w.start {
					t.Errorf("line %s stream %s: windows listed out of order: %d then %d", line, stream, ws[i-1].start, w.start)
				}
				ids := windowIDList(w.ids)
				if len(ids) == 0 || len(ids) != w.n {
					t.Errorf("line %s stream %s: window %d lists %d ids, counts %d", line, stream, w.start, len(ids), w.n)
				}
				if (w.index != nil) != (w.n > scanIDs) {
					t.Errorf("line %s stream %s: window %d of %d ids indexed %v", line, stream, w.start, w.n, w.index != nil)
				}
				for _, id := range ids {
					e := dedupeEntry{size: line, stream: stream, window: w.start, id: id}
					if _, ok := out[e.name()]; ok {
						t.Errorf("dedupe entry %q listed twice", e.name())
					}
					out[e.name()] = e
					if !ws.has(w.start, id, hashID) {
						t.Errorf("dedupe entry %q listed but not found", e.name())
					}
				}
			}
		}
	}
	return out
}

// windowIDList splits an idWindow's ids.
func windowIDList(b []byte) []string {
	var out []string
	for len(b) > 0 {
		l, n := binary.Uvarint(b)
		out = append(out, string(b[n:n+int(l)]))
		b = b[n+int(l):]
	}
	return out
}

func TestDedupeWindowIDsAddForget(t *testing.T) {
	long := strings.Repeat("k", 300) // a length that takes two bytes as a uvarint
	type add struct {
		start int64
		id    string
	}
	for _, c := range []struct {
		name       string
		adds       []add
		wm         int64
		forgotten  int
		keptStarts []int64
	}{
		{"nothing listed", nil, 100, 0, nil},
		{"a window is forgotten once the watermark reaches its end",
			[]add{{0, "a"}, {0, "b"}, {10, "c"}}, 10, 2, []int64{10}},
		{"not 1µs before",
			[]add{{0, "a"}, {10, "c"}}, 9, 0, []int64{0, 10}},
		{"several windows at once, oldest first",
			[]add{{0, "a"}, {10, "b"}, {20, "c"}, {30, "d"}}, 30, 3, []int64{30}},
		{"windows added out of order are kept in order",
			[]add{{20, "c"}, {0, "a"}, {10, "b"}, {0, "a2"}, {-10, "z"}}, 15, 3, []int64{10, 20}},
		{"ids of any length",
			[]add{{0, long}, {0, ""}, {0, "x|y"}, {10, long + "2"}}, 10, 3, []int64{10}},
		{"negative windows",
			[]add{{-30, "a"}, {-20, "b"}}, -20, 1, []int64{-20}},
		{"a stream without records forgets nothing",
			[]add{{-1 << 40, "a"}}, paramsUS{WindowUS: 10}.watermark(streamClock{}), 0, []int64{-1 << 40}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var w windowIDs
			for _, a := range c.adds {
				w.add(a.start, a.id, hashID)
			}
			for _, a := range c.adds {
				if !w.has(a.start, a.id, hashID) {
					t.Errorf("window %d: id %q added but not found", a.start, a.id)
				}
				if w.has(a.start+1, a.id, hashID) || w.has(a.start, a.id+"?", hashID) {
					t.Errorf("window %d: found an id of another window, or one never added", a.start)
				}
			}
			if n := w.forget(c.wm, 10); n != c.forgotten {
				t.Errorf("forgot %d ids, want %d", n, c.forgotten)
			}
			var starts []int64
			for _, e := range w {
				starts = append(starts, e.start)
			}
			if !slices.Equal(starts, c.keptStarts) {
				t.Errorf("windows kept %v, want %v", starts, c.keptStarts)
			}
			for _, a := range c.adds {
				if kept := slices.Contains(c.keptStarts, a.start); w.has(a.start, a.id, hashID) != kept {
					t.Errorf("after forgetting, id %q of window %d found %v, want %v", a.id, a.start, !kept, kept)
				}
			}
			if n := w.forget(1<<62, 10); n != len(c.adds)-c.forgotten || len(w) != 0 {
				t.Errorf("forgetting the rest forgot %d, want %d (left %d windows)", n, len(c.adds)-c.forgotten, len(w))
			}
		})
	}
}

// TestDedupeWindowIndex: a window with more ids than scanIDs finds them by
// their hash, and an id that shares its hash with another (forced here: a
// window is given the hash it indexes by) is still told apart from it, whichever
// came first, before and after the index is built.
func TestDedupeWindowIndex(t *testing.T) {
	for _, n := range []int{1, scanIDs, scanIDs + 1, 200} {
		for _, collide := range []bool{false, true} {
			hash := hashID
			if collide {
				hash = func(id string) uint64 { return uint64(len(id) % 3) }
			}
			var w windowIDs
			var added []string
			for i := range n {
				id := fmt.Sprintf("id-%d", i*7)
				w.add(0, id, hash)
				added = append(added, id)
				for _, a := range added {
					if !w.has(0, a, hash) {
						t.Fatalf("n=%d collide=%v: %q not found after %d ids", n, collide, a, i+1)
					}
				}
				for _, never := range []string{"id-1", "id-" + strconv.Itoa(i*7+1), "", "x"} {
					if w.has(0, never, hash) {
						t.Fatalf("n=%d collide=%v: %q found, never added", n, collide, never)
					}
				}
			}
			if got := w[0].index != nil; got != (n > scanIDs) {
				t.Errorf("n=%d: indexed %v", n, got)
			}
		}
	}
}

func micros(clock string) int64 {
	tm, err := time.Parse(time.RFC3339Nano, at(clock))
	if err != nil {
		panic(err)
	}
	return tm.UnixMicro()
}

// TestDedupeEntriesForgottenWithTheirStreamsWatermark: an item's entry
// lives until its own stream's watermark passes its window's end; the other
// stream's watermark, and the window's closing, have nothing to do with it.
func TestDedupeEntriesForgottenWithTheirStreamsWatermark(t *testing.T) {
	u := newUnitPipeline(t)
	w0, w10 := micros("00:00:00"), micros("00:00:10")
	toyA := entryName(&validRecord{Stream: record.Toys, Line: "M", ID: "a"}, w0)
	toyB := entryName(&validRecord{Stream: record.Toys, Line: "M", ID: "b"}, w10)
	boxA := entryName(&validRecord{Stream: record.Boxes, Line: "M", ID: "a"}, w0)
	expect := func(step string, keys ...string) {
		t.Helper()
		got := slices.Sorted(func(yield func(string) bool) {
			for k := range dedupeEntries(t, u.clockPart()) {
				if !yield(k) {
					return
				}
			}
		})
		slices.Sort(keys)
		if !slices.Equal(got, keys) {
			t.Errorf("%s: dedupe entries %q, want %q", step, got, keys)
		}
	}
	u.toy("a", "M", at("00:00:01"))
	u.box("a", "M", at("00:00:02"))
	u.toy("b", "M", at("00:00:11"))
	expect("items", toyA, boxA, toyB)
	// Heartbeats, late records and duplicates set no entry.
	u.heartbeat(record.Toys, "M", at("00:00:14.999999"))
	u.toy("a", "M", at("00:00:03"))
	expect("toys' watermark 1µs short of window 0's end", toyA, boxA, toyB)
	u.heartbeat(record.Toys, "M", at("00:00:15"))
	expect("toys' watermark at window 0's end", boxA, toyB)
	// Window 0 is still open (the boxes' watermark is far behind), and a
	// toy of it would be late: late is decided before duplicate.
	if n := len(u.pk.clockStores.parts()[0].keyClocks["M"].Open); n != 2 {
		t.Fatalf("%d windows open, want 2", n)
	}
	u.take()
	off := u.toy("a", "M", at("00:00:04"))
	if rows := u.take(u.cfg.Topics.Late, u.cfg.Topics.Dead); len(rows) != 1 || rows[0].topic != u.cfg.Topics.Late || rows[0].key != lateKey("toys", 0, off) {
		t.Errorf("a toy of window 0 after its entries were forgotten: %+v, want one late row", rows)
	}
	u.heartbeat(record.Boxes, "M", at("00:00:25"))
	expect("boxes' watermark past both windows", toyB)
	u.heartbeat(record.Toys, "M", at("00:00:25"))
	expect("both past both windows")
}

// TestDedupeRedeliveryWritesNothing: a record the clock applied already
// (the group restarted before committing it) is recognised before its id
// is looked up, and nothing at all is written: no table record, no entry,
// no row. That holds for an item whose entry has been forgotten since, and
// for a duplicate, whose dead letter is in the table already.
func TestDedupeRedeliveryWritesNothing(t *testing.T) {
	u := newUnitPipeline(t)
	obs := func(x record.Stream, off int64, id, made string) *validRecord {
		value := toyValue(id, "M", at(made))
		if x == record.Boxes {
			value = boxValue(id, "M", at(made))
		}
		return &validRecord{Stream: x, Partition: 0, Offset: off, Line: "M", ID: id, MadeUS: micros(made),
			Raw: []byte(value), Key: []byte("M")}
	}
	item := u.toy("a", "M", at("00:00:01"))
	dup := u.toy("a", "M", at("00:00:02"))
	u.box("x", "M", at("00:00:03"))
	u.heartbeat(record.Toys, "M", at("00:00:30")) // toys' entries of window 0 forgotten
	late := u.toy("a", "M", at("00:00:04"))
	u.take()
	for _, c := range []struct {
		name string
		obs  *validRecord
	}{
		{"an item whose entry was forgotten", obs(record.Toys, item, "a", "00:00:01")},
		{"a duplicate", obs(record.Toys, dup, "a", "00:00:02")},
		{"an item whose entry is still set", obs(record.Boxes, 0, "x", "00:00:03")},
		{"a late record", obs(record.Toys, late, "a", "00:00:04")},
	} {
		t.Run(c.name, func(t *testing.T) {
			before, table := u.clockStore.calls(), len(u.table)
			clockBefore := cloneClock(*u.clockPart().keyClocks["M"])
			u.redeliver(c.obs)
			if got := u.clockStore.calls(); got != before {
				t.Errorf("storage calls (get, set, delete) went from %v to %v", before, got)
			}
			if len(u.table) != table {
				t.Errorf("%d table records written", len(u.table)-table)
			}
			if rows := u.take(); len(rows) > 0 {
				t.Errorf("rows written: %+v", rows)
			}
			if kc := u.clockPart().keyClocks["M"]; !reflect.DeepEqual(cloneClock(*kc), clockBefore) {
				t.Errorf("clock changed:\n got %+v\nwant %+v", *kc, clockBefore)
			}
		})
	}
}

// TestDedupeDeadLetterFromDecision: the decision of a duplicate holds the
// raw record, and its dead letter is written from the decision alone: again,
// the same, when a restart replays it.
func TestDedupeDeadLetterFromDecision(t *testing.T) {
	u := newUnitPipeline(t)
	u.toy("a", "M", at("00:00:01"))
	raw := `{"toy_id":"a","size":"M","made_at":"2026-12-24T00:00:02Z","note":"` + strings.Repeat("é", 10) + `"}`
	off := u.send(record.Toys, "M", raw)
	rows := u.take()
	if len(rows) != 1 || rows[0].topic != u.cfg.Topics.Dead || rows[0].key != deadKey("toys", 0, off) {
		t.Fatalf("rows of the duplicate: %+v, want one dead letter", rows)
	}
	dl := rows[0].val.(*DeadLetter)
	if dl.Reason != record.ReasonDuplicate || dl.Stream != record.Toys || dl.Topic != "toys" || dl.Partition != 0 || dl.Offset != off ||
		dl.Key != "M" || dl.Value == nil || *dl.Value != raw || !dl.ValueCut.IsZero() || !strings.Contains(dl.Detail, `"a"`) {
		t.Errorf("dead letter %+v", dl)
	}
	ev := decodeDecision(t, u.table[len(u.table)-1].value)
	if ev.Class != classDuplicate || !ev.Rec.Dup || string(ev.Rec.Raw) != raw || string(ev.Rec.Key) != "M" {
		t.Errorf("decision of the duplicate: %+v", ev)
	}
	// Every other decision carries no raw record.
	for _, r := range u.table[:len(u.table)-1] {
		if ev := decodeDecision(t, r.value); ev.Rec.Raw != nil || ev.Rec.Key != nil || ev.Rec.Dup {
			t.Errorf("decision of a %s carries raw %q, key %q, dup %v", ev.Class, ev.Rec.Raw, ev.Rec.Key, ev.Rec.Dup)
		}
	}
	// A restart that did not commit the duplicate replays its decision
	// when the record comes again: the same dead letter again.
	re := startUnit(t, u.cfg, u.table, [nInputs]int64{inToys: off})
	re.next[record.Toys] = off
	re.send(record.Toys, "M", raw)
	if again := re.take(); len(again) != 1 || again[0].key != rows[0].key || !reflect.DeepEqual(again[0].val, rows[0].val) {
		t.Errorf("replayed decision wrote %+v, want %+v", again, rows)
	}
}

// TestDedupeHugeDuplicateFits: the raw value that a duplicate's decision
// carries is cut so that the decision fits in one record, also when it
// closes a window, and its dead letter says how long the whole value was
// and what its digest is.
func TestDedupeHugeDuplicateFits(t *testing.T) {
	u := newUnitPipeline(t)
	u.pk.lim = limits{record: minRecordBytes}
	huge := func(made, pad string) string {
		return `{"toy_id":"a","size":"M","made_at":"` + at(made) + `","pad":"` + strings.Repeat(pad, 2*minRecordBytes) + `"}`
	}
	u.box("b", "M", at("00:00:01"))
	u.toy("a", "M", at("00:00:01"))
	raw := huge("00:00:09", "x")
	off := u.send(record.Toys, "M", raw)
	rows := u.take(u.cfg.Topics.Dead)
	if len(rows) != 1 {
		t.Fatalf("dead letters %+v, want the duplicate's", rows)
	}
	if dl := rows[0].val.(*DeadLetter); dl.Offset != off || dl.ValueCut != results.CutOf([]byte(raw)) || dl.Value == nil || !strings.HasPrefix(raw, *dl.Value) {
		t.Errorf("dead letter of a huge duplicate: %+v, want its value cut and described", dl)
	}
	// The boxes' watermark passes window 0's end, and a duplicate of
	// window 10 moves the toys' there too: its decision closes window 0.
	u.heartbeat(record.Boxes, "M", at("00:00:30"))
	u.toy("a", "M", at("00:00:10"))
	dup := u.send(record.Toys, "M", huge("00:00:19.9", "y"))
	var closing *decision
	for _, r := range u.table {
		if n := len(r.key) + len(r.value); n > u.pk.lim.room() {
			t.Errorf("table record at %d takes %d bytes, room %d", r.offset, n, u.pk.lim.room())
		}
		if ev := decodeDecision(t, r.value); ev.Class == classDuplicate && ev.Rec.Offset == dup {
			closing = ev
		}
	}
	if closing == nil || len(closing.Closed) != 1 || closing.Closed[0].Start != micros("00:00:00") {
		t.Errorf("the second duplicate's decision %+v, want one that closes window 0", closing)
	}
}

// TestDedupeAcrossSourcePartitions: when a producer breaks the contract
// and one (stream, size) arrives from two partitions, an offset of one
// says nothing about the other: a record of the second partition is
// decided (a duplicate, here), never mistaken for a redelivery, and each
// partition's own redeliveries write nothing.
func TestDedupeAcrossSourcePartitions(t *testing.T) {
	u := newUnitPipeline(t)
	obs := func(part int32, off int64, made string) *validRecord {
		value := toyValue("a", "M", at(made))
		return &validRecord{Stream: record.Toys, Partition: part, Offset: off, Line: "M", ID: "a", MadeUS: micros(made),
			Raw: []byte(value), Key: []byte("M")}
	}
	for i, s := range []struct {
		obs   *validRecord
		class class // "" for a redelivery: nothing written
	}{
		{obs(0, 50, "00:00:01"), classItem},
		{obs(3, 5, "00:00:02"), classDuplicate}, // a lower offset of another partition
		{obs(0, 50, "00:00:01"), ""},
		{obs(3, 5, "00:00:02"), ""},
		{obs(3, 50, "00:00:03"), classDuplicate}, // the first's offset, in another partition
		{obs(0, 51, "00:00:11"), classItem},      // the same id in another window
		{obs(3, 51, "00:00:12"), classDuplicate},
	} {
		n := len(u.table)
		u.redeliver(s.obs)
		rows := u.take()
		switch {
		case s.class == "" && (len(u.table) != n || len(rows) != 0):
			t.Errorf("step %d (%d@%d): a redelivery wrote %d decisions and %+v", i, s.obs.Partition, s.obs.Offset, len(u.table)-n, rows)
		case s.class == "":
		case len(u.table) != n+1:
			t.Errorf("step %d (%d@%d): %d decisions written, want 1", i, s.obs.Partition, s.obs.Offset, len(u.table)-n)
		default:
			if ev := decodeDecision(t, u.table[n].value); ev.Class != s.class {
				t.Errorf("step %d (%d@%d): %s, want %s", i, s.obs.Partition, s.obs.Offset, ev.Class, s.class)
			}
			if dead := s.class == classDuplicate; dead != (len(rows) == 1 && rows[0].key == deadKey("toys", s.obs.Partition, s.obs.Offset)) {
				t.Errorf("step %d (%d@%d): rows %+v", i, s.obs.Partition, s.obs.Offset, rows)
			}
		}
	}
}

// randomInputs are n input records of the four sizes, in offset order per
// stream, with what makes every classification happen: ids reused within
// a window (duplicates) and across windows (new items), records behind
// their stream's clock (late), exact re-sends of earlier records (a
// duplicate while the window is open for the stream, late once it has
// closed), heartbeats, and a few dead letters.
type randomInput struct {
	x          record.Stream
	key, value string
}

func randomInputs(r *rand.Rand, n int, base time.Time) []randomInput {
	var out []randomInput
	var sent []randomInput
	cursor := map[string]time.Duration{}
	for range n {
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
		id := fmt.Sprintf("%c%d", x[0], r.IntN(30))
		var in randomInput
		switch k := r.IntN(20); {
		case k == 0:
			in = randomInput{x, size, `{"oops"`}
		case k == 1:
			in = randomInput{x, "L", fmt.Sprintf(`{%q:%q,"size":%q,"made_at":%q}`, x.IDField(), id, size, ts)}
		case k < 4:
			in = randomInput{x, size, fmt.Sprintf(`{"heartbeat":true,"size":%q,"made_at":%q}`, size, ts)}
		case k < 6 && len(sent) > 0:
			in = sent[len(sent)-1-r.IntN(min(len(sent), 40))]
		default:
			in = randomInput{x, size, fmt.Sprintf(`{%q:%q,"size":%q,"made_at":%q}`, x.IDField(), id, size, ts)}
			sent = append(sent, in)
		}
		out = append(out, in)
	}
	return out
}

// finalHeartbeats close every window of inputs that start at base: the
// elves' last records.
func finalHeartbeats(inputs []randomInput, base time.Time) []randomInput {
	end := base.Add(time.Duration(len(inputs)) * 1500 * time.Millisecond).Add(time.Minute)
	var out []randomInput
	for _, size := range record.Sizes {
		for _, x := range []record.Stream{record.Toys, record.Boxes} {
			out = append(out, randomInput{x, size, heartbeatValue(size, record.FormatTime(end))})
		}
	}
	return out
}

// expectBounded fails unless the packer keeps state only for what is still
// open: the dedupe entries exactly of the items of windows that their own
// stream's watermark has not passed (model holds every item, by window),
// and slots only of windows not closed.
func (u *unitPipeline) expectBounded(what string, items map[dedupeEntry]bool) {
	t := u.t
	t.Helper()
	p := u.pk.params
	want := map[dedupeEntry]bool{}
	for e := range items {
		kc := u.clockPart().keyClocks[e.size]
		if p.watermark(*kc.stream(e.stream)) < e.window+p.WindowUS {
			want[e] = true
		}
	}
	got := map[dedupeEntry]bool{}
	for _, e := range dedupeEntries(t, u.clockPart()) {
		got[e] = true
	}
	if !reflect.DeepEqual(got, want) {
		for e := range got {
			if !want[e] {
				t.Errorf("%s: dedupe entry %+v kept, its window closed for its stream or no such item", what, e)
			}
		}
		for e := range want {
			if !got[e] {
				t.Errorf("%s: no dedupe entry for item %+v of a window open for its stream", what, e)
			}
		}
		t.FailNow()
	}
	open := map[string]bool{}
	for size, kc := range u.clockPart().keyClocks {
		for _, w := range kc.Open {
			open[size+"|"+strconv.FormatInt(w.Start, 10)] = true
		}
	}
	for k := range slotContents(t, u.clockPart()) {
		i := strings.LastIndexByte(k, '|')
		if i < 0 || !open[k[:i]] {
			t.Fatalf("%s: slot %q kept, its window is not open", what, k)
		}
	}
}

// TestDedupeStateBoundedByOpenWindows runs many records through the
// groups and checks, all along, that the dedupe entries are exactly those
// of the items of windows still open for their stream, and the slots only
// those of windows still open: what the packer keeps does not grow with
// the records processed.
func TestDedupeStateBoundedByOpenWindows(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	base := time.Date(2026, 12, 24, 0, 0, 0, 0, time.UTC)
	u := newUnitPipeline(t)
	inputs := randomInputs(r, 20_000, base)
	items := map[dedupeEntry]bool{}
	most := 0
	for i, in := range append(inputs, finalHeartbeats(inputs, base)...) {
		n := len(u.table)
		u.send(in.x, in.key, in.value)
		if len(u.table) > n {
			if ev := decodeDecision(t, u.table[n].value); ev.Class == classItem {
				items[entryOf(&ev.Rec, ev.Window)] = true
			}
		}
		most = max(most, len(dedupeEntries(t, u.clockPart())))
		if i%97 == 0 || i >= len(inputs) {
			u.expectBounded(fmt.Sprintf("after input %d", i), items)
		}
	}
	if len(items) < 5000 {
		t.Fatalf("only %d items: a weak run", len(items))
	}
	if most > len(items)/20 {
		t.Errorf("up to %d dedupe entries for %d items", most, len(items))
	}
	if n := len(storageContents(t, u.clockPart().store)); n != 4 {
		t.Errorf("after the final heartbeats the clock storage holds %d keys, want the 4 sizes' decisions", n)
	}
	if n := len(slotContents(t, u.clockPart())); n != 0 {
		t.Errorf("after the final heartbeats the partition holds %d slots", n)
	}
	t.Logf("%d inputs, %d items, at most %d dedupe entries at once", len(inputs), len(items), most)
}

// slotName is a slot as text: line|window|rank.
func slotName(line string, window int64, rank int) string {
	return fmt.Sprintf("%s|%d|%d", line, window, rank)
}

// slotContents are the slots a partition holds, by slotName, each as text.
func slotContents(t testing.TB, part *tablePart) map[string]string {
	t.Helper()
	out := map[string]string{}
	part.eachSlot(func(ref slotRef, s *slotState) {
		out[slotName(ref.line, ref.window, ref.rank)] = fmt.Sprintf("%+v", *s)
	})
	return out
}

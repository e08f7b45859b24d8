package packer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/lovoo/goka"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
)

// The first half of the clock group: the input callback (observe) decides
// validity; admit decides lateness, then, for a toy or box that is not late,
// whether an earlier item of its window had its id (the window's dedupe
// entries), and decide (clock.go) applies the record to the clock of its
// key.

// observe validates an input record. Invalid records become dead letters
// right here: the decision depends on the record alone, so a replay repeats
// it exactly. A valid record is counted by the clock of its line, whose key
// lives in the partition its line hashes to; a record that a producer put in
// another partition is looped there first (stray).
func (p *Packer) observe(stream record.Stream) goka.ProcessCallback {
	return func(ctx goka.Context, msg any) {
		raw, _ := msg.([]byte)
		key := ctx.Key()
		r, err := record.Parse(stream, []byte(key), raw)
		p.aligner.processed(stream, ctx.Partition(), ctx.Offset(), r.MadeAtMicros(), err == nil)
		if p.metrics != nil {
			p.metrics.consume(streamIndex(stream), ctx.Partition(), ctx.Offset())
		}
		if err != nil {
			detail := err.Error()
			if ie := (*record.InvalidError)(nil); errors.As(err, &ie) {
				detail = ie.Detail
			}
			p.emitDead(ctx, newDeadLetter(stream, p.topicOf(stream), ctx.Partition(), ctx.Offset(), []byte(key), raw), record.ReasonOf(err), detail)
			return
		}
		obs := &validRecord{
			Stream: stream, Partition: ctx.Partition(), Offset: ctx.Offset(),
			Line: r.Line, ID: carryID(r.ID, p.lim.idMax()), Heartbeat: r.Heartbeat,
			MadeUS: r.MadeAtMicros(), MadeAt: record.FormatTime(r.MadeAt),
			Trace: p.traceOf(ctx),
		}
		if p.metrics != nil {
			obs.ArrivedUS = ctx.Timestamp().UnixMicro()
		}
		if !r.Heartbeat {
			// Kept only to report the record as a duplicate.
			obs.Raw, obs.Key = raw, []byte(key)
			p.fitRaw(obs, 0)
		}
		if ctx.Partition() == linePartition(r.Line, p.cfg.Partitions) {
			p.admit(ctx, obs)
			return
		}
		// record.Parse checked that the key is a well-formed line, so the
		// loop record reaches the line's partition.
		ctx.Loopback(r.Line, obs)
	}
}

// fitRaw cuts the raw value that a toy or box carries, for its dead letter
// should it be a duplicate, so that the record carrying it (a stray's loop
// record, the clock's decision) fits in one Kafka record beside the id and
// reserve bytes of other fields (the windows a decision closes).
func (p *Packer) fitRaw(obs *validRecord, reserve int) {
	if room := p.lim.room() - 2*len(obs.ID) - len(obs.Key) - reserve - 512; len(obs.Raw) > room {
		if obs.RawCut.IsZero() {
			obs.RawCut = results.CutOf(obs.Raw)
		}
		obs.Raw = prefixUTF8(obs.Raw, max(room, 0))
	}
}

// stray is a valid record that arrived in a partition other than its
// line's, now in its line's partition.
func (p *Packer) stray(ctx goka.Context, msg any) {
	if p.metrics != nil {
		p.metrics.consume(inLoop, ctx.Partition(), ctx.Offset())
	}
	p.admit(ctx, msg.(*validRecord))
}

// admit classifies obs, a valid record of the line that is ctx's key, and
// applies it to that line's clock. Late comes before duplicate: a toy or box
// whose window has closed for its stream is late whatever ids came before
// it, so only one that is not late looks its id up among its window's. A
// record the clock has applied already (a redelivery) changes nothing and
// writes nothing: its decision, dead letter included, is in the table.
func (p *Packer) admit(ctx goka.Context, obs *validRecord) {
	part := p.clockStores.of(ctx)
	kc := part.clockOf(ctx.Key())
	if kc.stream(obs.Stream).applied(obs.Partition, obs.Offset) {
		return
	}
	key := ""
	if w := p.params.windowStart(obs.MadeUS); !obs.Heartbeat && !kc.late(p.params, obs.Stream, w) {
		key = dedupeKey(obs, w)
		obs.Dup = part.seen(ctx, key)
	}
	if !obs.Dup {
		obs.Raw, obs.Key, obs.RawCut = nil, nil, results.Cut{}
	}
	p.decide(ctx, part, kc, obs, key)
}

func (p *Packer) emitDead(ctx goka.Context, dl *DeadLetter, reason record.Reason, detail string) {
	dl.Reason, dl.Detail = reason, detail
	key := deadKey(dl.Topic, dl.Partition, dl.Offset)
	p.fitDead(dl, key)
	markDead(ctx, reason)
	if p.metrics != nil {
		p.metrics.deadLetter(dl.Stream, reason, dl.Key)
	}
	ctx.Emit(goka.Stream(p.cfg.Topics.Dead), key, dl)
}

// emitDup reports a duplicate, from the decision that holds it: the slots
// group sends it, as it sends late rows, so a duplicate's dead letter is
// written exactly when its decision is in the clock table.
func (p *Packer) emitDup(ctx goka.Context, obs *validRecord) {
	dl := newDeadLetter(obs.Stream, p.topicOf(obs.Stream), obs.Partition, obs.Offset, obs.Key, obs.Raw)
	dl.ValueCut = obs.RawCut
	id, _ := splitID(obs.ID)
	p.emitDead(ctx, dl, record.ReasonDuplicate, "an earlier record of this stream, line and window has id "+strconv.Quote(prefixUTF8(id, detailMax)))
}

// validRecord is one valid record as the clock stage applies it; it is the
// loop record of a stray (see observe), and the clock's decision holds it.
type validRecord struct {
	Stream    record.Stream `json:"x"`
	Partition int32         `json:"p"`
	Offset    int64         `json:"o"`
	Line      string        `json:"l"` // the packing line: the Kafka key, a size or size/hall
	ID        string        `json:"id,omitempty"`
	Heartbeat bool          `json:"hb,omitempty"`
	MadeUS    int64         `json:"t"`  // made_at in µs, floor
	MadeAt    string        `json:"ts"` // made_at as record.FormatTime, for late rows
	// ArrivedUS is the input record's Kafka timestamp in µs, for the pack
	// duration (metrics.go); 0 with metrics off.
	ArrivedUS int64 `json:"a,omitempty"`
	Dup       bool  `json:"dup,omitempty"`
	// Raw value and key are kept only for a duplicate's dead letter: the
	// decision of a duplicate holds them, every other decision neither. A raw
	// value too long for the record that carries it is cut, and RawCut
	// describes the whole one (fitRaw).
	Raw    []byte      `json:"raw,omitempty"`
	Key    []byte      `json:"key,omitempty"`
	RawCut results.Cut `json:"raw_cut,omitzero"`
	// Trace is the input record's trace context (its "process" span), for
	// the spans of what the later stages write about it.
	Trace traceRef `json:"-"`
}

// sizeHint: a stray's loop record holds the raw record, and a trace
// reference when tracing is on.
func (o *validRecord) sizeHint() int {
	return 106 + len(o.ID) + len(o.Raw) + len(o.Key) + len(o.Trace.TraceState)
}

func (o *validRecord) appendBin(b []byte) []byte {
	b = appendStr(b, string(o.Stream))
	b = binary.AppendVarint(b, int64(o.Partition))
	b = binary.AppendVarint(b, o.Offset)
	b = appendStr(b, o.Line)
	b = appendStr(b, o.ID)
	b = append(b, flag(o.Heartbeat, 1)|flag(o.Dup, 2))
	b = binary.AppendVarint(b, o.MadeUS)
	b = appendStr(b, o.MadeAt)
	b = binary.AppendVarint(b, o.ArrivedUS)
	b = appendBytes(b, o.Raw)
	b = appendBytes(b, o.Key)
	b = binary.AppendVarint(b, int64(o.RawCut.Bytes))
	b = appendStr(b, o.RawCut.SHA256)
	return o.Trace.appendBin(b)
}

func (o *validRecord) readBin(r *binReader) {
	o.Stream = record.Stream(r.str())
	o.Partition = int32(r.varint())
	o.Offset = r.varint()
	o.Line = r.str()
	o.ID = r.str()
	f := r.byte1()
	o.Heartbeat, o.Dup = f&1 != 0, f&2 != 0
	o.MadeUS = r.varint()
	o.MadeAt = r.str()
	o.ArrivedUS = r.varint()
	o.Raw = r.bytes()
	o.Key = r.bytes()
	o.RawCut.Bytes = int(r.varint())
	o.RawCut.SHA256 = r.str()
	o.Trace.readBin(r)
}

// The dedupe entries of a window: one storage key per id (dedupeKey, which
// holds the window), set by the window's first item with that id. A record
// of a window whose end its stream's watermark has passed is late before it
// could be a duplicate, so a window's entries of a stream are forgotten as
// soon as that stream's watermark passes its end: at most the windows still
// open for the stream keep entries. windowIDs lists the keys each window set,
// so that they can be deleted together.

// windowIDs are the dedupe keys that one (line, stream) set, per window,
// oldest window first.
type windowIDs []idWindow

type idWindow struct {
	start int64
	keys  []byte // each key length-prefixed (uvarint): one pointer-free slice per window
}

// seen reports whether key, a dedupe entry, is set in the partition.
func (t *tablePart) seen(ctx goka.Context, key string) bool {
	b, err := t.store.Get(key)
	if err != nil {
		ctx.Fail(fmt.Errorf("read %q in partition %d of %s: %w", key, ctx.Partition(), t.topic, err))
	}
	return b != nil
}

// remember updates the dedupe entries after kc decided ev: an item sets
// its window's entry for its id (key, its dedupeKey), and the entries of the
// windows that its stream's watermark has passed are forgotten. Both the
// callback and the recovery of the table (recoverClock) call it, after the
// clock applied ev.
func (t *tablePart) remember(kc *keyClock, p paramsUS, ev *decision, key string) error {
	rec := &ev.Rec
	ids := &kc.ids[streamIndex(rec.Stream)]
	added := 0
	if ev.Class == classItem {
		if err := t.store.Set(key, entryValue); err != nil {
			return err
		}
		ids.add(ev.Window, key)
		added = 1
	}
	gone, err := ids.forget(p.watermark(*kc.stream(rec.Stream)), p.WindowUS, t.store.Delete)
	if t.state != nil {
		t.state.entries[kc.size].Add(int64(added - gone))
	}
	return err
}

// entryValue: a dedupe entry says only that its key is set.
var entryValue = []byte{1}

func streamIndex(x record.Stream) int {
	if x == record.Boxes {
		return 1
	}
	return 0
}

// add lists key under window start. Items arrive mostly in window order, so
// the window is nearly always the last one.
func (w *windowIDs) add(start int64, key string) {
	ws := *w
	i := len(ws)
	for i > 0 && ws[i-1].start > start {
		i--
	}
	if i == 0 || ws[i-1].start != start {
		ws = slices.Insert(ws, i, idWindow{start: start})
		i++
		*w = ws
	}
	e := &ws[i-1]
	e.keys = binary.AppendUvarint(e.keys, uint64(len(key)))
	e.keys = append(e.keys, key...)
}

// forget deletes the entries of every window whose end wm has reached, and
// says how many it deleted.
func (w *windowIDs) forget(wm, width int64, del func(string) error) (int, error) {
	ws := *w
	n, deleted := 0, 0
	for ; n < len(ws) && ws[n].start+width <= wm; n++ {
		for b := ws[n].keys; len(b) > 0; {
			l, k := binary.Uvarint(b)
			if err := del(string(b[k : k+int(l)])); err != nil {
				return deleted, err
			}
			deleted++
			b = b[k+int(l):]
		}
	}
	if n > 0 {
		*w = slices.Delete(ws, 0, n)
	}
	return deleted, nil
}

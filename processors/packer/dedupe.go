package packer

import (
	"encoding/binary"
	"errors"
	"strconv"

	"github.com/lovoo/goka"
	"go.opentelemetry.io/otel/trace"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
)

// The first half of the clock group: the input callback (observe) decides
// validity, and dedupe decides, from the dedupe entry of the record's
// (size, stream, id), whether an earlier record had its id. Then the clock
// (clock.go) applies the record to the clock of its size.

// observe validates an input record. Invalid records become dead letters
// right here: the decision depends on the record alone, so a replay repeats
// it exactly. A valid record is counted by the clock of its size, whose key
// lives in the partition its size hashes to; a record that a producer put in
// another partition is looped there first (stray).
func (p *Packer) observe(stream record.Stream) goka.ProcessCallback {
	return func(ctx goka.Context, msg any) {
		raw, _ := msg.([]byte)
		key := ctx.Key()
		r, err := record.Parse(stream, []byte(key), raw)
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
			Size: r.Size, ID: carryID(r.ID, p.lim.idMax()), Heartbeat: r.Heartbeat,
			MadeUS: r.MadeAtMicros(), MadeAt: record.FormatTime(r.MadeAt),
			Trace: traceRefOf(trace.SpanContextFromContext(ctx.Context())),
		}
		if !r.Heartbeat {
			// Kept only to report the record as a duplicate.
			obs.Raw, obs.Key = raw, []byte(key)
		}
		if ctx.Partition() == sizePartition(r.Size, p.cfg.Partitions) {
			p.admit(ctx, ctx, obs)
			return
		}
		// record.Parse checked that the key is the size, so the loop record
		// reaches the size's partition. It must fit beside the id.
		if room := p.lim.room() - 2*len(obs.ID) - len(key) - 512; len(obs.Raw) > room {
			obs.RawCut = results.CutOf(raw)
			obs.Raw = prefixUTF8(raw, room)
		}
		ctx.Loopback(r.Size, obs)
	}
}

// stray is a valid record that arrived in a partition other than its
// size's, now in its size's partition. Its dead letter, if it is a
// duplicate, continues the trace of its input record.
func (p *Packer) stray(ctx goka.Context, msg any) {
	obs := msg.(*validRecord)
	p.admit(ctx, resume(p.trace.clock, ctx, obs.Trace), obs)
}

// admit decides whether obs is a duplicate and applies it to the clock of
// its size, the key of ctx. A duplicate's dead letter is sent through dead:
// ctx itself in the input callback, whose span is the record's.
func (p *Packer) admit(ctx, dead goka.Context, obs *validRecord) {
	part := p.clocks.of(ctx)
	if !obs.Heartbeat {
		obs.Dup = p.dedupe(ctx, part, obs)
		if obs.Dup {
			p.emitDup(dead, obs)
		}
	}
	obs.Raw, obs.Key, obs.RawCut = nil, nil, results.Cut{}
	p.clock(ctx, part, obs)
}

func (p *Packer) emitDead(ctx goka.Context, dl *DeadLetter, reason record.Reason, detail string) {
	dl.Reason, dl.Detail = reason, detail
	key := deadKey(dl.Topic, dl.Partition, dl.Offset)
	p.fitDead(dl, key)
	markDead(ctx, reason)
	ctx.Emit(goka.Stream(p.cfg.Topics.Dead), key, dl)
}

// dedupe reports whether an earlier record had obs's id, from the dedupe
// entries in part, the clock table's partition that ctx processes. The
// dedupe entry of (size, stream, id) is where the first record with that id
// is: made once, by that record, and never changed, so the decision is the
// same on every delivery, and a redelivered record makes it again with the
// same result.
//
// The entry is set in the partition's storage only. The decision that the
// same event writes into the clock table says where it comes from (the
// record is an item or late, not a duplicate), and goka's recovery of the
// table sets it again from there (recoverClock): the entry and the clock are
// one Kafka record, kept or lost together. A record whose decision was lost
// is delivered again, as goka commits an input offset only once every write
// for it and for the records before it is acknowledged (inorder.go).
func (p *Packer) dedupe(ctx goka.Context, part *tablePart, obs *validRecord) (dup bool) {
	key := dedupeKey(obs)
	next, dup := dedupeStep(get(ctx, part, key, firstSeenCodec), obs)
	if next != nil {
		put(ctx, part, key, firstSeenCodec, next)
	}
	return dup
}

// dedupeStep is the dedupe decision for one record that is not a heartbeat:
// the entry to write (nil unless none exists yet: obs is the first record
// with its id) and whether obs is a duplicate.
func dedupeStep(first *firstSeen, obs *validRecord) (next *firstSeen, dup bool) {
	if first == nil {
		return &firstSeen{First: obs.Offset, FirstPart: obs.Partition}, false
	}
	return nil, !first.isFirst(obs)
}

// firstSeenCodec encodes the dedupe entries, which the clock group reads and
// writes in storage itself (tableStores), not through goka's codecs.
var firstSeenCodec binCodec[firstSeen, *firstSeen]

func (p *Packer) emitDup(ctx goka.Context, obs *validRecord) {
	dl := newDeadLetter(obs.Stream, p.topicOf(obs.Stream), obs.Partition, obs.Offset, obs.Key, obs.Raw)
	dl.ValueCut = obs.RawCut
	id, _ := splitID(obs.ID)
	p.emitDead(ctx, dl, record.ReasonDuplicate, "an earlier record of this stream and size has id "+strconv.Quote(prefixUTF8(id, detailMax)))
}

// validRecord is one valid record as the clock stage applies it; it is the
// loop record of a stray (see observe), and the clock's decision holds it.
type validRecord struct {
	Stream    record.Stream `json:"x"`
	Partition int32         `json:"p"`
	Offset    int64         `json:"o"`
	Size      string        `json:"s"`
	ID        string        `json:"id,omitempty"`
	Heartbeat bool          `json:"hb,omitempty"`
	MadeUS    int64         `json:"t"`  // made_at in µs, floor
	MadeAt    string        `json:"ts"` // made_at as record.FormatTime, for late rows
	Dup       bool          `json:"dup,omitempty"`
	// Raw value and key are kept only until the dedupe decision, which may
	// have to report the record as a duplicate dead letter; the clock's
	// decision holds neither. A raw value too long for a stray's loop record
	// is cut, and RawCut describes the whole one (fit.go).
	Raw    []byte      `json:"raw,omitempty"`
	Key    []byte      `json:"key,omitempty"`
	RawCut results.Cut `json:"raw_cut,omitzero"`
	// Trace is the input record's trace context (its "process" span), for
	// the spans of what the later stages write about it.
	Trace traceRef `json:"-"`
}

// firstSeen is the dedupe entry of one (size, stream, id) key: where the
// first record with that id is. It is written once, by that record, and
// never changes; heartbeats keep none. So the decision (a duplicate or not)
// is a function of the record and this value, the same on every delivery.
type firstSeen struct {
	First     int64 `json:"first"`      // offset of the first record with this id
	FirstPart int32 `json:"first_part"` // and its partition
}

// isFirst reports whether obs is the record that first had this id.
func (d *firstSeen) isFirst(obs *validRecord) bool {
	return obs.Offset == d.First && obs.Partition == d.FirstPart
}

// sizeHint: a stray's loop record holds the raw record, and a trace
// reference when tracing is on.
func (o *validRecord) sizeHint() int {
	return 96 + len(o.ID) + len(o.Raw) + len(o.Key) + len(o.Trace.TraceState)
}

func (o *validRecord) appendBin(b []byte) []byte {
	b = appendStr(b, string(o.Stream))
	b = binary.AppendVarint(b, int64(o.Partition))
	b = binary.AppendVarint(b, o.Offset)
	b = appendStr(b, o.Size)
	b = appendStr(b, o.ID)
	b = append(b, flag(o.Heartbeat, 1)|flag(o.Dup, 2))
	b = binary.AppendVarint(b, o.MadeUS)
	b = appendStr(b, o.MadeAt)
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
	o.Size = r.str()
	o.ID = r.str()
	f := r.byte1()
	o.Heartbeat, o.Dup = f&1 != 0, f&2 != 0
	o.MadeUS = r.varint()
	o.MadeAt = r.str()
	o.Raw = r.bytes()
	o.Key = r.bytes()
	o.RawCut.Bytes = int(r.varint())
	o.RawCut.SHA256 = r.str()
	o.Trace.readBin(r)
}

func (d *firstSeen) appendBin(b []byte) []byte {
	b = binary.AppendVarint(b, d.First)
	return binary.AppendVarint(b, int64(d.FirstPart))
}

func (d *firstSeen) readBin(r *binReader) {
	d.First = r.varint()
	d.FirstPart = int32(r.varint())
}

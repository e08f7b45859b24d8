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

// The dedupe stage: the input callback (observe) decides validity and sends
// each valid record to its (size, stream, id) key; the dedupe callback keeps,
// per key, where the first record with that id was, and sends every record's
// event, a duplicate or not, to the clock stage, keyed by size.

// observe validates an input record. Invalid records become dead letters
// right here: the decision depends on the record alone, so a replay repeats
// it exactly. Valid records go to their dedupe key.
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
			// Only the dedupe stage may need them, to report a duplicate;
			// the loop record must fit beside the id.
			obs.Raw, obs.Key = raw, []byte(key)
			if room := p.lim.room() - 2*len(obs.ID) - len(key) - 512; len(raw) > room {
				obs.RawCut = results.CutOf(raw)
				obs.Raw = prefixUTF8(raw, room)
			}
		}
		ctx.Loopback(dedupeKey(obs), obs)
	}
}

func (p *Packer) emitDead(ctx goka.Context, dl *DeadLetter, reason record.Reason, detail string) {
	dl.Reason, dl.Detail = reason, detail
	key := deadKey(dl.Topic, dl.Partition, dl.Offset)
	p.fitDead(dl, key)
	markDead(ctx, reason)
	ctx.Emit(goka.Stream(p.cfg.Topics.Dead), key, dl)
}

// dedupe keeps, per (size, stream, id), the offset of the first record with
// that id, and sends each record's event to the clock stage, keyed by size.
// That offset is written once and never changes, so whether a record is a
// duplicate is decided the same way on every delivery: the event and the dead
// letter are re-sent, identical, on a redelivery. That is what makes two
// records (the state and the event) safe here: a crash that kept the state
// and lost the event is repaired by the redelivery, which goka guarantees
// because the input's offset is committed only once both are written. The
// clock stage skips events it has applied.
func (p *Packer) dedupe(ctx goka.Context, msg any) {
	obs := msg.(*validRecord)
	var st *firstSeen
	if !obs.Heartbeat {
		if v := ctx.Value(); v != nil {
			st = v.(*firstSeen)
		}
	}
	next, ev := dedupeStep(st, obs)
	if ev.Dup {
		p.emitDup(resume(p.trace.dedupe, ctx, obs.Trace), obs)
	}
	if next != nil {
		ctx.SetValue(next)
	}
	ctx.Emit(goka.Stream(p.cfg.dedupeEvents()), ev.Size, &ev)
}

// dedupeStep is the dedupe decision for one record: the state to write (nil
// unless the record is the first with its id and no state exists yet) and
// the event for the clock stage, which says whether the record is a
// duplicate. Heartbeats have no state and are never duplicates.
func dedupeStep(st *firstSeen, obs *validRecord) (next *firstSeen, ev validRecord) {
	ev = *obs
	ev.Raw, ev.Key = nil, nil
	switch {
	case obs.Heartbeat:
	case st == nil:
		next = &firstSeen{First: obs.Offset, FirstPart: obs.Partition}
	default:
		ev.Dup = !st.isFirst(obs)
	}
	return next, ev
}

func (p *Packer) emitDup(ctx goka.Context, obs *validRecord) {
	dl := newDeadLetter(obs.Stream, p.topicOf(obs.Stream), obs.Partition, obs.Offset, obs.Key, obs.Raw)
	dl.ValueCut = obs.RawCut
	id, _ := splitID(obs.ID)
	p.emitDead(ctx, dl, record.ReasonDuplicate, "an earlier record of this stream and size has id "+strconv.Quote(prefixUTF8(id, detailMax)))
}

// validRecord is one valid record on its way through the pipeline. It leaves the
// input callback towards its dedupe key, and (without Raw and Key, with Dup
// decided) is the event that the dedupe stage sends to the clock stage.
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
	// Raw value and key travel only to the dedupe stage, which may have to
	// report the record as a duplicate dead letter. A raw value too long for
	// the loop record is cut, and RawCut describes the whole one (fit.go).
	Raw    []byte      `json:"raw,omitempty"`
	Key    []byte      `json:"key,omitempty"`
	RawCut results.Cut `json:"raw_cut,omitzero"`
	// Trace is the input record's trace context (its "process" span), for
	// the spans of what the later stages write about it.
	Trace traceRef `json:"-"`
}

// firstSeen is the dedupe stage's value for one (size, stream, id) key:
// where the first record with that id is. It is written once, by that
// record, and never changes; heartbeats keep none. So the stage's decision
// (a duplicate or not) is a function of the record and this value, the same
// on every delivery, and the event it sends to the clock stage can always be
// sent again.
type firstSeen struct {
	First     int64 `json:"first"`      // offset of the first record with this id
	FirstPart int32 `json:"first_part"` // and its partition
}

// isFirst reports whether obs is the record that first had this id.
func (d *firstSeen) isFirst(obs *validRecord) bool {
	return obs.Offset == d.First && obs.Partition == d.FirstPart
}

// sizeHint: an observation holds the raw record on its way to the dedupe
// stage, and a trace reference when tracing is on.
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

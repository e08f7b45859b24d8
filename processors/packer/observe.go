package packer

import (
	"errors"
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
		r, err := record.Parse(stream, key, raw)
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
		// A value, not a pointer: applied here, it is copied into the
		// decision (keyClock.apply) and nothing keeps it, so it costs no
		// allocation; only a stray's loop record is made on the heap.
		obs := validRecord{
			Stream: stream, Partition: ctx.Partition(), Offset: ctx.Offset(),
			Line: r.Line, ID: carryID(r.ID, p.lim.idMax()), Heartbeat: r.Heartbeat,
			MadeUS: r.MadeAtMicros(), MadeNS: subMicro(r.MadeAt),
			Trace: p.traceOf(ctx),
		}
		if p.metrics != nil {
			obs.ArrivedUS = ctx.Timestamp().UnixMicro()
		}
		if !r.Heartbeat {
			// Kept only to report the record as a duplicate.
			obs.Raw, obs.Key = raw, []byte(key)
			p.fitRaw(&obs, 0)
		}
		if ctx.Partition() == linePartition(r.Line, p.cfg.Partitions) {
			p.admit(ctx, &obs)
			return
		}
		// record.Parse checked that the key is a well-formed line, so the
		// loop record reaches the line's partition.
		loop := obs
		ctx.Loopback(r.Line, &loop)
	}
}

// stray is a valid record that arrived in a partition other than its
// line's, now in its line's partition.
func (p *Packer) stray(ctx goka.Context, msg any) {
	if p.metrics != nil {
		p.metrics.consume(inLoop, ctx.Partition(), ctx.Offset())
	}
	obs := msg.(*validRecord)
	obs.Via = ctx.Offset() + 1
	// The rows it brings are sent in the trace of the input record.
	p.admit(resume(p.trace, ctx, obs.Trace), obs)
}

// admit classifies obs, a valid record of the line that is ctx's key, and
// applies it to that line's clock. Late comes before duplicate: a toy or box
// whose window has closed for its stream is late whatever ids came before
// it, so only one that is not late looks its id up among its window's. A
// record the clock has applied already (a redelivery) changes nothing: its
// decision is in the table, and its rows are written again when they may
// have been lost (replay).
func (p *Packer) admit(ctx goka.Context, obs *validRecord) {
	part := p.clockStores.of(ctx)
	kc := part.clockOf(ctx.Key())
	if kc.stream(obs.Stream).applied(obs.Partition, obs.Offset) {
		p.replay(ctx, part, obs)
		return
	}
	if w := p.params.windowStart(obs.MadeUS); !obs.Heartbeat && !kc.late(p.params, obs.Stream, w) {
		obs.Dup = kc.ids[streamIndex(obs.Stream)].has(w, obs.ID, hashID)
	}
	if !obs.Dup {
		obs.Raw, obs.Key, obs.RawCut = nil, nil, results.Cut{}
	}
	p.decide(ctx, part, kc, obs)
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

// emitDup reports a duplicate, from the decision that holds it, as a late
// row is (emitRows): a replay writes it again from the decision the table
// kept.
func (p *Packer) emitDup(ctx goka.Context, obs *validRecord) {
	dl := newDeadLetter(obs.Stream, p.topicOf(obs.Stream), obs.Partition, obs.Offset, obs.Key, obs.Raw)
	dl.ValueCut = obs.RawCut
	id, _ := splitID(obs.ID)
	p.emitDead(ctx, dl, record.ReasonDuplicate, "an earlier record of this stream, line and window has id "+strconv.Quote(prefixUTF8(id, detailMax)))
}

// Package packer is the Goka implementation of the packing contract
// (docs/SEMANTICS.md). Three goka groups form a pipeline:
//
//	toys, boxes --> dedupe --(dedupe events)--> clock --(clock table)--> slots --> packed, unpacked, spare
//	                  |                           |
//	                  +--> dead-letters           +--> late (via slots)
//
// The clock stage writes only its group table, and the table's changelog is
// the next stage's input: a state change and the event it produced are one
// Kafka record, so a crash can never keep one and lose the other. The dedupe
// stage's state is write-once, so it can afford two records: a redelivery
// recomputes and re-sends the same event. See docs/ARCHITECTURE.md for the
// reasoning and the replay rules.
package packer

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"
	"go.opentelemetry.io/otel/trace"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
)

// Packer runs the three goka groups.
type Packer struct {
	cfg    Config
	params Params
	lim    limits       // what every record written must fit in (fit.go)
	seqs   []*sequencer // one per group (inorder.go)
	log    *slog.Logger
	trace  stageTracing // all nil: tracing off (tracing.go)
}

// New validates cfg; it does not touch Kafka.
func New(cfg Config, log *slog.Logger, opts ...Option) (*Packer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("packer config: %w", err)
	}
	if log == nil {
		log = slog.Default()
	}
	p := &Packer{cfg: cfg, params: cfg.params(), lim: defaultLimits(), log: log}
	for _, o := range opts {
		o(p)
	}
	return p, nil
}

func (p *Packer) topicOf(x record.Stream) string {
	if x == record.Boxes {
		return p.cfg.Topics.Boxes
	}
	return p.cfg.Topics.Toys
}

// Graphs are the three group graphs, in pipeline order.
func (p *Packer) Graphs() []*goka.GroupGraph {
	t := p.cfg.Topics
	dedupe := goka.DefineGroup(goka.Group(p.cfg.dedupeGroup()),
		goka.Input(goka.Stream(t.Toys), new(codec.Bytes), p.trace.dedupe.Process()(p.observe(record.Toys))),
		goka.Input(goka.Stream(t.Boxes), new(codec.Bytes), p.trace.dedupe.Process()(p.observe(record.Boxes))),
		goka.Loop(binCodec[Observed, *Observed]{}, p.dedupe),
		goka.Persist(binCodec[DedupeState, *DedupeState]{}),
		goka.Output(goka.Stream(p.cfg.dedupeEvents()), binCodec[Observed, *Observed]{}),
		goka.Output(goka.Stream(t.Dead), jsonCodec[DeadLetter]{}),
	)
	clock := goka.DefineGroup(goka.Group(p.cfg.clockGroup()),
		goka.Input(goka.Stream(p.cfg.dedupeEvents()), binCodec[Observed, *Observed]{}, p.clock),
		goka.Persist(binCodec[ClockState, *ClockState]{}),
	)
	slots := goka.DefineGroup(goka.Group(p.cfg.slotsGroup()),
		goka.Input(goka.Stream(goka.GroupTable(goka.Group(p.cfg.clockGroup()))), binCodec[ClockState, *ClockState]{}, p.forwardToSlots),
		goka.Loop(binCodec[SlotMsg, *SlotMsg]{}, p.slot),
		goka.Persist(binCodec[SlotState, *SlotState]{}),
		goka.Output(goka.Stream(t.Packed), jsonCodec[results.Packed]{}),
		goka.Output(goka.Stream(t.Unpacked), jsonCodec[results.Unpacked]{}),
		goka.Output(goka.Stream(t.Spare), jsonCodec[results.Spare]{}),
		goka.Output(goka.Stream(t.Late), jsonCodec[results.Late]{}),
	)
	return []*goka.GroupGraph{dedupe, clock, slots}
}

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
		obs := &Observed{
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
	obs := msg.(*Observed)
	var st *DedupeState
	if !obs.Heartbeat {
		if v := ctx.Value(); v != nil {
			st = v.(*DedupeState)
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
func dedupeStep(st *DedupeState, obs *Observed) (next *DedupeState, ev Observed) {
	ev = *obs
	ev.Raw, ev.Key = nil, nil
	switch {
	case obs.Heartbeat:
	case st == nil:
		next = &DedupeState{First: obs.Offset, FirstPart: obs.Partition}
	default:
		ev.Dup = !st.isFirst(obs)
	}
	return next, ev
}

func (p *Packer) emitDup(ctx goka.Context, obs *Observed) {
	dl := newDeadLetter(obs.Stream, p.topicOf(obs.Stream), obs.Partition, obs.Offset, obs.Key, obs.Raw)
	dl.ValueCut = obs.RawCut
	id, _ := splitID(obs.ID)
	p.emitDead(ctx, dl, record.ReasonDuplicate, "an earlier record of this stream and size has id "+strconv.Quote(prefixUTF8(id, detailMax)))
}

// clock applies one event to the clock of its size (lateness, ranks, window
// closing) and records the decision in its table.
func (p *Packer) clock(ctx goka.Context, msg any) {
	obs := msg.(*Observed)
	st := &ClockState{}
	if v := ctx.Value(); v != nil {
		st = v.(*ClockState)
	}
	if st.Apply(p.params, *obs) {
		if st.Ev.NewPartition {
			p.log.Warn("records of one stream and size arrive from more than one partition; they are processed in arrival order, "+
				"and the reference orders them by (partition, offset), so results may differ from it: partition producers' keys with FNV-1a "+
				"(see README) and do not change the partition count of the input topics",
				"stream", obs.Stream, "size", obs.Size, "partition", obs.Partition, "offset", obs.Offset)
		}
		ctx.SetValue(st)
	}
}

// forwardToSlots turns the clock's decisions into results: late rows now,
// items to their (size, window, rank) slot, and window closings to the slots
// that will stay half-empty. It is stateless, so a replay repeats it exactly.
func (p *Packer) forwardToSlots(ctx goka.Context, msg any) {
	ev := msg.(*ClockState).Ev
	r := ev.Rec
	switch ev.Class {
	case ClassLate:
		key := lateKey(r.Stream, r.Size, r.ID)
		resume(p.trace.slots, ctx, r.Trace).Emit(goka.Stream(p.cfg.Topics.Late), key, p.lateRow(&r, key))
	case ClassItem:
		ctx.Loopback(slotKey(r.Size, ev.Window, ev.Rank), &SlotMsg{Stream: r.Stream, ID: r.ID, Size: r.Size, Window: ev.Window, Trace: r.Trace})
	}
	for _, c := range ev.Closed {
		for k := min(c.Toys, c.Boxes) + 1; k <= max(c.Toys, c.Boxes); k++ {
			ctx.Loopback(slotKey(r.Size, c.Start, k), &SlotMsg{Close: true, Size: r.Size, Window: c.Start, Trace: r.Trace})
		}
	}
}

// slot pairs the k-th toy and the k-th box of a window. Its fields are written
// once, and its outputs are a function of its state, so any redelivery
// produces the same rows again (consumers deduplicate by key).
func (p *Packer) slot(ctx goka.Context, msg any) {
	m := msg.(*SlotMsg)
	st := &SlotState{Size: m.Size, Window: m.Window}
	if v := ctx.Value(); v != nil {
		st = v.(*SlotState)
	}
	changed := false
	switch {
	case m.Close:
		changed = !st.Closed
		st.Closed = true
	case m.Stream == record.Boxes:
		changed = st.Box == ""
		st.Box = m.ID
		if changed {
			st.BoxTrace = m.Trace
		}
	default:
		changed = st.Toy == ""
		st.Toy = m.ID
		if changed {
			st.ToyTrace = m.Trace
		}
	}
	if changed {
		ctx.SetValue(st)
	}
	ws := record.FormatMicros(st.Window)
	t := p.cfg.Topics
	// The trace is resumed only where a row is written.
	switch {
	case st.Toy != "" && st.Box != "":
		ctx = resume(p.trace.slots, ctx, m.Trace)
		if p.trace.on() {
			var end func()
			ctx, end = p.startPack(ctx, st)
			defer end()
		}
		ctx.Emit(goka.Stream(t.Packed), itemKey(st.Size, st.Toy), p.packedRow(st, ws))
	case st.Closed && st.Toy != "":
		withItem(resume(p.trace.slots, ctx, m.Trace), "toy", st.ToyTrace).Emit(goka.Stream(t.Unpacked), itemKey(st.Size, st.Toy), p.unpackedRow(st, ws))
	case st.Closed && st.Box != "":
		withItem(resume(p.trace.slots, ctx, m.Trace), "box", st.BoxTrace).Emit(goka.Stream(t.Spare), itemKey(st.Size, st.Box), p.spareRow(st, ws))
	}
}

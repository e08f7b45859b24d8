package packer

import (
	"fmt"

	"github.com/lovoo/goka"

	"github.com/northpole-workshop/northpole/internal/record"
)

// The slots are the windowed stream-table join of the packer: the stream
// of ranked items (the clock's decisions) is joined with the slots, keyed by
// (line, window, rank). The k-th toy and the k-th box of a window meet in
// slot k; a window's closing tells the slots that will stay half-empty to
// report their item as unpacked or spare, and then the window's slots are
// forgotten. The slots live beside the line's clock, in the storage goka
// builds for the clock table, at keys of their own (slotKey), and are never
// written to Kafka: they are a function of the decisions, and goka's
// recovery of the clock table rebuilds them (restoreSlots). The clock
// callback joins each decision right after writing it (decide), so each
// input record is read once.

// emitRows writes what decision ev means for the outputs: a late row or a
// duplicate's dead letter, the item into its (line, window, rank) slot, and
// each window it closes into the slots that will stay half-empty. decide
// calls it for each new decision, and admit again for a record delivered
// again whose decision the table kept (replay.go).
func (p *Packer) emitRows(ctx goka.Context, part *tablePart, ev *decision) {
	r := &ev.Rec
	switch ev.Class {
	case classLate:
		key := lateKey(p.topicOf(r.Stream), r.Partition, r.Offset)
		ctx.Emit(goka.Stream(p.cfg.Topics.Late), key, p.lateRow(r, key))
		if p.metrics != nil {
			p.metrics.row(rowLate, r.Line)
		}
	case classDuplicate:
		p.emitDup(ctx, r)
	case classItem:
		p.slot(ctx, part, slotKey(r.Line, ev.Window, ev.Rank), &slotMsg{Stream: r.Stream, ID: r.ID, Line: r.Line, Window: ev.Window, Trace: r.Trace, ArrivedUS: r.ArrivedUS})
	}
	for _, c := range ev.Closed {
		for k := min(c.Toys, c.Boxes) + 1; k <= max(c.Toys, c.Boxes); k++ {
			p.slot(ctx, part, slotKey(r.Line, c.Start, k), &slotMsg{Close: true, Line: r.Line, Window: c.Start, Trace: r.Trace})
		}
		if len(part.replays) > 0 {
			// A replay may still mention the window: forgotten once
			// every replay is done (replay).
			part.closedKept = append(part.closedKept, closedWindowOf{line: r.Line, w: c})
			continue
		}
		// Nothing mentions a window after its closing: a later item of it
		// would be late.
		if err := part.forgetWindow(r.Line, c, true); err != nil {
			ctx.Fail(fmt.Errorf("forget the slots of window %d of line %s in partition %d of %s: %w", c.Start, r.Line, ctx.Partition(), part.topic, err))
		}
	}
}

// slot pairs the k-th toy and the k-th box of a window. Its fields are
// written once, and its outputs are a function of its state and the
// message, so any redelivery produces the same rows again (consumers
// deduplicate by key).
func (p *Packer) slot(ctx goka.Context, part *tablePart, key string, m *slotMsg) {
	slot, err := part.updateSlot(key, m)
	if err != nil {
		ctx.Fail(fmt.Errorf("slot %q in partition %d of %s: %w", key, ctx.Partition(), part.topic, err))
	}
	ws := record.FormatMicros(slot.Window)
	t := p.cfg.Topics
	// ctx is the callback's of the record that m is about, traced as it.
	switch {
	case slot.Toy != "" && slot.Box != "":
		ctx = withItems(ctx, slot.ToyTrace, slot.BoxTrace)
		ctx.Emit(goka.Stream(t.Packed), itemKey(slot.Line, slot.Window, slot.Toy), p.packedRow(slot, ws))
		if p.metrics != nil {
			p.metrics.row(rowPacked, slot.Line)
			p.metrics.packed(slot.Line, m.ArrivedUS) // m brought the later item
		}
	case slot.Closed && slot.Toy != "":
		withItems(ctx, slot.ToyTrace).Emit(goka.Stream(t.Unpacked), itemKey(slot.Line, slot.Window, slot.Toy), p.unpackedRow(slot, ws))
		if p.metrics != nil {
			p.metrics.row(rowUnpacked, slot.Line)
		}
	case slot.Closed && slot.Box != "":
		withItems(ctx, slot.BoxTrace).Emit(goka.Stream(t.Spare), itemKey(slot.Line, slot.Window, slot.Box), p.spareRow(slot, ws))
		if p.metrics != nil {
			p.metrics.row(rowSpare, slot.Line)
		}
	}
}

// updateSlot applies m to the slot at key and returns its state: an item
// fills the slot's place of its stream, a closing marks it closed. Each
// field is set once; a message that changes nothing writes nothing.
func (t *tablePart) updateSlot(key string, m *slotMsg) (*slotState, error) {
	slot := &slotState{Line: m.Line, Window: m.Window}
	b, err := t.store.Get(key)
	if err != nil {
		return slot, err
	}
	if b != nil {
		v, err := slotStateCodec.Decode(b)
		if err != nil {
			return slot, err
		}
		slot = v.(*slotState)
	}
	changed := false
	switch {
	case m.Close:
		changed = !slot.Closed
		slot.Closed = true
	case m.Stream == record.Boxes:
		changed = slot.Box == ""
		if changed {
			slot.Box, slot.BoxTrace = m.ID, m.Trace
		}
	default:
		changed = slot.Toy == ""
		if changed {
			slot.Toy, slot.ToyTrace = m.ID, m.Trace
		}
	}
	if changed {
		enc, _ := slotStateCodec.Encode(slot)
		err = t.store.Set(key, enc)
		if b == nil && err == nil && t.state != nil {
			t.state.slots[lineSizeIndex(m.Line)].Add(1)
		}
	}
	return slot, err
}

// forgetWindow deletes the slots of a closed window: ranks 1 to the larger
// of its two counts. Each of them exists when the window closes in a
// callback (the table keeps every item of a window a decision still to
// come mentions: horizon.go), not always for one whose closing a recovery
// read or that waited for the replays (replay.go): whole says which.
func (t *tablePart) forgetWindow(line string, c closedWindow, whole bool) error {
	gone := 0
	for k := 1; k <= max(c.Toys, c.Boxes); k++ {
		key := slotKey(line, c.Start, k)
		if t.state != nil && !whole {
			if ok, err := t.store.Has(key); err != nil || !ok {
				continue
			}
		}
		if err := t.store.Delete(key); err != nil {
			return err
		}
		gone++
	}
	if t.state != nil {
		t.state.slots[lineSizeIndex(line)].Add(-int64(gone))
	}
	return nil
}

// restoreSlots rebuilds the slots of one partition from the decision at
// offset of the clock table, as goka's recovery reads them oldest first
// (recoverClock), without writing anything: items fill their slots, closings
// mark theirs closed. The table holds every item of every window that a
// decision still to be replayed mentions (horizon.go), so those windows'
// slots come back whole. Closed windows keep their slots until the recovery
// ends (tablePart.recovered), and those a replay mentions until every
// replay is done: a record delivered again must find them as they were.
func (t *tablePart) restoreSlots(ev *decision) error {
	r := &ev.Rec
	if ev.Class == classItem {
		if _, err := t.updateSlot(slotKey(r.Line, ev.Window, ev.Rank), &slotMsg{Stream: r.Stream, ID: r.ID, Line: r.Line, Window: ev.Window, Trace: r.Trace}); err != nil {
			return err
		}
	}
	for _, c := range ev.Closed {
		for k := min(c.Toys, c.Boxes) + 1; k <= max(c.Toys, c.Boxes); k++ {
			if _, err := t.updateSlot(slotKey(r.Line, c.Start, k), &slotMsg{Close: true, Line: r.Line, Window: c.Start}); err != nil {
				return err
			}
		}
		t.closedKept = append(t.closedKept, closedWindowOf{line: r.Line, w: c})
	}
	return nil
}

// closedWindowOf is a closed window of a line.
type closedWindowOf struct {
	line string
	w    closedWindow
}

// slotStateCodec encodes the slots in the clock group's storage.
var slotStateCodec binCodec[slotState, *slotState]

// slotMsg is what a decision brings to the slot (line, window, rank): an item
// that took that rank, or the news that the window closed and the slot will
// never be completed.
type slotMsg struct {
	Stream record.Stream
	ID     string
	Close  bool
	Line   string
	Window int64
	Trace  traceRef // of the record that brought the item, or that closed the window
	// ArrivedUS is the Kafka timestamp of the input record that brought the
	// item (validRecord.ArrivedUS).
	ArrivedUS int64
}

// slotState is where the k-th toy meets the k-th box. Every field is written
// at most once, so a redelivered message recomputes the same outputs.
type slotState struct {
	Line   string `json:"l"`
	Window int64  `json:"w"`
	Toy    string `json:"toy,omitempty"`
	Box    string `json:"box,omitempty"`
	Closed bool   `json:"closed,omitempty"`
	// ToyTrace and BoxTrace remember the trace context of the record that
	// brought each item, written once with the item (zero with tracing
	// off), so that the "send packed" span can link to both items whichever record
	// completes the pair. They never affect a result.
	ToyTrace traceRef `json:"-"`
	BoxTrace traceRef `json:"-"`
}

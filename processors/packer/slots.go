package packer

import (
	"encoding/binary"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/storage"

	"github.com/northpole-workshop/northpole/internal/record"
)

// The slots stage is the windowed stream-table join of the packer: the
// stream of ranked items (the clock's decisions, read from its table's
// changelog) is joined with the slots, keyed by (size, window, rank).
// The k-th toy and the k-th box of a window meet in slot k; a window's
// closing tells the slots that will stay half-empty to report their item as
// unpacked or spare. A size's slots live in the partition of its clock
// (Packer.hasherFor), so the group reads and writes them itself, in the
// partition's storage (tableStores), without a hop to the slot's key; each
// write is a record of the group's table (a slotWrite at the size's key),
// from which goka's recovery sets the slot again (recoverSlots).

// forwardToSlots turns the clock's decisions into results: late rows now,
// items into their (size, window, rank) slot, and window closings into the
// slots that will stay half-empty.
func (p *Packer) forwardToSlots(ctx goka.Context, msg any) {
	ev := msg.(*decision)
	r := ev.Rec
	switch ev.Class {
	case classLate:
		key := lateKey(r.Stream, r.Size, r.ID)
		resume(p.trace.slots, ctx, r.Trace).Emit(goka.Stream(p.cfg.Topics.Late), key, p.lateRow(&r, key))
	case classItem:
		p.slot(ctx, slotKey(r.Size, ev.Window, ev.Rank), &slotMsg{Stream: r.Stream, ID: r.ID, Size: r.Size, Window: ev.Window, Trace: r.Trace})
	}
	for _, c := range ev.Closed {
		for k := min(c.Toys, c.Boxes) + 1; k <= max(c.Toys, c.Boxes); k++ {
			p.slot(ctx, slotKey(r.Size, c.Start, k), &slotMsg{Close: true, Size: r.Size, Window: c.Start, Trace: r.Trace})
		}
	}
}

// slot pairs the k-th toy and the k-th box of a window. Its fields are written
// once, and its outputs are a function of its state and the message, so any
// redelivery produces the same rows again (consumers deduplicate by key).
//
// The item that completes a pair is not written: after it the slot gets
// nothing but redeliveries of its two items, since a window's closing goes
// only to the slots it left with one item (forwardToSlots), and either
// redelivery recomputes the same packed row from the first item's state and
// the message. That saves a table write for every pair.
func (p *Packer) slot(ctx goka.Context, key string, m *slotMsg) {
	slots := p.slots.of(ctx)
	st := get(ctx, slots, key, slotStateCodec)
	if st == nil {
		st = &slotState{Size: m.Size, Window: m.Window}
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
	if changed && (st.Toy == "" || st.Box == "") {
		ctx.SetValue(&slotWrite{Key: key, State: put(ctx, slots, key, slotStateCodec, st)})
	}
	ws := record.FormatMicros(st.Window)
	t := p.cfg.Topics
	// The trace is resumed only where a row is written.
	switch {
	case st.Toy != "" && st.Box != "":
		ctx = withItem(withItem(resume(p.trace.slots, ctx, m.Trace), st.ToyTrace), st.BoxTrace)
		ctx.Emit(goka.Stream(t.Packed), itemKey(st.Size, st.Toy), p.packedRow(st, ws))
	case st.Closed && st.Toy != "":
		withItem(resume(p.trace.slots, ctx, m.Trace), st.ToyTrace).Emit(goka.Stream(t.Unpacked), itemKey(st.Size, st.Toy), p.unpackedRow(st, ws))
	case st.Closed && st.Box != "":
		withItem(resume(p.trace.slots, ctx, m.Trace), st.BoxTrace).Emit(goka.Stream(t.Spare), itemKey(st.Size, st.Box), p.spareRow(st, ws))
	}
}

// slotStateCodec encodes the slots, which the slots group reads and writes in
// storage itself (tableStores).
var slotStateCodec binCodec[slotState, *slotState]

// slotWrite is a record of the slots group's table: slot Key's new state,
// as its storage holds it (slotStateCodec's bytes). goka sets the record's
// own key, the size, to it too, where nothing reads it.
type slotWrite struct {
	Key   string
	State []byte
}

func (w *slotWrite) sizeHint() int { return 8 + len(w.Key) + len(w.State) }

func (w *slotWrite) appendBin(b []byte) []byte {
	return append(appendStr(b, w.Key), w.State...)
}

func (w *slotWrite) readBin(r *binReader) {
	w.Key = r.str()
	if r.err == nil {
		w.State = r.left()
		r.off = len(r.b)
	}
}

// recoverSlots is the slots group's update callback: goka calls it for each
// record of the group's table while it recovers a partition, before the
// partition's callbacks run. Beside the record itself at the size's key
// (goka's default) it sets the slot that the record wrote.
func (p *Packer) recoverSlots(ctx goka.UpdateContext, s storage.Storage, key string, value []byte) error {
	if err := goka.DefaultUpdate(ctx, s, key, value); err != nil || value == nil {
		return err
	}
	v, err := binCodec[slotWrite, *slotWrite]{}.Decode(value)
	if err != nil {
		return recoverError(ctx, err)
	}
	w := v.(*slotWrite)
	return s.Set(w.Key, w.State)
}

// slotMsg is what a decision brings to the slot (size, window, rank): an item
// that took that rank, or the news that the window closed and the slot will
// never be completed.
type slotMsg struct {
	Stream record.Stream
	ID     string
	Close  bool
	Size   string
	Window int64
	Trace  traceRef // of the record that brought the item, or that closed the window
}

// slotState is where the k-th toy meets the k-th box. Every field is written
// at most once, so a redelivered message recomputes the same outputs.
type slotState struct {
	Size   string `json:"s"`
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

func (s *slotState) sizeHint() int {
	return 96 + len(s.Toy) + len(s.Box) + len(s.ToyTrace.TraceState) + len(s.BoxTrace.TraceState)
}

func (s *slotState) appendBin(b []byte) []byte {
	b = appendStr(b, s.Size)
	b = binary.AppendVarint(b, s.Window)
	b = appendStr(b, s.Toy)
	b = appendStr(b, s.Box)
	b = append(b, flag(s.Closed, 1))
	b = s.ToyTrace.appendBin(b)
	return s.BoxTrace.appendBin(b)
}

func (s *slotState) readBin(r *binReader) {
	s.Size = r.str()
	s.Window = r.varint()
	s.Toy = r.str()
	s.Box = r.str()
	s.Closed = r.byte1()&1 != 0
	s.ToyTrace.readBin(r)
	s.BoxTrace.readBin(r)
}

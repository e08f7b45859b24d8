package packer

import (
	"github.com/lovoo/goka"

	"github.com/northpole-workshop/northpole/internal/record"
)

// The slots are the windowed stream-table join of the packer: the stream
// of ranked items (the clock's decisions) is joined with the slots, keyed by
// (line, window, rank). The k-th toy and the k-th box of a window meet in
// slot k; a window's closing tells the slots that will stay half-empty to
// report their item as unpacked or spare, and then the window's slots are
// forgotten. The slots live in memory beside the line's clock
// (tablePart.slots), and are never written to Kafka: they are a function of
// the decisions, and goka's recovery of the clock table rebuilds them
// (restoreSlots). The clock
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
		p.slot(ctx, part, slotRef{r.Line, ev.Window, ev.Rank}, &slotMsg{Stream: r.Stream, ID: r.ID, Trace: r.Trace, ArrivedUS: r.ArrivedUS})
	}
	for _, c := range ev.Closed {
		for k := min(c.Toys, c.Boxes) + 1; k <= max(c.Toys, c.Boxes); k++ {
			p.slot(ctx, part, slotRef{r.Line, c.Start, k}, &slotMsg{Close: true, Trace: r.Trace})
		}
		if len(part.replays) > 0 {
			// A replay may still mention the window: forgotten once
			// every replay is done (replay).
			part.closedKept = append(part.closedKept, closedWindowOf{line: r.Line, w: c})
			continue
		}
		// Nothing mentions a window after its closing: a later item of it
		// would be late.
		part.forgetWindow(r.Line, c)
	}
}

// slot pairs the k-th toy and the k-th box of a window. Its fields are
// written once, and its outputs are a function of its state and the
// message, so any redelivery produces the same rows again (consumers
// deduplicate by key).
func (p *Packer) slot(ctx goka.Context, part *tablePart, ref slotRef, m *slotMsg) {
	slot := part.updateSlot(ref, m)
	ws := part.windowText(slot.Window)
	t := p.cfg.Topics
	// ctx is the callback's of the record that m is about, traced as it.
	switch {
	case slot.Toy != "" && slot.Box != "":
		key := itemKey(slot.Line, slot.Window, slot.Toy)
		ctx = withItems(ctx, slot.ToyTrace, slot.BoxTrace)
		ctx.Emit(goka.Stream(t.Packed), key, p.packedRow(slot, ws, key))
		if p.metrics != nil {
			p.metrics.row(rowPacked, slot.Line)
			p.metrics.packed(slot.Line, m.ArrivedUS) // m brought the later item
		}
	case slot.Closed && slot.Toy != "":
		key := itemKey(slot.Line, slot.Window, slot.Toy)
		withItems(ctx, slot.ToyTrace).Emit(goka.Stream(t.Unpacked), key, p.unpackedRow(slot, ws, key))
		if p.metrics != nil {
			p.metrics.row(rowUnpacked, slot.Line)
		}
	case slot.Closed && slot.Box != "":
		key := itemKey(slot.Line, slot.Window, slot.Box)
		withItems(ctx, slot.BoxTrace).Emit(goka.Stream(t.Spare), key, p.spareRow(slot, ws, key))
		if p.metrics != nil {
			p.metrics.row(rowSpare, slot.Line)
		}
	}
}

// updateSlot applies m to the slot ref and returns its state, valid until
// the next update: an item fills the slot's place of its stream, a closing
// marks it closed. Each field is set once.
func (t *tablePart) updateSlot(ref slotRef, m *slotMsg) *slotState {
	wref := windowRef{ref.line, ref.window}
	w := t.slots[wref]
	if w == nil {
		w = &windowSlots{}
		if kc := t.keyClocks[ref.line]; kc != nil && kc.lastPlaces > 0 {
			// A line's windows are alike: sized as the last, the first
			// piece is made once rather than grown through doublings.
			w.pieces = [][]slotState{make([]slotState, 0, min(kc.lastPlaces, slotPiece))}
		}
		t.slots[wref] = w
	}
	slot := w.place(ref.rank)
	if slot.Line == "" {
		slot.Line, slot.Window = ref.line, ref.window
		w.n++
		if t.state != nil {
			t.state.slots[lineSizeIndex(ref.line)].Add(1)
		}
	}
	switch {
	case m.Close:
		slot.Closed = true
	case m.Stream == record.Boxes:
		if slot.Box == "" {
			slot.Box, slot.BoxTrace = m.ID, m.Trace
		}
	default:
		if slot.Toy == "" {
			slot.Toy, slot.ToyTrace = m.ID, m.Trace
		}
	}
	return slot
}

// windowText is the start of window w as the rows write it. A window's
// rows come together, so the last one is kept rather than formatted again.
func (t *tablePart) windowText(w int64) string {
	if t.lastWindow.text == "" || t.lastWindow.start != w {
		t.lastWindow.start, t.lastWindow.text = w, record.FormatMicros(w)
	}
	return t.lastWindow.text
}

// forgetWindow deletes the slots of a closed window of line.
func (t *tablePart) forgetWindow(line string, c closedWindow) {
	ref := windowRef{line, c.Start}
	w := t.slots[ref]
	if w == nil {
		return
	}
	delete(t.slots, ref)
	if t.state != nil {
		t.state.slots[lineSizeIndex(line)].Add(-int64(w.n))
	}
	if kc := t.keyClocks[line]; kc != nil && len(w.pieces) > 0 {
		kc.lastPlaces = (len(w.pieces)-1)*slotPiece + len(w.pieces[len(w.pieces)-1])
	}
}

// restoreSlots rebuilds the slots of one partition from the decision at
// offset of the clock table, as goka's recovery reads them oldest first
// (recoverClock), without writing anything: items fill their slots, closings
// mark theirs closed. The table holds every item of every window that a
// decision still to be replayed mentions (horizon.go), so those windows'
// slots come back whole. Closed windows keep their slots until the recovery
// ends (tablePart.recovered), and those a replay mentions until every
// replay is done: a record delivered again must find them as they were.
func (t *tablePart) restoreSlots(ev *decision) {
	r := &ev.Rec
	if ev.Class == classItem {
		t.updateSlot(slotRef{r.Line, ev.Window, ev.Rank}, &slotMsg{Stream: r.Stream, ID: r.ID, Trace: r.Trace})
	}
	for _, c := range ev.Closed {
		for k := min(c.Toys, c.Boxes) + 1; k <= max(c.Toys, c.Boxes); k++ {
			t.updateSlot(slotRef{r.Line, c.Start, k}, &slotMsg{Close: true})
		}
		t.closedKept = append(t.closedKept, closedWindowOf{line: r.Line, w: c})
	}
}

// closedWindowOf is a closed window of a line.
type closedWindowOf struct {
	line string
	w    closedWindow
}

// slotRef is a slot: the rank of a line's window where the k-th toy meets
// the k-th box.
type slotRef struct {
	line   string
	window int64
	rank   int
}

// windowSlots are the slots of one line's window, slot k at place k-1:
// ranks are counts, so a window's slots fill its places from the first,
// and a slot costs no allocation or map entry of its own. The places come
// in pieces of slotPiece, each but the last full, so that a growing window
// never copies more than one piece. A place is empty (its Line "") only
// where a recovery read a window's closing but not its first items, which
// the cleaner had deleted; n counts the slots that are not.
type windowSlots struct {
	pieces [][]slotState
	n      int
}

// slotPiece is how many places a piece of a window holds (40 KiB of them).
const slotPiece = 256

// place is the place of rank k (k ≥ 1), the window grown to hold it.
func (w *windowSlots) place(k int) *slotState {
	p, i := (k-1)/slotPiece, (k-1)%slotPiece
	for len(w.pieces) <= p {
		if last := len(w.pieces) - 1; last >= 0 {
			w.pieces[last] = growPiece(w.pieces[last], slotPiece, last == 0)
		}
		w.pieces = append(w.pieces, nil)
	}
	if len(w.pieces[p]) <= i {
		w.pieces[p] = growPiece(w.pieces[p], i+1, p == 0)
	}
	return &w.pieces[p][i]
}

// growPiece lengthens piece to n places (n ≤ slotPiece). The first piece
// of a window doubles its capacity up to slotPiece, as a window of a few
// items (most of them, with many lines) should hold a few places; a window
// that needs a second piece is large, so the pieces after the first are
// made whole at once.
func growPiece(piece []slotState, n int, first bool) []slotState {
	if n <= cap(piece) {
		return piece[:n]
	}
	c := slotPiece
	if first {
		c = min(max(2*cap(piece), n, 4), slotPiece)
	}
	grown := make([]slotState, n, c)
	copy(grown, piece)
	return grown
}

// slotMsg is what a decision brings to a slot: an item that took its rank,
// or the news that the window closed and the slot will never be completed.
type slotMsg struct {
	Stream record.Stream
	ID     string
	Close  bool
	Trace  traceRef // of the record that brought the item, or that closed the window
	// ArrivedUS is the Kafka timestamp of the input record that brought the
	// item (validRecord.ArrivedUS).
	ArrivedUS int64
}

// slotState is where the k-th toy meets the k-th box. Every field is written
// at most once, so a redelivered message recomputes the same outputs.
type slotState struct {
	Line   string
	Window int64
	Toy    string
	Box    string
	Closed bool
	// ToyTrace and BoxTrace remember the trace context of the record that
	// brought each item, written once with the item (zero with tracing
	// off), so that the "send packed" span can link to both items whichever record
	// completes the pair. They never affect a result.
	ToyTrace traceRef
	BoxTrace traceRef
}

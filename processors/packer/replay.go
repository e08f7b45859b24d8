package packer

import (
	"context"
	"fmt"

	"github.com/lovoo/goka"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/northpole-workshop/northpole/internal/record"
)

// The clock callback writes a record's decision to the clock table and its
// rows to the outputs, and goka commits the record's offset once all of
// them are acknowledged (inorder.go). A crash can therefore leave a decision
// in the table whose rows were not all written: its record was not
// committed, is delivered again, and the recovered clock has applied it
// already. Such a record must not be decided again (its decision is kept),
// but its rows must be written again. So the recovery keeps the decisions
// whose records the group has not committed, the replays, and admit writes
// a replay's rows again when its record comes. A committed record's rows
// were all written, in the callback that decided it or in one that
// replayed it.
//
// What a replay writes is a function of the decision and of slots that are
// written once (slots.go): the same rows, with the same keys and values,
// whatever the order the inputs come again in, as long as the slots of the
// windows the replays mention are kept until every replay is done.

// deliveredBy is the input and offset of the record that decision's record
// came in: the loop record of a stray, else the input record itself.
func deliveredBy(r *validRecord) (input int, offset int64) {
	if r.Via > 0 {
		return inLoop, r.Via - 1
	}
	return streamIndex(r.Stream), r.Offset
}

// recordRef is an input record, as the clock identifies it (streamClock.applied).
type recordRef struct {
	stream    record.Stream
	partition int32
	offset    int64
}

// noteReplay takes the decision read while goka recovers the table: a
// replay unless its record is committed.
func (t *tablePart) noteReplay(ev *decision) {
	if in, off := deliveredBy(&ev.Rec); off < t.committed[in] {
		return
	}
	if t.replays == nil {
		t.replays = map[recordRef]*decision{}
	}
	r := &ev.Rec
	t.replays[recordRef{r.Stream, r.Partition, r.Offset}] = ev
}

// replay writes again the rows of obs's decision when the recovery kept it
// as a replay, and forgets it: obs is delivered again once. Once every
// replay is done, the windows that closed before are forgotten.
func (p *Packer) replay(ctx goka.Context, part *tablePart, obs *validRecord) {
	if len(part.replays) == 0 {
		return
	}
	ref := recordRef{obs.Stream, obs.Partition, obs.Offset}
	ev, ok := part.replays[ref]
	if !ok {
		return
	}
	delete(part.replays, ref)
	p.emitRows(ctx, part, ev)
	if len(part.replays) > 0 {
		return
	}
	for _, c := range part.closedKept {
		part.forgetWindow(c.line, c.w)
	}
	part.closedKept = nil
}

// recovered ends the recovery of the partition: the slots of the windows
// that closed are forgotten, but for those a replay mentions (an item of
// it, or its closing), which are kept until every replay is done; and the
// horizon marks its bound at the last record read.
func (t *tablePart) recovered() {
	mentioned := map[windowRef]bool{}
	for _, ev := range t.replays {
		if ev.Class == classItem {
			mentioned[windowRef{ev.Rec.Line, ev.Window}] = true
		}
		for _, c := range ev.Closed {
			mentioned[windowRef{ev.Rec.Line, c.Start}] = true
		}
	}
	kept := t.closedKept[:0]
	for _, c := range t.closedKept {
		if mentioned[windowRef{c.line, c.w.Start}] {
			kept = append(kept, c)
			continue
		}
		t.forgetWindow(c.line, c.w)
	}
	t.closedKept = kept
	if h := t.horizon; h != nil && h.next > 0 {
		// The bound at the last record read is exact (see follow).
		// Without it a packer restarted on a quiet table would not clean
		// until new records came.
		h.mark(h.next - 1)
	}
}

// committedInputs are the clock group's committed offsets of partition's
// inputs (toys, boxes, the loop), 0 where it has committed none: where goka
// consumes them from after this recovery.
func (p *Packer) committedInputs(ctx context.Context, adm *kadm.Client, partition int32) ([nInputs]int64, error) {
	var at [nInputs]int64
	offs, err := adm.FetchOffsets(ctx, p.cfg.clockGroup())
	if err != nil {
		return at, fmt.Errorf("committed offsets of group %s: %w", p.cfg.clockGroup(), err)
	}
	for i, topic := range p.cfg.inputTopics() {
		if o, ok := offs.Lookup(topic, partition); ok && o.Err == nil {
			at[i] = max(o.At, 0)
		}
	}
	return at, nil
}

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
// them are acknowledged, in order with every earlier record's (inorder.go).
// A crash can therefore leave a decision in the table whose rows were not
// all written: its record was not committed, is delivered again, and the
// recovered clock has applied it already. Such a record must not be decided
// again (its decision is kept), but its rows must be written again. The
// recovery keeps the decisions that may be in that state, the replays, and
// admit writes a replay's rows again when its record comes.
//
// Which decisions may be in that state follows from the order: a committed
// record's own writes, and every write issued before them, were
// acknowledged. So every decision up to the last one in the table whose
// record was committed (safe) has all its rows written, and the replays are
// the decisions after it, whose records are all delivered again. What a
// replay writes is a function of the decision and of slots that are
// written once (slots.go): the same rows, with the same keys and values.

// inputs a decision's record came from in the clock group: toys, boxes
// (streamIndex) and the loop.
const nInputs = 3

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

// noteReplay takes the decision at offset of the clock table, read while
// goka recovers it: a replay while no later decision's record is committed.
func (t *tablePart) noteReplay(offset int64, ev *decision) {
	in, off := deliveredBy(&ev.Rec)
	if off < t.committed[in] {
		clear(t.replays)
		t.safe = offset
		return
	}
	if t.replays == nil {
		t.replays = map[recordRef]*decision{}
	}
	r := &ev.Rec
	// The decoded value may share the fetched batch's bytes.
	r.Raw, r.Key = append([]byte(nil), r.Raw...), append([]byte(nil), r.Key...)
	t.replays[recordRef{r.Stream, r.Partition, r.Offset}] = ev
}

// replay writes again the rows of obs's decision when the recovery kept it
// as a replay, and forgets it: obs is delivered again once.
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
}

// recovered ends the recovery of the partition: the slots of the windows
// closed up to safe are forgotten (their rows are written, and no replay
// mentions them), and the horizon marks its bound at the last record read.
// Windows closed by replays are forgotten when their closing is replayed.
func (t *tablePart) recovered() error {
	for _, c := range t.closedInRestore {
		if c.at <= t.safe {
			if err := t.forgetWindow(c.line, c.w, false); err != nil {
				return err
			}
		}
	}
	t.closedInRestore = nil
	if h := t.horizon; h != nil && h.next > 0 {
		// The bound at the last record read is exact (see follow).
		// Without it a packer restarted on a quiet table would not clean
		// until new records came.
		h.mark(h.next - 1)
	}
	return nil
}

// committedInputs are the clock group's committed offsets of partition's
// inputs (toys, boxes, the loop), 0 where it has committed none: where goka
// consumes them from after this recovery.
func (p *Packer) committedInputs(ctx context.Context, partition int32) ([nInputs]int64, error) {
	var at [nInputs]int64
	cl, err := p.client()
	if err != nil {
		return at, fmt.Errorf("committed offsets of group %s: kafka client: %w", p.cfg.clockGroup(), err)
	}
	defer cl.Close()
	offs, err := kadm.NewClient(cl).FetchOffsets(ctx, p.cfg.clockGroup())
	if err != nil {
		return at, fmt.Errorf("committed offsets of group %s: %w", p.cfg.clockGroup(), err)
	}
	for i, topic := range p.inputTopics() {
		if o, ok := offs.Lookup(topic, partition); ok && o.Err == nil {
			at[i] = max(o.At, 0)
		}
	}
	return at, nil
}

// inputTopics are the clock group's inputs, in the order of deliveredBy.
func (p *Packer) inputTopics() [nInputs]string {
	return [nInputs]string{p.cfg.Topics.Toys, p.cfg.Topics.Boxes, p.cfg.clockLoop()}
}

package packer

import (
	"container/heap"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// The clock table is the clock group's state, and a restart restores the
// clocks, dedupe entries and slots from it (recoverClock). It needs not all
// of it: the state a record leaves depends on the records before it only
// through
//
//   - the items of the windows still open (their counts, their ids, their
//     slots), and
//   - the last decision of each (line, stream, source partition): its
//     stream's greatest made_at and the offset the clock skips replays up to,
//     or a later piece of a walk over the partition's clocks, which holds the
//     same (clock.go). Once a walk is complete, every line's clock is in its
//     pieces or in decisions after its first piece.
//
// A restart also replays the decisions whose records the group has not
// committed (replay.go). So every record before the oldest open window's
// first item, or the first piece of the last complete walk, can be deleted
// once the records of the decisions up to it are committed: what the
// horizon keeps grows with the open windows, not with the lines. The
// horizon follows the decisions as Kafka acknowledges them (their offsets)
// and keeps that bound; a cleaner deletes the records below it with
// DeleteRecords once the group has committed every input record that a
// decision up to the bound's record answers, so that no record a restart
// may replay, and no item of a window such a record mentions, is lost
// (ARCHITECTURE.md, "Why replays are harmless"). What the table keeps, and
// what a restart reads, is then about the records of the open windows plus
// those since the last cleaning.

// horizonEvery is how many decisions pass at most between two bounds a
// partition's horizon keeps for the cleaner; a decision that closes windows
// takes one too, as the bound moves on when the oldest window closes.
const horizonEvery = 1024

// horizon follows one partition of the clock table, in offset order: the
// first offset of every window not yet closed, the last decision of each
// (line, stream, source partition), and how far the decisions reached in
// each input.
type horizon struct {
	next   int64               // the offset after the last one observed
	pos    [nInputs]int64      // the offset after the last input record a decision answered, per input
	opened map[windowRef]int64 // first offset of each window with items, until it closes
	firsts firstOffsets        // the same offsets, least first; closed ones dropped when met
	walk   walkStart           // the walk whose pieces are being read
	lines  int64               // the first piece of the last complete walk, -1 before one
	count  int                 // decisions observed
	mu     sync.Mutex          // guards marks: the cleaner reads them
	marks  []horizonMark       // oldest first
	gone   int64               // the offset below which the cleaner deleted the records
	marked int64               // the offset after the last mark's, under mu: for kept
}

type windowRef struct {
	line  string
	start int64
}

// walkStart is where a walk's first piece is.
type walkStart struct {
	id uint64
	at int64
	on bool
}

// horizonMark says that a restart needs no record below keep once the
// group has committed pos in each input: every decision up to at answers
// a record before pos.
type horizonMark struct {
	at, keep int64
	pos      [nInputs]int64
}

// horizonFact is what the horizon needs of a decision.
type horizonFact struct {
	line   string
	item   bool
	window int64   // of the item
	closed []int64 // the starts of the windows it closed
	walk   uint64  // with piece: the walk of the piece it holds
	piece  bool
	first  bool
	last   bool
	input  int   // deliveredBy
	next   int64 // the offset after its record's
}

// factOf is ev's fact; it shares nothing with ev.
func factOf(ev *decision) horizonFact {
	in, off := deliveredBy(&ev.Rec)
	f := horizonFact{line: ev.Rec.Line, item: ev.Class == classItem, window: ev.Window, input: in, next: off + 1}
	if len(ev.Closed) > 0 {
		f.closed = make([]int64, len(ev.Closed))
		for i, c := range ev.Closed {
			f.closed[i] = c.Start
		}
	}
	if sn := ev.Snapshot; sn != nil {
		f.piece, f.walk, f.first, f.last = true, sn.Walk, sn.First, sn.Last
	}
	return f
}

func newHorizon() *horizon {
	return &horizon{opened: map[windowRef]int64{}, lines: -1}
}

// observe takes the decision at offset, once (see follow), and marks the
// bound every horizonEvery decisions and at every decision that closes
// windows.
func (h *horizon) observe(offset int64, f *horizonFact) {
	if h.follow(offset, f) && (h.count%horizonEvery == 0 || len(f.closed) > 0) {
		h.mark(offset)
	}
}

// follow takes the decision at offset, once, and reports whether it was
// new. A recovery follows without marking: its records start where an
// earlier cleaning cut the table, and a bound taken at a record before that
// cleaning's mark would not know the windows whose first items went with
// the records cut. At the last record recovered it knows all it must (the
// cleaning's mark was at or before it), and the recovery marks there
// (tablePart.recovered).
func (h *horizon) follow(offset int64, f *horizonFact) bool {
	if offset < h.next {
		return false
	}
	if h.count == 0 {
		// The table's first record, as far as this horizon knows: the
		// records below it are gone (an earlier run's cleaning).
		h.mu.Lock()
		h.gone = max(h.gone, offset)
		h.mu.Unlock()
	}
	h.next = offset + 1
	h.pos[f.input] = max(h.pos[f.input], f.next)
	if f.item {
		w := windowRef{f.line, f.window}
		if _, ok := h.opened[w]; !ok {
			h.opened[w] = offset
			heap.Push(&h.firsts, windowFirst{offset, w})
		}
	}
	for _, start := range f.closed {
		delete(h.opened, windowRef{f.line, start})
	}
	if f.piece {
		// A walk cut short (its writer restarted, or lost the partition)
		// is followed by a new one's first piece, and never completes.
		if f.first {
			h.walk = walkStart{id: f.walk, at: offset, on: true}
		}
		if f.last && h.walk.on && h.walk.id == f.walk {
			h.lines = h.walk.at
			h.walk.on = false
		}
	}
	h.count++
	return true
}

// mark keeps the bound at offset: the oldest offset that an open window or
// the lines' clocks need (nothing deletable before a complete walk). Windows
// never open again and walks complete in order, so the bound never
// decreases.
func (h *horizon) mark(offset int64) {
	keep := min(offset, max(h.lines, 0))
	for len(h.firsts) > 0 {
		f := h.firsts[0]
		if o, open := h.opened[f.w]; open && o == f.offset {
			keep = min(keep, f.offset)
			break
		}
		heap.Pop(&h.firsts)
	}
	h.mu.Lock()
	if n := len(h.marks); n == 0 || h.marks[n-1].at < offset {
		h.marks = append(h.marks, horizonMark{at: offset, keep: keep, pos: h.pos})
	}
	h.marked = max(h.marked, offset+1)
	h.mu.Unlock()
}

// kept is about how many records the table keeps in the partition: from
// the lowest not deleted to the last one marked (a mark is taken at least
// every horizonEvery decisions, and at every one that closes windows).
func (h *horizon) kept() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return max(h.marked-h.gone, 0)
}

// firstOffsets is a min-heap of the open windows' first offsets.
type firstOffsets []windowFirst

type windowFirst struct {
	offset int64
	w      windowRef
}

func (f firstOffsets) Len() int           { return len(f) }
func (f firstOffsets) Less(i, j int) bool { return f[i].offset < f[j].offset }
func (f firstOffsets) Swap(i, j int)      { f[i], f[j] = f[j], f[i] }
func (f *firstOffsets) Push(x any)        { *f = append(*f, x.(windowFirst)) }
func (f *firstOffsets) Pop() any {
	old := *f
	x := old[len(old)-1]
	*f = old[:len(old)-1]
	return x
}

// deletable is the offset below which the records may be deleted once the
// group has committed offsets committed of the partition's inputs (the
// next ones it processes), or 0 when nothing more may be. It drops the
// marks that a later one supersedes.
func (h *horizon) deletable(committed [nInputs]int64) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for n < len(h.marks) && covered(h.marks[n].pos, committed) {
		n++
	}
	if n == 0 {
		return 0
	}
	keep := h.marks[n-1].keep
	h.marks = h.marks[n-1:]
	if keep <= h.gone {
		return 0
	}
	return keep
}

// covered reports whether committed offsets are at or past pos in every
// input.
func covered(pos, committed [nInputs]int64) bool {
	for i := range pos {
		if committed[i] < pos[i] {
			return false
		}
	}
	return true
}

// deleted records that the records below offset are gone.
func (h *horizon) deleted(offset int64) {
	h.mu.Lock()
	h.gone = max(h.gone, offset)
	h.mu.Unlock()
}

// clean deletes, every interval, the clock table's records that no restart
// needs any more, in the partitions this packer's clock group holds, until
// ctx ends. An error is logged and the next round tries again: the records
// are only kept longer.
func (p *Packer) clean(ctx context.Context, every time.Duration) {
	cl, err := p.client()
	if err != nil {
		p.log.Warn("clock table cleaner: no Kafka client; the table is not cleaned", "err", err)
		return
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := p.cleanOnce(ctx, adm); err != nil && ctx.Err() == nil {
			p.log.Warn("clock table cleaner: records not deleted this round", "topic", p.cfg.clockTable(), "err", err)
		}
	}
}

// cleanOnce deletes what may be deleted now.
func (p *Packer) cleanOnce(ctx context.Context, adm *kadm.Client) error {
	table := p.cfg.clockTable()
	committed, err := adm.FetchOffsets(ctx, p.cfg.clockGroup())
	if err != nil {
		return fmt.Errorf("committed offsets of group %s: %w", p.cfg.clockGroup(), err)
	}
	del := kadm.Offsets{}
	for part, h := range p.clockStores.horizons() {
		var at [nInputs]int64
		for i, topic := range p.cfg.inputTopics() {
			if c, ok := committed.Lookup(topic, part); ok && c.Err == nil {
				at[i] = c.At
			}
		}
		if keep := h.deletable(at); keep > 0 {
			del.Add(kadm.Offset{Topic: table, Partition: part, At: keep})
		}
	}
	if len(del) == 0 {
		return nil
	}
	resp, err := adm.DeleteRecords(ctx, del)
	if err != nil {
		return fmt.Errorf("delete records of %s: %w", table, err)
	}
	for _, r := range resp.Sorted() {
		if r.Err != nil {
			err = fmt.Errorf("delete records of %s/%d: %w", r.Topic, r.Partition, r.Err)
			continue
		}
		if h := p.clockStores.horizonOf(r.Partition); h != nil {
			h.deleted(r.LowWatermark)
		}
		p.log.Debug("clock table cleaned", "topic", r.Topic, "partition", r.Partition, "from", r.LowWatermark)
	}
	return err
}

// factQueue holds the facts of the decisions written and not yet
// acknowledged, oldest first: the clock callback adds one with each
// decision, goka's acknowledgements take them (tablePart.written).
type factQueue struct {
	mu   sync.Mutex
	q    []horizonFact
	head int
}

func (q *factQueue) push(f horizonFact) {
	q.mu.Lock()
	if q.head > 0 && (q.head == len(q.q) || len(q.q) == cap(q.q)) {
		// Slide the facts not yet taken down instead of growing: the
		// queue holds what is in flight, not what was ever written.
		n := copy(q.q, q.q[q.head:])
		clear(q.q[n:])
		q.q, q.head = q.q[:n], 0
	}
	q.q = append(q.q, f)
	q.mu.Unlock()
}

// written feeds the horizon the decision at offset, acknowledged: the
// oldest fact not yet taken. goka tells no offset 0 (its SetOffset skips
// it), so a partition's first decision is taken with its second.
func (t *tablePart) written(offset int64) {
	h := t.horizon
	if h == nil {
		return
	}
	q := &t.facts
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == len(q.q) {
		return // goka's recovery, which follows the table itself
	}
	if offset == 1 && h.next == 0 && len(q.q)-q.head >= 2 {
		h.observe(0, &q.q[q.head])
		q.q[q.head] = horizonFact{}
		q.head++
	}
	h.observe(offset, &q.q[q.head])
	q.q[q.head] = horizonFact{}
	q.head++
}

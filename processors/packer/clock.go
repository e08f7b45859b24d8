package packer

import (
	"fmt"
	"math/rand/v2"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/storage"

	"github.com/northpole-workshop/northpole/internal/record"
)

// The clock stage, its goka side: one state machine per key (keyClock,
// keyclock.go; the key is a packing line) applies the records of that key in offset
// order, decides lateness and ranks, and closes windows. It writes one
// record of its table per event: the decision, which holds the record it
// was made for and its stream's greatest made_at after it, and which the
// slots then join (slots.go). The states are never written at all: goka's
// recovery of the table restores them from the decisions (recoverClock). So an event's decision and the state it leaves
// are one Kafka record, and what an event writes does not grow with the
// state (a line's open windows, thousands while one input is consumed far
// ahead of the other).
//
// The table keeps only what a restart needs: the cleaner deletes the
// records before the oldest one that a window still open, or the last
// decision of a (line, stream, partition), or a replay needs (horizon.go). A restore
// from such a suffix gives the same open windows, watermarks, offsets and
// dedupe entries as one from the first record (see keyClock.restore).

// decide applies one record, its lateness and duplicate decided, to kc, the
// clock of ctx's key kept in part, and records the decision in its table.
func (p *Packer) decide(ctx goka.Context, part *tablePart, kc *keyClock, obs *validRecord) {
	open := len(kc.Open)
	if !kc.apply(p.params, *obs) {
		return
	}
	if part.state != nil {
		part.state.windows[kc.size].Add(int64(len(kc.Open) - open))
	}
	piece := 0
	if obs.Offset%snapshotEvery == 0 {
		kc.Ev.Snapshot, piece = part.nextPiece(p.params)
	}
	if kc.Ev.NewPartition {
		p.log.Warn("records of one stream and line arrive from more than one partition; they are processed in arrival order, "+
			"and the reference orders them by (partition, offset), so results may differ from it: partition producers' keys with FNV-1a "+
			"(see README) and do not change the partition count of the input topics",
			"stream", obs.Stream, "line", obs.Line, "partition", obs.Partition, "offset", obs.Offset)
	}
	if kc.Ev.Class == classDuplicate {
		// Up to 30 bytes for each window it closes (decision.appendBin).
		p.fitRaw(&kc.Ev.Rec, 30*len(kc.Ev.Closed)+piece)
	}
	part.remember(kc, p.params, kc.Ev)
	ctx.SetValue(kc.Ev)
	if part.horizon != nil {
		part.facts.push(factOf(kc.Ev))
	}
	p.emitRows(ctx, part, kc.Ev)
	// SetValue has encoded it. Kept, it would hold a piece of the walk and
	// its record's bytes, a slice of the consumer's whole fetched batch.
	*kc.Ev = decision{}
}

// recoverClock is the clock group's update callback: goka calls it for each
// record of the clock table, in order, while it recovers a partition, before
// the partition's callbacks run. It restores the clock of the decision's
// key from it, adds the dedupe entry that the decision made, fills the
// slots, and keeps the decision when its record will be delivered again
// (replay.go); goka's default keeps the record at its key, where nothing
// reads it.
func (p *Packer) recoverClock(ctx goka.UpdateContext, s storage.Storage, key string, value []byte) error {
	if err := goka.DefaultUpdate(ctx, s, key, value); err != nil || value == nil {
		return err
	}
	v, err := binCodec[decision, *decision]{}.Decode(value)
	if err != nil {
		return recoverError(ctx, err)
	}
	ev := v.(*decision)
	part, err := p.clockStores.part(ctx.Partition())
	if err != nil {
		return recoverError(ctx, err)
	}
	kc := part.clockOf(key)
	open := len(kc.Open)
	restored, err := kc.restore(p.params, ev)
	if err != nil {
		return recoverError(ctx, err)
	}
	if part.state != nil {
		part.state.windows[kc.size].Add(int64(len(kc.Open) - open))
	}
	if restored {
		part.remember(kc, p.params, ev)
	}
	if ev.Snapshot != nil {
		if err := part.restoreSnapshot(p.params, ev.Snapshot); err != nil {
			return recoverError(ctx, err)
		}
	}
	part.restoreSlots(ev)
	if h := part.horizon; h != nil {
		f := factOf(ev)
		h.follow(ctx.Offset(), &f)
	}
	part.noteReplay(ev)
	return nil
}

// snapshotEvery: the decision of each input record whose offset is a
// multiple of it carries the next piece of its partition's walk.
const snapshotEvery = 256

// A piece holds at most pieceKeys keys and about pieceBytes bytes of them,
// so that a decision fits in a record whatever the lines of its partition
// (fitRaw reserves the piece's size), and a walk covers about a key per
// decision: its records, which the table keeps, are about as many as the
// partition's lines.
const (
	pieceKeys  = 256
	pieceBytes = 8 << 10
)

// snapshotWalk is the walk under way over a partition's key clocks, in the
// order the keys were first seen (tablePart.order). A walk covers the keys
// the partition had when it began; a key seen later has all its records
// after the walk's first piece, which is what a complete walk promises
// (horizon.go). It lives in memory only: a restart begins a new walk.
type snapshotWalk struct {
	id        uint64
	next, end int // the next key in order to put in a piece; the walk's end
}

// nextPiece is the next piece of the partition's walk, and its size bound in
// bytes. Which keys it holds depends on the walk, not on the record, and
// need not: a replay that decides a record again writes a true piece of a
// new walk (its clocks are the ones the first decision saw).
func (t *tablePart) nextPiece(p paramsUS) (*snapshot, int) {
	w := &t.walk
	sn := &snapshot{WindowUS: p.WindowUS, LatenessUS: p.LatenessUS}
	if w.next >= w.end {
		*w = snapshotWalk{id: rand.Uint64(), end: len(t.order)}
		sn.First = true
	}
	sn.Walk = w.id
	size := 64
	for w.next < w.end && len(sn.Keys) < pieceKeys {
		kc := t.keyClocks[t.order[w.next]]
		ks := keyStreams{Key: t.order[w.next], Toys: kc.Toys.clone(), Boxes: kc.Boxes.clone()}
		n := ks.binSize()
		if len(sn.Keys) > 0 && size+n > pieceBytes {
			break
		}
		sn.Keys = append(sn.Keys, ks)
		size += n
		w.next++
	}
	sn.Last = w.next >= w.end
	return sn, size
}

// restoreSnapshot merges a snapshot into the partition's key clocks: nothing in
// it is older than what the records before it restored, and records after
// it move the clocks on.
func (t *tablePart) restoreSnapshot(p paramsUS, sn *snapshot) error {
	if sn.WindowUS != p.WindowUS || sn.LatenessUS != p.LatenessUS {
		return fmt.Errorf("the table was written with window %d µs and lateness %d µs, this packer has %d µs and %d µs: "+
			"run with those, or under a new group", sn.WindowUS, sn.LatenessUS, p.WindowUS, p.LatenessUS)
	}
	for _, ks := range sn.Keys {
		kc := t.clockOf(ks.Key)
		kc.Toys.merge(ks.Toys)
		kc.Boxes.merge(ks.Boxes)
		for _, x := range []record.Stream{record.Toys, record.Boxes} {
			gone := kc.ids[streamIndex(x)].forget(p.watermark(*kc.stream(x)), p.WindowUS)
			if t.state != nil {
				t.state.entries[kc.size].Add(-int64(gone))
			}
		}
	}
	return nil
}

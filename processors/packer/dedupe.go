package packer

import (
	"encoding/binary"
	"hash/maphash"
	"slices"

	"github.com/northpole-workshop/northpole/internal/record"
)

// The dedupe entries of a line and stream: for each window still open for
// the stream, the ids of its items, set by the window's first item with each
// id. A record of a window whose end its stream's watermark has passed is
// late before it could be a duplicate, so a window's ids are forgotten as
// soon as that stream's watermark passes its end: at most the windows still
// open for the stream keep ids. They live in memory beside the line's clock
// (keyClock.ids), never in Kafka: they are a function of the decisions, and
// goka's recovery of the clock table sets them again (recoverClock).
//
// A window's ids hold no pointer, so that the collector never walks them:
// one byte slice of length-prefixed ids, and, once a window has more than
// a few, a map from each id's hash to where it is in that slice.

// windowIDs are the ids of one (line, stream)'s items, per window, oldest
// window first.
type windowIDs []idWindow

type idWindow struct {
	start int64
	n     int
	ids   []byte // each id length-prefixed (uvarint)
	// index maps hashID of an id to the offset of its entry in ids, of the
	// first id with that hash; nil while the window has at most scanIDs
	// ids, which has reads one by one.
	index map[uint64]uint32
}

// scanIDs: a window with this many ids or fewer is searched without an
// index. Most windows of a line with few records per window stay below it,
// and a line costs no map then.
const scanIDs = 8

// idSeed seeds hashID. The hashes never leave the process.
var idSeed = maphash.MakeSeed()

// hashID is the hash an id is indexed by.
func hashID(id string) uint64 { return maphash.String(idSeed, id) }

// remember updates the dedupe entries after kc decided ev: an item adds its
// id to its window's, and the ids of the windows that its stream's
// watermark has passed are forgotten. Both the callback and the recovery of
// the table (recoverClock) call it, after the clock applied ev.
func (t *tablePart) remember(kc *keyClock, p paramsUS, ev *decision) {
	rec := &ev.Rec
	ids := &kc.ids[streamIndex(rec.Stream)]
	added := 0
	if ev.Class == classItem {
		ids.add(ev.Window, rec.ID, hashID)
		added = 1
	}
	gone := ids.forget(p.watermark(*kc.stream(rec.Stream)), p.WindowUS)
	if t.state != nil {
		t.state.entries[kc.size].Add(int64(added - gone))
	}
}

func streamIndex(x record.Stream) int {
	if x == record.Boxes {
		return 1
	}
	return 0
}

// has reports whether an item of window start had id. hash is what the
// windows are indexed by: hashID, but for tests that make ids collide.
func (w windowIDs) has(start int64, id string, hash func(string) uint64) bool {
	for i := len(w) - 1; i >= 0 && w[i].start >= start; i-- {
		if w[i].start == start {
			return w[i].has(id, hash)
		}
	}
	return false
}

func (e *idWindow) has(id string, hash func(string) uint64) bool {
	if e.index != nil {
		off, ok := e.index[hash(id)]
		if !ok {
			return false
		}
		if idAt(e.ids, int(off)) == id {
			return true
		}
		// Another id with the same hash: read them all.
	}
	for b := e.ids; len(b) > 0; {
		l, k := binary.Uvarint(b)
		if string(b[k:k+int(l)]) == id {
			return true
		}
		b = b[k+int(l):]
	}
	return false
}

// idAt is the id whose entry begins at off in ids.
func idAt(ids []byte, off int) string {
	l, k := binary.Uvarint(ids[off:])
	return string(ids[off+k : off+k+int(l)])
}

// add lists id under window start (hash as for has). Items arrive mostly
// in window order, so the window is nearly always the last one.
func (w *windowIDs) add(start int64, id string, hash func(string) uint64) {
	ws := *w
	i := len(ws)
	for i > 0 && ws[i-1].start > start {
		i--
	}
	if i == 0 || ws[i-1].start != start {
		ws = slices.Insert(ws, i, idWindow{start: start})
		i++
		*w = ws
	}
	ws[i-1].add(id, hash)
}

func (e *idWindow) add(id string, hash func(string) uint64) {
	off := len(e.ids)
	e.ids = binary.AppendUvarint(e.ids, uint64(len(id)))
	e.ids = append(e.ids, id...)
	e.n++
	switch {
	case e.index != nil:
		if h := hash(id); !e.indexed(h) {
			e.index[h] = uint32(off)
		}
	case e.n > scanIDs:
		e.index = make(map[uint64]uint32, 2*e.n)
		for at := 0; at < len(e.ids); {
			l, k := binary.Uvarint(e.ids[at:])
			if h := hash(string(e.ids[at+k : at+k+int(l)])); !e.indexed(h) {
				e.index[h] = uint32(at)
			}
			at += k + int(l)
		}
	}
}

func (e *idWindow) indexed(h uint64) bool {
	_, ok := e.index[h]
	return ok
}

// forget drops the ids of every window whose end wm has reached, and says
// how many it dropped.
func (w *windowIDs) forget(wm, width int64) int {
	ws := *w
	n, gone := 0, 0
	for ; n < len(ws) && ws[n].start+width <= wm; n++ {
		gone += ws[n].n
	}
	switch {
	case n == len(ws):
		// A quiet line keeps no array for windows it no longer has.
		*w = nil
	case n > 0:
		*w = slices.Delete(ws, 0, n)
	}
	return gone
}

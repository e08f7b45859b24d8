package packer

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/lovoo/goka"

	"github.com/northpole-workshop/northpole/internal/record"
)

// The dedupe entries of a window: one storage key per id (dedupeKey, which
// holds the window), set by the window's first item with that id. A record
// of a window whose end its stream's watermark has passed is late before it
// could be a duplicate, so a window's entries of a stream are forgotten as
// soon as that stream's watermark passes its end: at most the windows still
// open for the stream keep entries. windowIDs lists the keys each window set,
// so that they can be deleted together.

// windowIDs are the dedupe keys that one (line, stream) set, per window,
// oldest window first.
type windowIDs []idWindow

type idWindow struct {
	start int64
	keys  []byte // each key length-prefixed (uvarint): one pointer-free slice per window
}

// seen reports whether key, a dedupe entry, is set in the partition.
func (t *tablePart) seen(ctx goka.Context, key string) bool {
	b, err := t.store.Get(key)
	if err != nil {
		ctx.Fail(fmt.Errorf("read %q in partition %d of %s: %w", key, ctx.Partition(), t.topic, err))
	}
	return b != nil
}

// remember updates the dedupe entries after kc decided ev: an item sets
// its window's entry for its id (key, its dedupeKey), and the entries of the
// windows that its stream's watermark has passed are forgotten. Both the
// callback and the recovery of the table (recoverClock) call it, after the
// clock applied ev.
func (t *tablePart) remember(kc *keyClock, p paramsUS, ev *decision, key string) error {
	rec := &ev.Rec
	ids := &kc.ids[streamIndex(rec.Stream)]
	added := 0
	if ev.Class == classItem {
		if err := t.store.Set(key, entryValue); err != nil {
			return err
		}
		ids.add(ev.Window, key)
		added = 1
	}
	gone, err := ids.forget(p.watermark(*kc.stream(rec.Stream)), p.WindowUS, t.store.Delete)
	if t.state != nil {
		t.state.entries[kc.size].Add(int64(added - gone))
	}
	return err
}

// entryValue: a dedupe entry says only that its key is set.
var entryValue = []byte{1}

func streamIndex(x record.Stream) int {
	if x == record.Boxes {
		return 1
	}
	return 0
}

// add lists key under window start. Items arrive mostly in window order, so
// the window is nearly always the last one.
func (w *windowIDs) add(start int64, key string) {
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
	e := &ws[i-1]
	e.keys = binary.AppendUvarint(e.keys, uint64(len(key)))
	e.keys = append(e.keys, key...)
}

// forget deletes the entries of every window whose end wm has reached, and
// says how many it deleted.
func (w *windowIDs) forget(wm, width int64, del func(string) error) (int, error) {
	ws := *w
	n, deleted := 0, 0
	for ; n < len(ws) && ws[n].start+width <= wm; n++ {
		for b := ws[n].keys; len(b) > 0; {
			l, k := binary.Uvarint(b)
			if err := del(string(b[k : k+int(l)])); err != nil {
				return deleted, err
			}
			deleted++
			b = b[k+int(l):]
		}
	}
	switch {
	case n == len(ws):
		// A quiet line keeps no array for windows it no longer has.
		*w = nil
	case n > 0:
		*w = slices.Delete(ws, 0, n)
	}
	return deleted, nil
}

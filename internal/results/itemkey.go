package results

import (
	"strconv"
	"strings"
)

// ItemKey is the Kafka key of an item's row (packed, unpacked, spare):
// "line|window|id", or "line|window#digest" for an id too long for a key,
// the window being its start in µs, in canonical decimal. Ids are unique per
// (stream, line, window), not globally, so the line and the window are part
// of the key: a consumer that keeps the last value per key sees each result
// once. The packer writes these keys and the sleigh reads them back; this is
// their one definition.
type ItemKey struct {
	Line   string
	Window int64
	// ID is the whole id, or with Digest its digest (the packer's choice:
	// a separator of its own, so that an id never poses as a digest).
	ID     string
	Digest bool
}

// String is the key.
func (k ItemKey) String() string {
	sep := byte('|')
	if k.Digest {
		sep = '#'
	}
	// Appended in one buffer: the packer makes a key for every row.
	b := make([]byte, 0, 64)
	b = append(b, k.Line...)
	b = append(b, '|')
	b = strconv.AppendInt(b, k.Window, 10)
	b = append(b, sep)
	b = append(b, k.ID...)
	return string(b)
}

// ParseItemKey takes a key apart; ok is false for any string String does
// not make: no line, a window not in canonical decimal (so that a parsed key
// gives back the very string it came from), no id. It does not check the
// line's grammar.
func ParseItemKey(s string) (k ItemKey, ok bool) {
	line, rest, found := strings.Cut(s, "|")
	if !found || line == "" {
		return ItemKey{}, false
	}
	i := strings.IndexAny(rest, "|#")
	if i < 0 {
		return ItemKey{}, false
	}
	w, err := strconv.ParseInt(rest[:i], 10, 64)
	if err != nil || strconv.FormatInt(w, 10) != rest[:i] {
		return ItemKey{}, false
	}
	k = ItemKey{Line: line, Window: w, ID: rest[i+1:], Digest: rest[i] == '#'}
	if k.ID == "" {
		return ItemKey{}, false
	}
	return k, true
}

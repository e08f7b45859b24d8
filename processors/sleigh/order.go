package sleigh

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"slices"
	"strings"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
)

// The packer keys a pair line|<window start, µs since the epoch, decimal>|toy_id,
// or line|<window>#<digest> when the toy id is too long for a key, where the
// line is the size class alone (M) or size/hall (M/hall-7). The manifest
// lists pairs by size class (S, M, L, XL), then line, then window start in
// time, then toy id, and neither the letters of the sizes nor decimal
// numbers of different lengths or signs sort that way as bytes. So the
// sleigh's view stores each pair under an ordered key, whose bytes sort in
// manifest order:
//
//	[size rank: 1 byte][hall: 0-32 bytes][0][window start µs, sign bit flipped, big-endian: 8 bytes][form: 1 byte][id or digest]
//
// A hall is a-z, 0-9 and '-', never a 0 byte, so the 0 after it ends it:
// within a size the bare size's line (no hall) comes first, then the halls
// in byte order (hall-10 before hall-2). form is formWhole for a whole toy
// id and formDigest for a digest, so that within a window the whole ids
// come first, by id, then the cut ones. The encoding is reversible: the
// view's storage gives goka back the keys it was given.

const (
	formWhole  = 0
	formDigest = 1
	// windowLen is the length of an ordered key's part after the hall:
	// its end, the window and the form.
	windowLen = 1 + 8 + 1
	// otherKeys starts the ordered form of a key that is not the packer's:
	// kept (the view stores what its changelog holds) after every size and
	// never listed. The sleigh's own processor refuses such records, so only
	// another writer of the table could put one there.
	otherKeys = 0xff
)

// packedKey is a packed record's key, taken apart.
type packedKey struct {
	line
	window int64
	form   byte
	id     string
}

// line is a packing line: a size class and a hall, "" for the size alone.
type line struct {
	rank int // index in record.Sizes
	hall string
}

// parseLine takes a line apart; ok is false for anything that is no line.
func parseLine(s string) (l line, ok bool) {
	if !record.ValidLine(s) {
		return line{}, false
	}
	size, hall, _ := record.SplitLine(s)
	return line{rank: slices.Index(record.Sizes, size), hall: hall}, true
}

func (l line) size() string   { return record.Sizes[l.rank] }
func (l line) String() string { return record.JoinLine(l.size(), l.hall) }

// compare orders lines as the manifest does: size rank, then hall as bytes.
func (l line) compare(o line) int {
	return cmp.Or(cmp.Compare(l.rank, o.rank), strings.Compare(l.hall, o.hall))
}

// prefix appends the ordered key's prefix of every pair of the line.
func (l line) prefix(b []byte) []byte {
	b = append(b, byte(l.rank))
	b = append(b, l.hall...)
	return append(b, 0)
}

// parseKey takes a packer's key apart; ok is false for any other string,
// also for a window that is not in the canonical decimal form, so that
// ordered keys map back to the very key they came from.
func parseKey(key string) (k packedKey, ok bool) {
	ik, ok := results.ParseItemKey(key)
	if !ok {
		return packedKey{}, false
	}
	if k.line, ok = parseLine(ik.Line); !ok {
		return packedKey{}, false
	}
	k.window, k.form, k.id = ik.Window, formWhole, ik.ID
	if ik.Digest {
		k.form = formDigest
	}
	return k, true
}

// String is the packer's key.
func (k packedKey) String() string {
	return results.ItemKey{Line: k.line.String(), Window: k.window, ID: k.id, Digest: k.form == formDigest}.String()
}

// ordered is k's ordered key.
func (k packedKey) ordered() []byte {
	b := make([]byte, 0, 1+len(k.hall)+windowLen+len(k.id))
	b = windowPrefix(b, k.line, k.window)
	b = append(b, k.form)
	return append(b, k.id...)
}

// windowPrefix appends the ordered key's prefix of every pair of one line
// and window.
func windowPrefix(b []byte, l line, window int64) []byte {
	return binary.BigEndian.AppendUint64(l.prefix(b), uint64(window)^(1<<63))
}

// orderedKey is the ordered form of any key of the sleigh's table.
func orderedKey(key string) []byte {
	if k, ok := parseKey(key); ok {
		return k.ordered()
	}
	return append([]byte{otherKeys}, key...)
}

// fromOrdered is the key whose ordered form is b; ok is false for bytes that
// are no ordered key.
func fromOrdered(b []byte) (key string, ok bool) {
	if len(b) > 0 && b[0] == otherKeys {
		return string(b[1:]), true
	}
	k, ok := decodeOrdered(b)
	if !ok {
		return "", false
	}
	return k.String(), true
}

// decodeOrdered takes the ordered form of a packer's key apart.
func decodeOrdered(b []byte) (packedKey, bool) {
	if len(b) == 0 || int(b[0]) >= len(record.Sizes) {
		return packedKey{}, false
	}
	end := bytes.IndexByte(b[1:], 0) + 1
	if end == 0 || len(b) <= end+windowLen || b[end+windowLen-1] > formDigest { // an id is never empty
		return packedKey{}, false
	}
	l := line{rank: int(b[0]), hall: string(b[1:end])}
	if l.hall != "" && !record.ValidHall(l.hall) {
		return packedKey{}, false
	}
	return packedKey{
		line:   l,
		window: int64(binary.BigEndian.Uint64(b[end+1:end+9]) ^ (1 << 63)),
		form:   b[end+9],
		id:     string(b[end+windowLen:]),
	}, true
}

// A cursor is the ordered key of the last pair a page listed, in URL-safe
// base64: clients pass it back without reading it, and the next page starts
// right after that key, wherever pairs came or went in between.
func encodeCursor(ordered []byte) string { return base64.RawURLEncoding.EncodeToString(ordered) }

var errCursor = errors.New("cursor is not one this sleigh gave out: pass back the cursor of a page's next link unchanged")

func decodeCursor(s string) ([]byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, errCursor
	}
	if _, ok := decodeOrdered(b); !ok {
		return nil, errCursor
	}
	return b, nil
}

// after is the least key greater than b: where the page after b starts.
func after(b []byte) []byte { return append(bytes.Clone(b), 0) }

package sleigh

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/northpole-workshop/northpole/internal/record"
)

// The packer keys a pair size|<window start, µs since the epoch, decimal>|toy_id,
// or size|<window>#<digest> when the toy id is too long for a key. The
// manifest lists pairs by size class (S, M, L, XL), then window start in time,
// then toy id, and neither the letters of the sizes nor decimal numbers of
// different lengths or signs sort that way as bytes. So the sleigh's view
// stores each pair under an ordered key, whose bytes sort in manifest order:
//
//	[size rank: 1 byte][window start µs, sign bit flipped, big-endian: 8 bytes][form: 1 byte][id or digest]
//
// form is formWhole for a whole toy id and formDigest for a digest, so that
// within a window the whole ids come first, by id, then the cut ones. The
// encoding is reversible: the view's storage gives goka back the keys it was
// given.

const (
	formWhole  = 0
	formDigest = 1
	// orderedLen is the length of an ordered key's fixed part.
	orderedLen = 1 + 8 + 1
	// otherKeys starts the ordered form of a key that is not the packer's:
	// kept (the view stores what its changelog holds) after every size and
	// never listed. The sleigh's own processor refuses such records, so only
	// another writer of the table could put one there.
	otherKeys = 0xff
)

// packedKey is a packed record's key, taken apart.
type packedKey struct {
	rank   int // index in record.Sizes
	window int64
	form   byte
	id     string
}

// parseKey takes a packer's key apart; ok is false for any other string,
// also for a window that is not in the canonical decimal form, so that
// ordered keys map back to the very key they came from.
func parseKey(key string) (k packedKey, ok bool) {
	size, rest, found := strings.Cut(key, "|")
	if k.rank = slices.Index(record.Sizes, size); !found || k.rank < 0 {
		return packedKey{}, false
	}
	i := strings.IndexAny(rest, "|#")
	if i < 0 {
		return packedKey{}, false
	}
	w, err := strconv.ParseInt(rest[:i], 10, 64)
	if err != nil || strconv.FormatInt(w, 10) != rest[:i] {
		return packedKey{}, false
	}
	k.window, k.form, k.id = w, formWhole, rest[i+1:]
	if rest[i] == '#' {
		k.form = formDigest
	}
	if k.id == "" {
		return packedKey{}, false
	}
	return k, true
}

// String is the packer's key.
func (k packedKey) String() string {
	sep := "|"
	if k.form == formDigest {
		sep = "#"
	}
	return record.Sizes[k.rank] + "|" + strconv.FormatInt(k.window, 10) + sep + k.id
}

// ordered is k's ordered key.
func (k packedKey) ordered() []byte {
	b := make([]byte, 0, orderedLen+len(k.id))
	b = windowPrefix(b, k.rank, k.window)
	b = append(b, k.form)
	return append(b, k.id...)
}

// windowPrefix appends the ordered key's prefix of every pair of one size
// and window.
func windowPrefix(b []byte, rank int, window int64) []byte {
	b = append(b, byte(rank))
	return binary.BigEndian.AppendUint64(b, uint64(window)^(1<<63))
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
	if len(b) <= orderedLen || int(b[0]) >= len(record.Sizes) || b[orderedLen-1] > formDigest {
		return packedKey{}, false
	}
	return packedKey{
		rank:   int(b[0]),
		window: int64(binary.BigEndian.Uint64(b[1:9]) ^ (1 << 63)),
		form:   b[orderedLen-1],
		id:     string(b[orderedLen:]),
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

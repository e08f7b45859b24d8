// Package record defines the elves' records (toys, boxes, heartbeats), their JSON
// encoding, and the validity rule of the packing contract. Every engine in the
// project decides validity through Parse, so that "what is a dead letter" has one
// definition in Go; the SQL engines re-state the same rule in SQL.
package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Stream names one of the two input streams. It is also the value of the
// "stream" field of the late and dead result sets.
type Stream string

const (
	Toys  Stream = "toys"
	Boxes Stream = "boxes"
)

// Valid reports whether s is one of the two streams.
func (s Stream) Valid() bool { return s == Toys || s == Boxes }

// IDField is the JSON field that holds a record's id on this stream.
func (s Stream) IDField() string {
	if s == Boxes {
		return "box_id"
	}
	return "toy_id"
}

// Sizes are the four size classes, in display order.
var Sizes = []string{"S", "M", "L", "XL"}

// SizeRank is s's place in Sizes, the order sizes are shown in. A string
// that is no size class ranks after every size class (len(Sizes)), so that
// sorting by it puts what is unknown last (all of it tied).
func SizeRank(s string) int {
	if i := slices.Index(Sizes, s); i >= 0 {
		return i
	}
	return len(Sizes)
}

// ValidSize reports whether s is one of the four size classes.
func ValidSize(s string) bool {
	switch s {
	case "S", "M", "L", "XL":
		return true
	}
	return false
}

// Reason is the contract's vocabulary for why a record is a dead letter.
type Reason string

// ReasonAttribute is the OpenTelemetry attribute that carries a dead
// letter's Reason, on spans and metrics alike: a span that has it handled a
// dead letter, which is the packer doing its job, not an error.
const ReasonAttribute = "northpole.dead_letter.reason"

const (
	ReasonMalformedJSON Reason = "malformed json"
	ReasonBadMadeAt     Reason = "bad made_at"
	ReasonBadSize       Reason = "bad size"
	ReasonSizeNotKey    Reason = "size not key"
	ReasonBadLine       Reason = "bad line"
	ReasonNoID          Reason = "no id"
	// ReasonDuplicate is not a parse failure: a valid record becomes a duplicate
	// only in the context of its stream. It lives here so that one vocabulary is
	// defined in one place.
	ReasonDuplicate Reason = "duplicate"
)

// InvalidError says why a record is not valid. Detail is for people (logs,
// dead-letter payloads); Reason is what engines agree on.
type InvalidError struct {
	Reason Reason
	Detail string
}

func (e *InvalidError) Error() string {
	if e.Detail == "" {
		return string(e.Reason)
	}
	return string(e.Reason) + ": " + e.Detail
}

// ReasonOf returns the contract reason of err, or "" when err is not an
// *InvalidError.
func ReasonOf(err error) Reason {
	var ie *InvalidError
	if errors.As(err, &ie) {
		return ie.Reason
	}
	return ""
}

// Record is a valid record. Exactly one of Heartbeat and ID != "" describes it:
// a heartbeat keeps its id (if any) only for people, it never takes part in
// duplicate detection.
type Record struct {
	Stream Stream
	// Line is the record's packing line, its Kafka key: Size alone, or Size,
	// a slash and a hall. Everything the contract decides per stream it
	// decides per (stream, line).
	Line      string
	Size      string
	MadeAt    time.Time
	Heartbeat bool
	ID        string
}

// MadeAtMicros is made_at in whole microseconds since the Unix epoch, rounded
// toward minus infinity. Engines compute windows and lateness on this value;
// see docs/SEMANTICS.md for why dropping the nanoseconds changes no result
// as long as W and L are whole microseconds.
func (r Record) MadeAtMicros() int64 { return r.MadeAt.UnixMicro() }

// FormatTime is the one textual form of a time in every result set: UTC,
// RFC 3339 with as many fractional digits as needed.
func FormatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// FormatMicros formats microseconds since the epoch with FormatTime.
func FormatMicros(us int64) string { return FormatTime(time.UnixMicro(us)) }

// MaxHallLen is the longest hall, in bytes (every character of a hall is
// ASCII).
const MaxHallLen = 32

// SplitLine splits a key into its size part, the key up to its first slash
// (the whole key without one), and its hall, what follows that slash;
// hasHall reports whether there was a slash. It decides nothing: a part may
// be anything (ValidLine says whether the key is a packing line).
func SplitLine(key string) (size, hall string, hasHall bool) {
	return strings.Cut(key, "/")
}

// JoinLine is the packing line of size in hall: the size alone when hall is
// "", else size, a slash and hall.
func JoinLine(size, hall string) string {
	if hall == "" {
		return size
	}
	return size + "/" + hall
}

// ValidHall reports whether h is a well-formed hall: 1 to MaxHallLen
// characters of a-z, 0-9 and '-', the first a letter or a digit.
// TestValidLine and FuzzValidLine hold it to the expression the SQL engines
// run (internal/contractsql/sql/10_np_grammar.sql).
func ValidHall(h string) bool {
	if len(h) == 0 || len(h) > MaxHallLen || h[0] == '-' {
		return false
	}
	for i := range len(h) {
		if c := h[i]; !('a' <= c && c <= 'z' || isDigit(c) || c == '-') {
			return false
		}
	}
	return true
}

// ValidLine reports whether key is a packing line: a size class alone, or a
// size class, a slash and a well-formed hall.
func ValidLine(key string) bool {
	size, hall, hasHall := SplitLine(key)
	return ValidSize(size) && (!hasHall || ValidHall(hall))
}

// Parse applies the contract's validity rule to one Kafka record of the given
// stream. It returns the valid record, or an *InvalidError whose Reason is the
// first rule that failed, in the order: malformed json, bad made_at, bad size,
// size not key, bad line, no id. So the value is read before the key, and of
// the key its size part (the key up to its first slash) before its hall: a key
// whose size part is not the value's size is "size not key" whatever follows
// the slash, and "bad line" says that the size is right but the hall is not.
//
// The key is the Kafka record's, as bytes or as a string: the packer has it
// as goka's string, and a line that is the key is then the key itself, with
// no copy.
func Parse[K string | []byte](stream Stream, key K, value []byte) (Record, error) {
	// The members the rule reads, the last of duplicates winning: slices of
	// value (readObject), so none is copied.
	var madeAtRaw, sizeRaw, idRaw, hbRaw []byte
	idField := stream.IDField()
	why := readObject(value, func(name, raw []byte) {
		switch string(name) {
		case "made_at":
			madeAtRaw = raw
		case "size":
			sizeRaw = raw
		case idField:
			idRaw = raw
		case "heartbeat":
			hbRaw = raw
		}
	})
	if why != "" {
		return Record{}, &InvalidError{ReasonMalformedJSON, why}
	}

	madeAt, ie := madeAtOf(madeAtRaw)
	if ie != nil {
		return Record{}, ie
	}

	size, ok := sizeOf(sizeRaw)
	if !ok {
		return Record{}, &InvalidError{ReasonBadSize, fmt.Sprintf("size %s is not one of S, M, L, XL", rawOrMissing(sizeRaw))}
	}
	keySize, hall, hasHall := cutSlash(key)
	if size != string(keySize) {
		return Record{}, &InvalidError{ReasonSizeNotKey, fmt.Sprintf("size %q but key %q", size, key)}
	}
	line := size // no allocation for the keys that are sizes alone
	if hasHall {
		if !ValidHall(string(hall)) {
			return Record{}, &InvalidError{ReasonBadLine, fmt.Sprintf("key %q: the hall after the slash is not 1 to %d characters of a-z, 0-9 and '-', the first a letter or digit", key, MaxHallLen)}
		}
		line = string(key)
	}

	r := Record{Stream: stream, Line: line, Size: size, MadeAt: madeAt}
	r.ID, _ = JSONString(idRaw)
	if isTrue(hbRaw) {
		r.Heartbeat = true
		return r, nil
	}
	if r.ID == "" {
		return Record{}, &InvalidError{ReasonNoID, fmt.Sprintf("%s is missing, empty or not a string, and heartbeat is not true", idField)}
	}
	return r, nil
}

// madeAtOf is the time that raw, made_at's JSON text, holds. A string
// without escapes (what every elf writes) is read in place, with no copy.
func madeAtOf(raw []byte) (time.Time, *InvalidError) {
	var (
		t   time.Time
		err error
	)
	if body, ok := plainJSONBody(raw); ok {
		t, err = parseMadeAt(body)
	} else if s, ok := JSONString(raw); ok {
		t, err = parseMadeAt(s)
	} else {
		return time.Time{}, &InvalidError{ReasonBadMadeAt, "made_at is missing or not a string"}
	}
	if err != nil {
		return time.Time{}, &InvalidError{ReasonBadMadeAt, err.Error()}
	}
	return t, nil
}

// cutSlash is strings.Cut(key, "/") for a key of either kind.
func cutSlash[K string | []byte](key K) (before, after K, found bool) {
	for i := range len(key) {
		if key[i] == '/' {
			return key[:i], key[i+1:], true
		}
	}
	return key, key[:0], false
}

// sizeOf is the size class that raw, a member's JSON text, holds, if it is
// a string that names one: the constant of Sizes, so that a record's size
// (and the line of a record keyed by its size alone) costs no allocation.
func sizeOf(raw []byte) (string, bool) {
	for _, s := range Sizes {
		if len(raw) == len(s)+2 && raw[0] == '"' && string(raw[1:len(raw)-1]) == s {
			return s, true
		}
	}
	// Written with escapes ("\u004d"), as JSON allows.
	if s, ok := JSONString(raw); ok {
		if i := slices.Index(Sizes, s); i >= 0 {
			return Sizes[i], true
		}
	}
	return "", false
}

// Object reads value as the contract's "UTF-8 text holding one JSON object"
// and returns its members (the last of duplicate members winning, as in
// encoding/json). When value is not such a text it returns nil and says why.
// Every Go reader of records (Parse, the SQL engines' loader) reads through
// readObject, so that JSON details are read one way.
func Object(value []byte) (map[string]json.RawMessage, string) {
	fields := map[string]json.RawMessage{}
	if why := readObject(value, func(name, raw []byte) {
		fields[string(name)] = bytes.Clone(raw)
	}); why != "" {
		return nil, why
	}
	return fields, ""
}

// JSONString decodes raw when it is a JSON string.
func JSONString(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	if body, ok := plainJSONBody(raw); ok {
		return string(body), true
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// plainJSONBody is the text between the quotes of raw when raw is a JSON
// string without escapes (every id, size and time the elves write): it is
// read without encoding/json's reflection, being one of the packer's costs
// per input record. It declines anything else, which then takes the general
// path; FuzzJSONString checks that both agree.
func plainJSONBody(raw []byte) ([]byte, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return nil, false
	}
	body := raw[1 : len(raw)-1]
	for _, c := range body {
		if c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			return nil, false
		}
	}
	return body, true
}

func isTrue(raw json.RawMessage) bool { return string(raw) == "true" }

func rawOrMissing(raw json.RawMessage) string {
	if raw == nil {
		return "(missing)"
	}
	if len(raw) > 40 {
		return string(raw[:40]) + "..."
	}
	return string(raw)
}

// Toy, Box and Heartbeat are the wire shapes the elves write.
type Toy struct {
	ToyID  string `json:"toy_id"`
	Kind   string `json:"kind"`
	Size   string `json:"size"`
	Elf    string `json:"elf"`
	MadeAt string `json:"made_at"`
}

type Box struct {
	BoxID  string `json:"box_id"`
	Size   string `json:"size"`
	Elf    string `json:"elf"`
	MadeAt string `json:"made_at"`
}

type Heartbeat struct {
	Heartbeat bool   `json:"heartbeat"`
	Size      string `json:"size"`
	Elf       string `json:"elf"`
	MadeAt    string `json:"made_at"`
}

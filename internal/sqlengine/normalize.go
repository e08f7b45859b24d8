// Package sqlengine runs the packing contract's shared SQL text
// (internal/contractsql/sql) on PostgreSQL (through pgx) and on an embedded
// SQLite (github.com/ncruces/go-sqlite3, no cgo), and reads the five result
// relations of any engine that has them, RisingWave included.
//
// For the batch engines the wrapper is Go: Normalize turns each Kafka record
// into one row of np_input, the loader writes the rows into a table, and every
// relation of the shared text is then created as a table from its SELECT.
package sqlengine

import (
	"encoding/json"
	"strings"

	"github.com/northpole-workshop/northpole/internal/record"
)

// Row is one row of np_input: facts about a raw Kafka record, no decision.
// The shared SQL decides validity, its reason and everything after it.
type Row struct {
	Stream    string
	Partition int64
	Offset    int64
	// Key is the Kafka key as text; nil when the record has no key. What
	// text cannot hold (bytes that are not UTF-8, and U+0000, which
	// PostgreSQL text refuses) is written U+FFFD, which decides the same: it
	// keeps every slash where it was, and a size part or a hall holding it is
	// no size and no hall either way (a key "M/\xff" stays a bad line, not a
	// size not key).
	Key *string
	// Object: the value is UTF-8 text holding exactly one JSON object, in the
	// contract's strict JSON (record.Object decides). When it is false every
	// member below is empty.
	Object bool
	// MadeAt and Size are the members when they are JSON strings (decoded,
	// the last of duplicate members winning, as in encoding/json); nil
	// otherwise, and nil when the string holds U+0000: such a string is
	// neither RFC 3339 nor a size class, so nil decides the same.
	MadeAt *string
	Size   *string
	// ID is the stream's id member (toy_id on toys, box_id on boxes) when it
	// is a JSON string, as bytes: ids are compared byte for byte, may hold
	// U+0000, and are stored as bytea/blob. Nil when absent or not a string;
	// empty (not nil) for "".
	ID []byte
	// Heartbeat: the heartbeat member is the JSON literal true.
	Heartbeat bool
}

// Normalize builds the np_input row of one Kafka record. It reads the value
// with record.Object and record.JSONString, as record.Parse does, so that JSON
// details (the contract's strict JSON, escapes, duplicate members) are read
// exactly as Go reads them; the rules applied to what it reads are in the
// shared SQL. The engines' own JSON readers decide otherwise: PostgreSQL's
// jsonb takes 1e400 (as numeric) and nesting as deep as its stack allows but
// refuses "\u0000"; SQLite's takes 1e400 (as infinity), lone surrogate
// escapes and, outside json_valid, NaN, and nests 1000 levels.
func Normalize(in record.Input) Row {
	r := Row{Stream: string(in.Stream), Partition: int64(in.Partition), Offset: in.Offset}
	if in.Key != nil {
		k := strings.ReplaceAll(strings.ToValidUTF8(string(in.Key), "\uFFFD"), "\x00", "\uFFFD")
		r.Key = &k
	}
	fields, _ := record.Object(in.Value)
	if fields == nil {
		return r
	}
	r.Object = true
	text := func(raw json.RawMessage) *string {
		s, ok := record.JSONString(raw)
		if !ok || strings.ContainsRune(s, 0) {
			return nil
		}
		return &s
	}
	r.MadeAt = text(fields["made_at"])
	r.Size = text(fields["size"])
	if id, ok := record.JSONString(fields[in.Stream.IDField()]); ok {
		r.ID = []byte(id)
		if r.ID == nil {
			r.ID = []byte{}
		}
	}
	r.Heartbeat = string(fields["heartbeat"]) == "true"
	return r
}

package record

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// toyJSON is a valid toy of size M made at madeAt, for the cases that vary
// only made_at.
func toyJSON(madeAt string) string {
	return `{"toy_id": "t1", "kind": "teddy-bear", "size": "M", "elf": "alabaster", "made_at": "` + madeAt + `"}`
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

type parseCase struct {
	name   string
	stream Stream // Toys when empty
	key    string
	value  string
	reason Reason // "" for a valid record
	want   Record // checked when valid; Stream is filled in, and Line (the key)
}

func parseCases() []parseCase {
	const ok = "2026-12-24T10:00:00Z"
	at := utc(ok)
	toy := func(id string) Record {
		return Record{Stream: Toys, Size: "M", MadeAt: at, ID: id}
	}
	withTime := func(s string) Record { r := toy("t1"); r.MadeAt = utc(s); return r }
	return []parseCase{
		// Valid records.
		{name: "toy", key: "M", value: toyJSON(ok), want: toy("t1")},
		{name: "box", stream: Boxes, key: "XL", value: `{"box_id": "b1", "size": "XL", "elf": "bushy", "made_at": "` + ok + `"}`,
			want: Record{Stream: Boxes, Size: "XL", MadeAt: at, ID: "b1"}},
		{name: "heartbeat", key: "S", value: `{"heartbeat": true, "size": "S", "elf": "pepper", "made_at": "` + ok + `"}`,
			want: Record{Stream: Toys, Size: "S", MadeAt: at, Heartbeat: true}},
		{name: "heartbeat on boxes", stream: Boxes, key: "L", value: `{"heartbeat": true, "size": "L", "made_at": "` + ok + `"}`,
			want: Record{Stream: Boxes, Size: "L", MadeAt: at, Heartbeat: true}},
		// A heartbeat keeps its id for people; it is still a heartbeat.
		{name: "heartbeat with an id", key: "M", value: `{"heartbeat": true, "toy_id": "x", "size": "M", "made_at": "` + ok + `"}`,
			want: Record{Stream: Toys, Size: "M", MadeAt: at, Heartbeat: true, ID: "x"}},
		// A heartbeat with an empty or non-string id is fine: the id is not needed.
		{name: "heartbeat with a non-string id", key: "M", value: `{"heartbeat": true, "toy_id": 7, "size": "M", "made_at": "` + ok + `"}`,
			want: Record{Stream: Toys, Size: "M", MadeAt: at, Heartbeat: true}},
		{name: "heartbeat false with an id is a toy", key: "M", value: `{"heartbeat": false, "toy_id": "x", "size": "M", "made_at": "` + ok + `"}`,
			want: Record{Stream: Toys, Size: "M", MadeAt: at, ID: "x"}},
		{name: "heartbeat as a string is not a heartbeat", key: "M", value: `{"heartbeat": "true", "toy_id": "x", "size": "M", "made_at": "` + ok + `"}`,
			want: Record{Stream: Toys, Size: "M", MadeAt: at, ID: "x"}},
		{name: "heartbeat 1 is not a heartbeat", key: "M", value: `{"heartbeat": 1, "toy_id": "x", "size": "M", "made_at": "` + ok + `"}`,
			want: Record{Stream: Toys, Size: "M", MadeAt: at, ID: "x"}},
		{name: "whitespace around the JSON", key: "M", value: " \t\r\n" + toyJSON(ok) + "\n\r\t ", want: toy("t1")},
		{name: "whitespace inside the JSON", key: "M", value: "{ \"heartbeat\" :\ttrue\n, \"size\" : \"M\" , \"made_at\" : \"" + ok + "\" }",
			want: Record{Stream: Toys, Size: "M", MadeAt: at, Heartbeat: true}},
		{name: "extra fields", key: "M", value: `{"toy_id": "t1", "kind": "teddy-bear", "size": "M", "elf": "alabaster", "made_at": "` + ok + `", "colour": "red", "nested": {"a": [1, null, true]}, "box_id": "b9"}`,
			want: toy("t1")},
		// Kind and elf are informational: a non-string value is dropped, not an error.
		{name: "non-string kind and elf", key: "M", value: `{"toy_id": "t1", "kind": 3, "elf": null, "size": "M", "made_at": "` + ok + `"}`,
			want: Record{Stream: Toys, Size: "M", MadeAt: at, ID: "t1"}},
		// encoding/json keeps the last of duplicate keys, for every field.
		{name: "duplicate keys: last id wins", key: "M", value: `{"toy_id": "a", "toy_id": "b", "size": "M", "made_at": "` + ok + `"}`,
			want: Record{Stream: Toys, Size: "M", MadeAt: at, ID: "b"}},
		{name: "duplicate keys: last size wins", key: "M", value: `{"toy_id": "a", "size": "XXL", "size": "M", "made_at": "` + ok + `"}`,
			want: Record{Stream: Toys, Size: "M", MadeAt: at, ID: "a"}},
		{name: "duplicate keys: last heartbeat wins", key: "M", value: `{"heartbeat": true, "heartbeat": false, "toy_id": "a", "size": "M", "made_at": "` + ok + `"}`,
			want: Record{Stream: Toys, Size: "M", MadeAt: at, ID: "a"}},
		{name: "duplicate keys: last made_at wins", key: "M", value: `{"toy_id": "a", "size": "M", "made_at": "yesterday", "made_at": "` + ok + `"}`,
			want: Record{Stream: Toys, Size: "M", MadeAt: at, ID: "a"}},
		// Strings are compared after JSON decoding.
		{name: "escaped characters", key: "M", value: `{"toy_id": "\u00e9l\u00e8ve \"1\"", "size": "\u004d", "made_at": "2026-12-24T10:00:00\u005a"}`,
			want: Record{Stream: Toys, Size: "M", MadeAt: at, ID: `élève "1"`}},
		{name: "UTF-8 id", key: "M", value: `{"toy_id": "🧸-ünï", "size": "M", "made_at": "` + ok + `"}`,
			want: Record{Stream: Toys, Size: "M", MadeAt: at, ID: "🧸-ünï"}},
		{name: "a blank id is not empty", key: "M", value: `{"toy_id": " ", "size": "M", "made_at": "` + ok + `"}`,
			want: Record{Stream: Toys, Size: "M", MadeAt: at, ID: " "}},
		{name: "surrogate pair escape", key: "M", value: `{"toy_id": "\ud83e\uddf8", "size": "M", "made_at": "` + ok + `"}`,
			want: Record{Stream: Toys, Size: "M", MadeAt: at, ID: "🧸"}},
		{name: "NUL escape is kept", key: "M", value: `{"toy_id": "a\u0000b", "size": "M", "made_at": "` + ok + `"}`,
			want: Record{Stream: Toys, Size: "M", MadeAt: at, ID: "a\x00b"}},
		{name: "box with both ids uses box_id", stream: Boxes, key: "M", value: `{"toy_id": "t", "box_id": "b", "size": "M", "made_at": "` + ok + `"}`,
			want: Record{Stream: Boxes, Size: "M", MadeAt: at, ID: "b"}},
		{name: "lowercase t", key: "M", value: toyJSON("2026-12-24t10:00:00Z"), want: toy("t1")},
		{name: "lowercase z", key: "M", value: toyJSON("2026-12-24T10:00:00z"), want: toy("t1")},
		{name: "lowercase t and z", key: "M", value: toyJSON("2026-12-24t10:00:00.5z"), want: withTime("2026-12-24T10:00:00.5Z")},
		{name: "1 fractional digit", key: "M", value: toyJSON("2026-12-24T10:00:00.1Z"), want: withTime("2026-12-24T10:00:00.100Z")},
		{name: "2 fractional digits", key: "M", value: toyJSON("2026-12-24T10:00:00.12Z"), want: withTime("2026-12-24T10:00:00.120Z")},
		{name: "3 fractional digits", key: "M", value: toyJSON("2026-12-24T10:00:00.123Z"), want: withTime("2026-12-24T10:00:00.123Z")},
		{name: "4 fractional digits", key: "M", value: toyJSON("2026-12-24T10:00:00.1234Z"), want: withTime("2026-12-24T10:00:00.1234Z")},
		{name: "5 fractional digits", key: "M", value: toyJSON("2026-12-24T10:00:00.12345Z"), want: withTime("2026-12-24T10:00:00.12345Z")},
		{name: "6 fractional digits", key: "M", value: toyJSON("2026-12-24T10:00:00.123456Z"), want: withTime("2026-12-24T10:00:00.123456Z")},
		{name: "7 fractional digits", key: "M", value: toyJSON("2026-12-24T10:00:00.1234567Z"), want: withTime("2026-12-24T10:00:00.1234567Z")},
		{name: "8 fractional digits", key: "M", value: toyJSON("2026-12-24T10:00:00.12345678Z"), want: withTime("2026-12-24T10:00:00.12345678Z")},
		{name: "9 fractional digits", key: "M", value: toyJSON("2026-12-24T10:00:00.123456789Z"), want: withTime("2026-12-24T10:00:00.123456789Z")},
		// Go keeps 9 digits and drops the rest: truncation, not rounding.
		{name: "10 fractional digits are truncated", key: "M", value: toyJSON("2026-12-24T10:00:00.1234567899Z"), want: withTime("2026-12-24T10:00:00.123456789Z")},
		{name: "20 fractional digits are truncated", key: "M", value: toyJSON("2026-12-24T10:00:00.99999999999999999999Z"), want: withTime("2026-12-24T10:00:00.999999999Z")},
		{name: "zero fraction", key: "M", value: toyJSON("2026-12-24T10:00:00.000Z"), want: toy("t1")},
		{name: "positive offset", key: "M", value: toyJSON("2026-12-24T11:00:00+01:00"), want: toy("t1")},
		{name: "negative half-hour offset", key: "M", value: toyJSON("2026-12-24T04:30:00-05:30"), want: toy("t1")},
		{name: "+00:00", key: "M", value: toyJSON("2026-12-24T10:00:00+00:00"), want: toy("t1")},
		{name: "-00:00", key: "M", value: toyJSON("2026-12-24T10:00:00-00:00"), want: toy("t1")},
		{name: "+23:59", key: "M", value: toyJSON("2026-12-25T09:59:00+23:59"), want: toy("t1")},
		{name: "offset across a day", key: "M", value: toyJSON("2026-12-23T23:00:00-11:00"), want: toy("t1")},
		{name: "leap day", key: "M", value: toyJSON("2028-02-29T10:00:00Z"), want: withTime("2028-02-29T10:00:00Z")},
		{name: "before 1970", key: "M", value: toyJSON("1969-12-31T23:59:59.999999999Z"), want: withTime("1969-12-31T23:59:59.999999999Z")},
		{name: "year 0000", key: "M", value: toyJSON("0000-01-01T00:00:00Z"), want: withTime("0000-01-01T00:00:00Z")},
		{name: "year 9999", key: "M", value: toyJSON("9999-12-31T23:59:59.999999999Z"), want: withTime("9999-12-31T23:59:59.999999999Z")},
		// Lines with a hall: the key is the line, the size its part before the slash.
		{name: "toy in a hall", key: "M/hall-7", value: toyJSON(ok), want: toy("t1")},
		{name: "box in a hall", stream: Boxes, key: "XL/h", value: `{"box_id": "b1", "size": "XL", "made_at": "` + ok + `"}`,
			want: Record{Stream: Boxes, Size: "XL", MadeAt: at, ID: "b1"}},
		{name: "32-character hall", key: "M/" + strings.Repeat("h", 32), value: toyJSON(ok), want: toy("t1")},
		{name: "one-character hall", key: "M/h", value: toyJSON(ok), want: toy("t1")},
		{name: "hall starting with a digit", key: "M/7", value: toyJSON(ok), want: toy("t1")},
		{name: "hall ending with dashes", key: "M/0--", value: toyJSON(ok), want: toy("t1")},
		{name: "hall named like a size", key: "M/xl", value: toyJSON(ok), want: toy("t1")},
		{name: "heartbeat in a hall", stream: Boxes, key: "L/north-2", value: `{"heartbeat": true, "size": "L", "made_at": "` + ok + `"}`,
			want: Record{Stream: Boxes, Size: "L", MadeAt: at, Heartbeat: true}},

		// malformed json: not UTF-8, not JSON, or not one object.
		{name: "empty value", key: "M", value: ``, reason: ReasonMalformedJSON},
		{name: "whitespace only", key: "M", value: " \n", reason: ReasonMalformedJSON},
		{name: "truncated", key: "M", value: `{"toy_id": "a", "size": "M"`, reason: ReasonMalformedJSON},
		{name: "trailing comma", key: "M", value: `{"toy_id": "a", "size": "M",}`, reason: ReasonMalformedJSON},
		{name: "single quotes", key: "M", value: `{'toy_id': 'a'}`, reason: ReasonMalformedJSON},
		{name: "array", key: "M", value: `[{"toy_id": "a"}]`, reason: ReasonMalformedJSON},
		{name: "string", key: "M", value: `"{}"`, reason: ReasonMalformedJSON},
		{name: "number", key: "M", value: `42`, reason: ReasonMalformedJSON},
		{name: "null", key: "M", value: `null`, reason: ReasonMalformedJSON},
		{name: "true", key: "M", value: `true`, reason: ReasonMalformedJSON},
		{name: "two objects", key: "M", value: toyJSON(ok) + toyJSON(ok), reason: ReasonMalformedJSON},
		{name: "object then garbage", key: "M", value: toyJSON(ok) + "x", reason: ReasonMalformedJSON},
		{name: "invalid UTF-8 in a string", key: "M", value: "{\"toy_id\": \"\xff\", \"size\": \"M\", \"made_at\": \"" + ok + "\"}", reason: ReasonMalformedJSON},
		{name: "invalid UTF-8 in an ignored field", key: "M", value: "{\"toy_id\": \"a\", \"x\": \"\xc3\x28\", \"size\": \"M\", \"made_at\": \"" + ok + "\"}", reason: ReasonMalformedJSON},
		{name: "UTF-8 encoded surrogate", key: "M", value: "{\"toy_id\": \"\xed\xa0\x80\", \"size\": \"M\", \"made_at\": \"" + ok + "\"}", reason: ReasonMalformedJSON},
		{name: "byte order mark", key: "M", value: "\ufeff" + toyJSON(ok), reason: ReasonMalformedJSON},
		{name: "NUL byte after the object", key: "M", value: toyJSON(ok) + "\x00", reason: ReasonMalformedJSON},
		// The contract's strict JSON: object_test.go has every boundary.
		{name: "lone surrogate escape", key: "M", value: `{"toy_id": "\ud800", "size": "M", "made_at": "` + ok + `"}`, reason: ReasonMalformedJSON},
		{name: "number beyond the doubles", key: "M", value: `{"toy_id": "a", "weight": 1e400, "size": "M", "made_at": "` + ok + `"}`, reason: ReasonMalformedJSON},
		{name: "NaN", key: "M", value: `{"toy_id": "a", "weight": NaN, "size": "M", "made_at": "` + ok + `"}`, reason: ReasonMalformedJSON},
		{name: "unescaped control character", key: "M", value: "{\"toy_id\": \"a\tb\", \"size\": \"M\", \"made_at\": \"" + ok + "\"}", reason: ReasonMalformedJSON},

		// bad made_at: missing, not a string, or not RFC 3339.
		{name: "made_at missing", key: "M", value: `{"toy_id": "a", "size": "M"}`, reason: ReasonBadMadeAt},
		{name: "made_at null", key: "M", value: `{"toy_id": "a", "size": "M", "made_at": null}`, reason: ReasonBadMadeAt},
		{name: "made_at a number", key: "M", value: `{"toy_id": "a", "size": "M", "made_at": 1798106400}`, reason: ReasonBadMadeAt},
		{name: "made_at an object", key: "M", value: `{"toy_id": "a", "size": "M", "made_at": {}}`, reason: ReasonBadMadeAt},
		{name: "made_at empty", key: "M", value: toyJSON(""), reason: ReasonBadMadeAt},
		{name: "space instead of T", key: "M", value: toyJSON("2026-12-24 10:00:00Z"), reason: ReasonBadMadeAt},
		{name: "SQL timestamp", key: "M", value: toyJSON("2026-12-24 10:00:00"), reason: ReasonBadMadeAt},
		{name: "no offset", key: "M", value: toyJSON("2026-12-24T10:00:00"), reason: ReasonBadMadeAt},
		{name: "date only", key: "M", value: toyJSON("2026-12-24"), reason: ReasonBadMadeAt},
		{name: "no seconds", key: "M", value: toyJSON("2026-12-24T10:00Z"), reason: ReasonBadMadeAt},
		{name: "one-digit hour", key: "M", value: toyJSON("2026-12-24T1:00:00Z"), reason: ReasonBadMadeAt},
		{name: "comma fraction", key: "M", value: toyJSON("2026-12-24T10:00:00,5Z"), reason: ReasonBadMadeAt},
		{name: "empty fraction", key: "M", value: toyJSON("2026-12-24T10:00:00.Z"), reason: ReasonBadMadeAt},
		{name: "offset without colon", key: "M", value: toyJSON("2026-12-24T10:00:00+0100"), reason: ReasonBadMadeAt},
		{name: "offset hours only", key: "M", value: toyJSON("2026-12-24T10:00:00+01"), reason: ReasonBadMadeAt},
		{name: "offset +24:00", key: "M", value: toyJSON("2026-12-24T10:00:00+24:00"), reason: ReasonBadMadeAt},
		{name: "zone name", key: "M", value: toyJSON("2026-12-24T10:00:00 UTC"), reason: ReasonBadMadeAt},
		{name: "hour 24", key: "M", value: toyJSON("2026-12-24T24:00:00Z"), reason: ReasonBadMadeAt},
		{name: "leap second", key: "M", value: toyJSON("2016-12-31T23:59:60Z"), reason: ReasonBadMadeAt},
		{name: "February 30th", key: "M", value: toyJSON("2026-02-30T10:00:00Z"), reason: ReasonBadMadeAt},
		{name: "February 29th of a common year", key: "M", value: toyJSON("2026-02-29T10:00:00Z"), reason: ReasonBadMadeAt},
		{name: "April 31st", key: "M", value: toyJSON("2026-04-31T10:00:00Z"), reason: ReasonBadMadeAt},
		{name: "month 13", key: "M", value: toyJSON("2026-13-01T10:00:00Z"), reason: ReasonBadMadeAt},
		{name: "five-digit year", key: "M", value: toyJSON("12026-12-24T10:00:00Z"), reason: ReasonBadMadeAt},
		{name: "signed year", key: "M", value: toyJSON("+2026-12-24T10:00:00Z"), reason: ReasonBadMadeAt},
		{name: "surrounding space", key: "M", value: toyJSON(" 2026-12-24T10:00:00Z"), reason: ReasonBadMadeAt},
		{name: "trailing newline", key: "M", value: toyJSON(`2026-12-24T10:00:00Z\n`), reason: ReasonBadMadeAt},
		{name: "full-width digits", key: "M", value: toyJSON("２０２６-12-24T10:00:00Z"), reason: ReasonBadMadeAt},

		// bad size: missing, not a string, or not one of the four.
		{name: "size missing", key: "M", value: `{"toy_id": "a", "made_at": "` + ok + `"}`, reason: ReasonBadSize},
		{name: "size XXL", key: "XXL", value: `{"toy_id": "a", "size": "XXL", "made_at": "` + ok + `"}`, reason: ReasonBadSize},
		{name: "size lowercase", key: "m", value: `{"toy_id": "a", "size": "m", "made_at": "` + ok + `"}`, reason: ReasonBadSize},
		{name: "size with space", key: "M", value: `{"toy_id": "a", "size": "M ", "made_at": "` + ok + `"}`, reason: ReasonBadSize},
		{name: "size empty", key: "", value: `{"toy_id": "a", "size": "", "made_at": "` + ok + `"}`, reason: ReasonBadSize},
		{name: "size a number", key: "M", value: `{"toy_id": "a", "size": 2, "made_at": "` + ok + `"}`, reason: ReasonBadSize},
		{name: "size null", key: "M", value: `{"toy_id": "a", "size": null, "made_at": "` + ok + `"}`, reason: ReasonBadSize},
		{name: "size an array", key: "M", value: `{"toy_id": "a", "size": ["M"], "made_at": "` + ok + `"}`, reason: ReasonBadSize},

		// size not key.
		{name: "other size as key", key: "L", value: toyJSON(ok), reason: ReasonSizeNotKey},
		{name: "no key", key: "", value: toyJSON(ok), reason: ReasonSizeNotKey},
		{name: "lowercase key", key: "m", value: toyJSON(ok), reason: ReasonSizeNotKey},
		{name: "key with a newline", key: "M\n", value: toyJSON(ok), reason: ReasonSizeNotKey},
		{name: "heartbeat under another key", key: "S", value: `{"heartbeat": true, "size": "M", "made_at": "` + ok + `"}`, reason: ReasonSizeNotKey},
		// The size part of a line is the key up to its first slash.
		{name: "hall under another size", key: "L/hall-7", value: toyJSON(ok), reason: ReasonSizeNotKey},
		{name: "XL/h for a size M", key: "XL/h", value: toyJSON(ok), reason: ReasonSizeNotKey},
		{name: "slash first", key: "/h", value: toyJSON(ok), reason: ReasonSizeNotKey},
		{name: "slash alone", key: "/", value: toyJSON(ok), reason: ReasonSizeNotKey},
		{name: "lowercase size part", key: "m/h", value: toyJSON(ok), reason: ReasonSizeNotKey},
		{name: "size part with a space", key: "M /h", value: toyJSON(ok), reason: ReasonSizeNotKey},
		{name: "dash instead of slash", key: "M-h", value: toyJSON(ok), reason: ReasonSizeNotKey},
		{name: "backslash instead of slash", key: `M\h`, value: toyJSON(ok), reason: ReasonSizeNotKey},
		{name: "hall before the size", key: "h/M", value: toyJSON(ok), reason: ReasonSizeNotKey},

		// bad line: the size part is the value's size, what follows the slash is no hall.
		{name: "empty hall", key: "M/", value: toyJSON(ok), reason: ReasonBadLine},
		{name: "second slash", key: "M/a/b", value: toyJSON(ok), reason: ReasonBadLine},
		{name: "trailing slash", key: "M/a/", value: toyJSON(ok), reason: ReasonBadLine},
		{name: "two slashes", key: "M//a", value: toyJSON(ok), reason: ReasonBadLine},
		{name: "uppercase hall", key: "M/Hall", value: toyJSON(ok), reason: ReasonBadLine},
		{name: "33-character hall", key: "M/" + strings.Repeat("h", 33), value: toyJSON(ok), reason: ReasonBadLine},
		{name: "hall starting with a dash", key: "M/-x", value: toyJSON(ok), reason: ReasonBadLine},
		{name: "hall a dash", key: "M/-", value: toyJSON(ok), reason: ReasonBadLine},
		{name: "hall with an underscore", key: "M/hall_7", value: toyJSON(ok), reason: ReasonBadLine},
		{name: "hall with a dot", key: "M/hall.7", value: toyJSON(ok), reason: ReasonBadLine},
		{name: "hall with a space", key: "M/hall 7", value: toyJSON(ok), reason: ReasonBadLine},
		{name: "hall with a trailing newline", key: "M/h\n", value: toyJSON(ok), reason: ReasonBadLine},
		{name: "hall not ASCII", key: "M/hällé", value: toyJSON(ok), reason: ReasonBadLine},
		{name: "hall with a full-width digit", key: "M/１", value: toyJSON(ok), reason: ReasonBadLine},
		{name: "hall not UTF-8", key: "M/h\xff", value: toyJSON(ok), reason: ReasonBadLine},
		{name: "hall with NUL", key: "M/h\x00", value: toyJSON(ok), reason: ReasonBadLine},
		{name: "heartbeat with a bad line", key: "S/S", value: `{"heartbeat": true, "size": "S", "made_at": "` + ok + `"}`, reason: ReasonBadLine},

		// no id: neither a non-empty string id nor "heartbeat": true.
		{name: "id missing", key: "M", value: `{"size": "M", "made_at": "` + ok + `"}`, reason: ReasonNoID},
		{name: "id empty", key: "M", value: `{"toy_id": "", "size": "M", "made_at": "` + ok + `"}`, reason: ReasonNoID},
		{name: "id a number", key: "M", value: `{"toy_id": 42, "size": "M", "made_at": "` + ok + `"}`, reason: ReasonNoID},
		{name: "id null", key: "M", value: `{"toy_id": null, "size": "M", "made_at": "` + ok + `"}`, reason: ReasonNoID},
		{name: "id true", key: "M", value: `{"toy_id": true, "size": "M", "made_at": "` + ok + `"}`, reason: ReasonNoID},
		{name: "id an object", key: "M", value: `{"toy_id": {"id": "a"}, "size": "M", "made_at": "` + ok + `"}`, reason: ReasonNoID},
		{name: "id an array", key: "M", value: `{"toy_id": ["a"], "size": "M", "made_at": "` + ok + `"}`, reason: ReasonNoID},
		{name: "id field in another case", key: "M", value: `{"Toy_ID": "a", "size": "M", "made_at": "` + ok + `"}`, reason: ReasonNoID},
		{name: "box_id on the toys stream", key: "M", value: `{"box_id": "a", "size": "M", "made_at": "` + ok + `"}`, reason: ReasonNoID},
		{name: "toy_id on the boxes stream", stream: Boxes, key: "M", value: `{"toy_id": "a", "size": "M", "made_at": "` + ok + `"}`, reason: ReasonNoID},
		{name: "heartbeat false without id", key: "M", value: `{"heartbeat": false, "size": "M", "made_at": "` + ok + `"}`, reason: ReasonNoID},
		{name: "heartbeat string without id", key: "M", value: `{"heartbeat": "true", "size": "M", "made_at": "` + ok + `"}`, reason: ReasonNoID},
		{name: "duplicate keys: last id empty", key: "M", value: `{"toy_id": "a", "toy_id": "", "size": "M", "made_at": "` + ok + `"}`, reason: ReasonNoID},
		{name: "duplicate keys: last heartbeat false", key: "M", value: `{"heartbeat": true, "heartbeat": false, "size": "M", "made_at": "` + ok + `"}`, reason: ReasonNoID},

		// The first failing rule gives the reason.
		{name: "bad made_at before bad size", key: "M", value: `{"size": "XXL", "made_at": "soon"}`, reason: ReasonBadMadeAt},
		{name: "bad made_at before size not key", key: "L", value: `{"toy_id": "a", "size": "M", "made_at": "soon"}`, reason: ReasonBadMadeAt},
		{name: "bad size before no id", key: "M", value: `{"size": "XXL", "made_at": "` + ok + `"}`, reason: ReasonBadSize},
		{name: "size not key before no id", key: "L", value: `{"size": "M", "made_at": "` + ok + `"}`, reason: ReasonSizeNotKey},
		{name: "bad made_at before bad line", key: "M/Hall", value: `{"toy_id": "a", "size": "M", "made_at": "soon"}`, reason: ReasonBadMadeAt},
		{name: "bad size before bad line", key: "M/Hall", value: `{"toy_id": "a", "size": "XXL", "made_at": "` + ok + `"}`, reason: ReasonBadSize},
		{name: "size not key before bad line", key: "L/Hall", value: toyJSON(ok), reason: ReasonSizeNotKey},
		{name: "size not key before bad line, two slashes", key: "L/a/b", value: toyJSON(ok), reason: ReasonSizeNotKey},
		{name: "bad line before no id", key: "M/", value: `{"size": "M", "made_at": "` + ok + `"}`, reason: ReasonBadLine},
		{name: "heartbeat without made_at", key: "M", value: `{"heartbeat": true, "size": "M"}`, reason: ReasonBadMadeAt},
	}
}

func TestParse(t *testing.T) {
	for _, c := range parseCases() {
		t.Run(c.name, func(t *testing.T) {
			s := c.stream
			if s == "" {
				s = Toys
			}
			got, err := Parse(s, []byte(c.key), []byte(c.value))
			if c.reason != "" {
				var ie *InvalidError
				if !errors.As(err, &ie) {
					t.Fatalf("Parse(%q) = %+v, %v; want an *InvalidError with reason %q", c.value, got, err, c.reason)
				}
				if ie.Reason != c.reason || ReasonOf(err) != c.reason {
					t.Fatalf("Parse(%q): reason %q (%v), want %q", c.value, ie.Reason, err, c.reason)
				}
				if !strings.HasPrefix(err.Error(), string(c.reason)) {
					t.Errorf("error %q does not start with its reason", err)
				}
				if got != (Record{}) {
					t.Errorf("an invalid record should come with the zero Record, got %+v", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v, want a valid record", c.value, err)
			}
			want := c.want
			want.Stream = s
			want.Line = c.key // a valid record's line is its key, always
			if !got.MadeAt.Equal(want.MadeAt) {
				t.Errorf("MadeAt = %v, want %v", got.MadeAt, want.MadeAt)
			}
			got.MadeAt, want.MadeAt = time.Time{}, time.Time{}
			if got != want {
				t.Errorf("Parse(%q) =\n  %+v\nwant\n  %+v", c.value, got, want)
			}
		})
	}
}

func TestParseKeepsTheOffset(t *testing.T) {
	r, err := Parse(Toys, []byte("M"), []byte(toyJSON("2026-12-24T04:30:00-05:30")))
	if err != nil {
		t.Fatal(err)
	}
	if _, off := r.MadeAt.Zone(); off != -(5*3600 + 1800) {
		t.Errorf("offset %d s, want -19800", off)
	}
	if got := FormatTime(r.MadeAt); got != "2026-12-24T10:00:00Z" {
		t.Errorf("FormatTime = %q, want UTC", got)
	}
}

func TestParseMadeAt(t *testing.T) {
	// What Go's time.Parse(time.RFC3339Nano, ...) alone would accept but RFC 3339
	// does not: ParseMadeAt refuses each of these.
	goOnly := []string{
		"2026-12-24T10:00:00,5Z",    // comma as the decimal mark
		"2026-12-24T1:00:00Z",       // one-digit hour
		"2026-12-24T10:00:00+24:00", // offset hour 24
	}
	for _, s := range goOnly {
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			t.Errorf("time.Parse now refuses %q (%v): update docs/SEMANTICS.md", s, err)
		}
		if _, err := ParseMadeAt(s); err == nil {
			t.Errorf("ParseMadeAt(%q) accepted a string that is not RFC 3339", s)
		}
	}
	// Lowercase t and z are RFC 3339 (section 5.6 NOTE) but not Go's layout.
	for _, s := range []string{"2026-12-24t10:00:00Z", "2026-12-24T10:00:00z"} {
		if _, err := ParseMadeAt(s); err != nil {
			t.Errorf("ParseMadeAt(%q): %v", s, err)
		}
	}
	// The calendar, after the grammar.
	for _, tc := range []struct {
		s    string
		want time.Time // zero: refused
	}{
		{"2024-02-29T00:00:00Z", utc("2024-02-29T00:00:00Z")},
		{"2000-02-29T23:59:59.5Z", utc("2000-02-29T23:59:59.5Z")},
		{"0000-02-29T00:00:00Z", time.Date(0, 2, 29, 0, 0, 0, 0, time.UTC)},
		{"2026-02-29T00:00:00Z", time.Time{}},
		{"1900-02-29T00:00:00Z", time.Time{}},
		{"2026-04-31T00:00:00Z", time.Time{}},
		{"2026-12-31T23:30:00-01:00", utc("2027-01-01T00:30:00Z")},
		{"2026-12-24T10:00:00.1234567899Z", utc("2026-12-24T10:00:00.123456789Z")},
	} {
		got, err := ParseMadeAt(tc.s)
		if tc.want.IsZero() {
			if err == nil {
				t.Errorf("ParseMadeAt(%q) = %v, want a refusal", tc.s, got)
			}
			continue
		}
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("ParseMadeAt(%q) = %v, %v; want %v", tc.s, got, err, tc.want)
		}
	}
}

func TestMadeAtMicrosFloors(t *testing.T) {
	cases := []struct {
		t    time.Time
		want int64
	}{
		{time.Unix(0, 0), 0},
		{time.Unix(0, 999), 0},
		{time.Unix(0, 1000), 1},
		{time.Unix(0, -1), -1},    // toward minus infinity, not zero
		{time.Unix(0, -999), -1},  //
		{time.Unix(0, -1000), -1}, //
		{time.Unix(0, -1001), -2}, //
		{time.Unix(-1, 999_999_999), -1},
		{utc("2026-12-24T10:00:00.123456789Z"), 1798106400_123456},
		{utc("0000-01-01T00:00:00Z"), -62167219200_000000},
	}
	for _, c := range cases {
		if got := (Record{MadeAt: c.t}).MadeAtMicros(); got != c.want {
			t.Errorf("MadeAtMicros(%v) = %d, want %d", c.t, got, c.want)
		}
	}
}

func TestFormat(t *testing.T) {
	cases := []struct{ got, want string }{
		{FormatTime(utc("2026-12-24T11:00:00+01:00")), "2026-12-24T10:00:00Z"},
		{FormatTime(utc("2026-12-24T10:00:00.500Z")), "2026-12-24T10:00:00.5Z"}, // trailing zeros dropped
		{FormatTime(utc("2026-12-24T10:00:00.123456789Z")), "2026-12-24T10:00:00.123456789Z"},
		{FormatMicros(0), "1970-01-01T00:00:00Z"},
		{FormatMicros(-1), "1969-12-31T23:59:59.999999Z"},
		{FormatMicros(-10_000_000), "1969-12-31T23:59:50Z"},
		{FormatMicros(1798106400_007500), "2026-12-24T10:00:00.0075Z"},
		// Outside years 0000..9999 in UTC there is no RFC 3339 form; Go writes a
		// sign or a fifth digit (see docs/SEMANTICS.md).
		{FormatTime(utc("0000-01-01T00:00:00+01:00")), "-0001-12-31T23:00:00Z"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	// Every formatted time of years 0000..9999 parses back to the same instant.
	for _, s := range []string{"2026-12-24T04:30:00.000001-05:30", "1969-12-31T23:59:59.999999999Z", "0000-01-01T00:00:00Z"} {
		tm := utc(s)
		back, err := ParseMadeAt(FormatTime(tm))
		if err != nil || !back.Equal(tm) {
			t.Errorf("FormatTime(%s) = %q does not parse back: %v", s, FormatTime(tm), err)
		}
	}
}

func TestReasonOfAndError(t *testing.T) {
	ie := &InvalidError{Reason: ReasonBadSize, Detail: "size 7"}
	if ReasonOf(nil) != "" || ReasonOf(errors.New("x")) != "" {
		t.Error("ReasonOf of a non-InvalidError should be empty")
	}
	if ReasonOf(fmt.Errorf("wrapped: %w", ie)) != ReasonBadSize {
		t.Error("ReasonOf should see through wrapping")
	}
	if ie.Error() != "bad size: size 7" {
		t.Errorf("Error() = %q", ie.Error())
	}
	if (&InvalidError{Reason: ReasonNoID}).Error() != "no id" {
		t.Error("Error() without detail should be the reason alone")
	}
	// The vocabulary is the contract's, word for word.
	vocabulary := map[Reason]string{
		ReasonMalformedJSON: "malformed json",
		ReasonBadMadeAt:     "bad made_at",
		ReasonBadSize:       "bad size",
		ReasonSizeNotKey:    "size not key",
		ReasonBadLine:       "bad line",
		ReasonNoID:          "no id",
		ReasonDuplicate:     "duplicate",
	}
	for r, s := range vocabulary {
		if string(r) != s {
			t.Errorf("reason %q, want %q", r, s)
		}
	}
}

func TestStreamsAndSizes(t *testing.T) {
	if !Toys.Valid() || !Boxes.Valid() || Stream("gifts").Valid() || Stream("").Valid() {
		t.Error("Stream.Valid")
	}
	if Toys.IDField() != "toy_id" || Boxes.IDField() != "box_id" {
		t.Error("Stream.IDField")
	}
	for _, s := range Sizes {
		if !ValidSize(s) {
			t.Errorf("ValidSize(%q) = false", s)
		}
	}
	for _, s := range []string{"", "s", "m", "XXL", "XS", " M"} {
		if ValidSize(s) {
			t.Errorf("ValidSize(%q) = true", s)
		}
	}
	if len(Sizes) != 4 {
		t.Errorf("Sizes = %v", Sizes)
	}
}

// TestSizeRank: the sizes in display order, and anything else after them.
func TestSizeRank(t *testing.T) {
	for i, s := range Sizes {
		if SizeRank(s) != i {
			t.Errorf("SizeRank(%q) = %d, want %d", s, SizeRank(s), i)
		}
	}
	for _, s := range []string{"", "XXL", "m", "S "} {
		if SizeRank(s) != len(Sizes) {
			t.Errorf("SizeRank(%q) = %d, want %d: after every size class", s, SizeRank(s), len(Sizes))
		}
	}
}

// lineGrammar is the regular expression the SQL engines check a key with
// (internal/contractsql/sql/10_np_grammar.sql): a size class alone, or a size
// class, a slash and a hall. ValidLine is held to it, so that Go and SQL
// agree on what a bad line is.
var lineGrammar = func() *regexp.Regexp {
	text, err := os.ReadFile(filepath.Join("..", "contractsql", "sql", "10_np_grammar.sql"))
	if err != nil {
		panic(err)
	}
	m := regexp.MustCompile(`regexp_count\(rkey, '([^']*)'\)`).FindSubmatch(text)
	if m == nil {
		panic("10_np_grammar.sql: no regexp_count(rkey, '...')")
	}
	return regexp.MustCompile(string(m[1]))
}()

func TestValidLine(t *testing.T) {
	h32 := strings.Repeat("a", 31) + "9"
	for _, tc := range []struct {
		key  string
		want bool
	}{
		{"S", true}, {"M", true}, {"L", true}, {"XL", true},
		{"M/hall-7", true}, {"XL/h", true}, {"S/0", true}, {"L/a-", true}, {"M/a--b", true},
		{"M/" + h32, true},
		{"", false}, {"m", false}, {"XXL", false}, {"M ", false},
		{"M/", false}, {"M/a/b", false}, {"M//", false}, {"M/Hall", false}, {"M/-x", false}, {"M/-", false},
		{"M/" + h32 + "b", false}, // 33 characters
		{"/h", false}, {"/", false}, {"XXL/h", false}, {"m/h", false}, {"h/M", false},
		{"M/h\n", false}, {"M/h ", false}, {" M/h", false}, {"M/h_1", false}, {"M/é", false}, {"M/h\x00", false}, {"M/h\xff", false},
		{"M\n/h", false}, {"M/\nh", false},
	} {
		if got := ValidLine(tc.key); got != tc.want {
			t.Errorf("ValidLine(%q) = %v, want %v", tc.key, got, tc.want)
		}
		if got := lineGrammar.MatchString(tc.key); got != tc.want {
			t.Errorf("the grammar's expression says %v for %q, the table %v", got, tc.key, tc.want)
		}
		// Parse decides the same: with the value's size the key's size part,
		// a key is valid exactly when it is a line.
		size, _, _ := SplitLine(tc.key)
		if ValidSize(size) {
			_, err := Parse(Toys, []byte(tc.key), []byte(`{"toy_id": "t", "size": "`+size+`", "made_at": "2026-12-24T10:00:00Z"}`))
			if want := map[bool]Reason{true: "", false: ReasonBadLine}[tc.want]; ReasonOf(err) != want {
				t.Errorf("Parse with key %q: %v, want reason %q", tc.key, err, want)
			}
		}
	}
}

func TestSplitAndJoinLine(t *testing.T) {
	for _, tc := range []struct{ key, size, hall string }{
		{"M", "M", ""}, {"M/hall-7", "M", "hall-7"}, {"XL/a/b", "XL", "a/b"}, {"/h", "", "h"}, {"", "", ""},
	} {
		size, hall, has := SplitLine(tc.key)
		if size != tc.size || hall != tc.hall || has != strings.Contains(tc.key, "/") {
			t.Errorf("SplitLine(%q) = %q, %q, %v", tc.key, size, hall, has)
		}
	}
	if JoinLine("M", "") != "M" || JoinLine("XL", "hall-7") != "XL/hall-7" {
		t.Errorf("JoinLine: %q, %q", JoinLine("M", ""), JoinLine("XL", "hall-7"))
	}
}

// FuzzValidLine: ValidLine accepts exactly what the grammar's regular
// expression accepts. Run with
//
//	go test -fuzz=FuzzValidLine -fuzztime=60s ./internal/record
func FuzzValidLine(f *testing.F) {
	for _, s := range []string{"M", "M/hall-7", "M/", "M/a/b", "M/Hall", "XL/" + strings.Repeat("z", 33), "/h", "M/-x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := ValidLine(s), lineGrammar.MatchString(s); got != want {
			t.Fatalf("ValidLine(%q) = %v, the grammar says %v", s, got, want)
		}
	})
}

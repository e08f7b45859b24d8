package sqlengine_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/contract"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
	"github.com/northpole-workshop/northpole/internal/sqlengine"
	"github.com/northpole-workshop/northpole/internal/testsupport/sqltest"
)

// rec is one raw Kafka record of an edge case. Partition is the size's index
// for a size key and 0 otherwise (every line with a hall shares partition 0),
// unless part is set; offsets are given in order per (stream, partition).
type rec struct {
	stream record.Stream
	part   int32 // -1: derive from the key
	key    []byte
	value  []byte
}

func T(key, value string) rec {
	return rec{record.Toys, -1, []byte(key), []byte(value)}
}

func B(key, value string) rec {
	return rec{record.Boxes, -1, []byte(key), []byte(value)}
}

func raw(s record.Stream, key, value []byte) rec { return rec{s, -1, key, value} }

func (r rec) in(part int32) rec { r.part = part; return r }

func toyV(id, size, madeAt string) string {
	return fmt.Sprintf(`{"toy_id":%q,"kind":"teddy-bear","size":%q,"elf":"e","made_at":%q}`, id, size, madeAt)
}

func boxV(id, size, madeAt string) string {
	return fmt.Sprintf(`{"box_id":%q,"size":%q,"elf":"e","made_at":%q}`, id, size, madeAt)
}

func hbV(size, madeAt string) string {
	return fmt.Sprintf(`{"heartbeat":true,"size":%q,"elf":"e","made_at":%q}`, size, madeAt)
}

// at is a time on 2026-12-24 (UTC), e.g. at("10:00:01").
func at(clock string) string { return "2026-12-24T" + clock + "Z" }

func inputs(recs ...rec) []record.Input {
	next := map[string]int64{}
	out := make([]record.Input, len(recs))
	for i, r := range recs {
		p := r.part
		if p < 0 {
			p = int32(max(0, slices.Index(record.Sizes, string(r.key))))
		}
		k := fmt.Sprintf("%s/%d", r.stream, p)
		out[i] = record.Input{Stream: r.stream, Topic: string(r.stream), Partition: p, Offset: next[k], Key: r.key, Value: r.value}
		next[k]++
	}
	return out
}

// rows formats one set of s for the expectations of edge cases. Rows show
// their line (their size is the line's, which the comparison with the
// reference checks).
func rows(s results.Set, set string) []string {
	var out []string
	switch set {
	case "packed":
		for _, r := range s.Packed {
			out = append(out, fmt.Sprintf("%s+%s %s %s", r.ToyID, r.BoxID, r.Line, r.WindowStart))
		}
	case "unpacked":
		for _, r := range s.Unpacked {
			out = append(out, fmt.Sprintf("%s %s %s", r.ToyID, r.Line, r.WindowStart))
		}
	case "spare":
		for _, r := range s.Spare {
			out = append(out, fmt.Sprintf("%s %s %s", r.BoxID, r.Line, r.WindowStart))
		}
	case "late":
		for _, r := range s.Late {
			out = append(out, fmt.Sprintf("%s/%d@%d %s %s %s", r.Stream, r.Partition, r.Offset, r.ID, r.Line, r.MadeAt))
		}
	case "dead":
		for _, r := range s.Dead {
			out = append(out, fmt.Sprintf("%s/%d@%d %s", r.Stream, r.Partition, r.Offset, r.Reason))
		}
	default:
		panic("unknown set " + set)
	}
	slices.Sort(out)
	return out
}

type edgeCase struct {
	name string
	w, l time.Duration // zero w: W=10s, L=5s
	recs []rec
	// want holds hand-computed rows of some sets (see rows). Both the SQL
	// result and the reference must equal them; sets not named are only
	// compared between the two.
	want map[string][]string
}

// deadOne is the expectation of a case with a single record on toys/1 (key
// M) that must be a dead letter with reason r.
func deadOne(r record.Reason) map[string][]string {
	return map[string][]string{"dead": {"toys/1@0 " + string(r)}, "late": nil, "packed": nil}
}

// validOne: a single valid record on toys/1, no dead letter.
var validOne = map[string][]string{"dead": nil}

func edgeCases() []edgeCase {
	const (
		mal   = record.ReasonMalformedJSON
		badAt = record.ReasonBadMadeAt
		badSz = record.ReasonBadSize
		notK  = record.ReasonSizeNotKey
		badLn = record.ReasonBadLine
		noID  = record.ReasonNoID
	)
	m := func(madeAt string) string { return fmt.Sprintf(`{"toy_id":"x","size":"M","made_at":%s}`, madeAt) }
	cases := []edgeCase{
		// --- malformed json
		{name: "truncated object", recs: []rec{T("M", `{"toy_id":"x","size":"M"`)}, want: deadOne(mal)},
		{name: "array", recs: []rec{T("M", `[`+toyV("x", "M", at("10:00:00"))+`]`)}, want: deadOne(mal)},
		{name: "string", recs: []rec{T("M", `"hello"`)}, want: deadOne(mal)},
		{name: "two objects", recs: []rec{T("M", toyV("x", "M", at("10:00:00"))+toyV("y", "M", at("10:00:00")))}, want: deadOne(mal)},
		{name: "empty value", recs: []rec{T("M", ``)}, want: deadOne(mal)},
		{name: "null value (tombstone)", recs: []rec{raw(record.Toys, []byte("M"), nil)}, want: deadOne(mal)},
		{name: "invalid utf8 in a string", recs: []rec{raw(record.Toys, []byte("M"), []byte("{\"toy_id\":\"x\xff\",\"size\":\"M\",\"made_at\":\""+at("10:00:00")+"\"}"))}, want: deadOne(mal)},
		{name: "utf8-encoded surrogate", recs: []rec{raw(record.Toys, []byte("M"), []byte("{\"toy_id\":\"\xed\xa0\x80\",\"size\":\"M\",\"made_at\":\""+at("10:00:00")+"\"}"))}, want: deadOne(mal)},
		{name: "byte order mark", recs: []rec{T("M", "\ufeff"+toyV("x", "M", at("10:00:00")))}, want: deadOne(mal)},
		{name: "whitespace around the object is fine", recs: []rec{T("M", " \t\r\n"+toyV("x", "M", at("10:00:00"))+"\n ")}, want: validOne},
		{name: "NUL byte outside strings", recs: []rec{raw(record.Toys, []byte("M"), append([]byte(toyV("x", "M", at("10:00:00"))), 0))}, want: deadOne(mal)},
		// --- malformed json: the contract's strict JSON, at each boundary
		{name: "127 levels of nesting", recs: []rec{T("M", withX(nest(126)))}, want: validOne},
		{name: "128 levels of nesting", recs: []rec{T("M", withX(nest(127)))}, want: deadOne(mal)},
		{name: "128 levels of objects", recs: []rec{T("M", withX(strings.Repeat(`{"a":`, 127)+"0"+strings.Repeat("}", 127)))}, want: deadOne(mal)},
		{name: "the largest double", recs: []rec{T("M", withX("1.7976931348623157e308"))}, want: validOne},
		{name: "the next decimal, 1.8e308", recs: []rec{T("M", withX("1.8e308"))}, want: deadOne(mal)},
		{name: "1e400 (PostgreSQL's numeric takes it)", recs: []rec{T("M", withX("[1, -1e400]"))}, want: deadOne(mal)},
		{name: "an integer of 400 digits", recs: []rec{T("M", withX("1"+strings.Repeat("0", 399)))}, want: deadOne(mal)},
		{name: "1e-400 underflows to 0", recs: []rec{T("M", withX("1e-400"))}, want: validOne},
		{name: "a lone high surrogate", recs: []rec{T("M", toyEsc(`\ud800`, at("10:00:00")))}, want: deadOne(mal)},
		{name: "a lone low surrogate", recs: []rec{T("M", toyEsc(`\udfff`, at("10:00:00")))}, want: deadOne(mal)},
		{name: "a high surrogate then a letter escape", recs: []rec{T("M", withX(`"\ud800\u0041"`))}, want: deadOne(mal)},
		{name: "a lone surrogate in a name", recs: []rec{T("M", `{"\udc00":1,"toy_id":"x","size":"M","made_at":"`+at("10:00:00")+`"}`)}, want: deadOne(mal)},
		{name: "NaN", recs: []rec{T("M", withX("NaN"))}, want: deadOne(mal)},
		{name: "Infinity", recs: []rec{T("M", withX("[Infinity]"))}, want: deadOne(mal)},
		{name: "-Infinity", recs: []rec{T("M", withX("-Infinity"))}, want: deadOne(mal)},
		// --- bad made_at
		{name: "made_at missing", recs: []rec{T("M", `{"toy_id":"x","size":"M"}`)}, want: deadOne(badAt)},
		{name: "made_at number", recs: []rec{T("M", m(`1798106400`))}, want: deadOne(badAt)},
		{name: "made_at null", recs: []rec{T("M", m(`null`))}, want: deadOne(badAt)},
		{name: "made_at object", recs: []rec{T("M", m(`{"t":"2026-12-24T10:00:00Z"}`))}, want: deadOne(badAt)},
		{name: "made_at with a space", recs: []rec{T("M", m(`"2026-12-24 10:00:00"`))}, want: deadOne(badAt)},
		{name: "made_at without offset", recs: []rec{T("M", m(`"2026-12-24T10:00:00"`))}, want: deadOne(badAt)},
		{name: "made_at without seconds", recs: []rec{T("M", m(`"2026-12-24T10:00Z"`))}, want: deadOne(badAt)},
		{name: "made_at february 30", recs: []rec{T("M", m(`"2026-02-30T10:00:00Z"`))}, want: deadOne(badAt)},
		{name: "made_at february 29 of a common year", recs: []rec{T("M", m(`"2027-02-29T10:00:00Z"`))}, want: deadOne(badAt)},
		{name: "made_at february 29 of 1900", recs: []rec{T("M", m(`"1900-02-29T10:00:00Z"`))}, want: deadOne(badAt)},
		{name: "made_at february 29 of 2000", recs: []rec{T("M", m(`"2000-02-29T10:00:00Z"`))}, want: validOne},
		{name: "made_at february 29 of 2028", recs: []rec{T("M", m(`"2028-02-29T23:59:59Z"`))}, want: validOne},
		{name: "made_at april 31", recs: []rec{T("M", m(`"2026-04-31T10:00:00Z"`))}, want: deadOne(badAt)},
		{name: "made_at leap second", recs: []rec{T("M", m(`"2016-12-31T23:59:60Z"`))}, want: deadOne(badAt)},
		{name: "made_at comma fraction", recs: []rec{T("M", m(`"2026-12-24T10:00:00,5Z"`))}, want: deadOne(badAt)},
		{name: "made_at one-digit hour", recs: []rec{T("M", m(`"2026-12-24T1:00:00Z"`))}, want: deadOne(badAt)},
		{name: "made_at offset hour 24", recs: []rec{T("M", m(`"2026-12-24T10:00:00+24:00"`))}, want: deadOne(badAt)},
		{name: "made_at five-digit year", recs: []rec{T("M", m(`"12026-12-24T10:00:00Z"`))}, want: deadOne(badAt)},
		{name: "made_at signed year", recs: []rec{T("M", m(`"+2026-12-24T10:00:00Z"`))}, want: deadOne(badAt)},
		{name: "made_at empty fraction", recs: []rec{T("M", m(`"2026-12-24T10:00:00.Z"`))}, want: deadOne(badAt)},
		{name: "made_at trailing space", recs: []rec{T("M", m(`"2026-12-24T10:00:00Z "`))}, want: deadOne(badAt)},
		{name: "made_at trailing newline", recs: []rec{T("M", m(`"2026-12-24T10:00:00Z\n"`))}, want: deadOne(badAt)},
		{name: "made_at arabic-indic digits", recs: []rec{T("M", m(`"٢٠٢٦-12-24T10:00:00Z"`))}, want: deadOne(badAt)},
		{name: "made_at month 13", recs: []rec{T("M", m(`"2026-13-24T10:00:00Z"`))}, want: deadOne(badAt)},
		{name: "made_at day 00", recs: []rec{T("M", m(`"2026-12-00T10:00:00Z"`))}, want: deadOne(badAt)},
		{name: "made_at lowercase t and z", recs: []rec{T("M", m(`"2026-12-24t10:00:00.5z"`))}, want: validOne},
		{name: "made_at escaped Z", recs: []rec{T("M", m(`"2026-12-24T10:00:00\u005a"`))}, want: validOne},
		{name: "made_at with NUL escape", recs: []rec{T("M", m(`"2026-12-24T10:00:00Z\u0000"`))}, want: deadOne(badAt)},
		{name: "made_at year 0000 and minus zero offset", recs: []rec{T("M", m(`"0000-01-01T00:00:00-00:00"`))}, want: validOne},
		// --- bad size, size not key
		{name: "size missing", recs: []rec{T("M", `{"toy_id":"x","made_at":"`+at("10:00:00")+`"}`)}, want: deadOne(badSz)},
		{name: "size XXL", recs: []rec{T("M", toyV("x", "XXL", at("10:00:00")))}, want: deadOne(badSz)},
		{name: "size lowercase", recs: []rec{T("M", toyV("x", "m", at("10:00:00")))}, want: deadOne(badSz)},
		{name: "size number", recs: []rec{T("M", `{"toy_id":"x","size":1,"made_at":"`+at("10:00:00")+`"}`)}, want: deadOne(badSz)},
		{name: "size with NUL", recs: []rec{T("M", `{"toy_id":"x","size":"M\u0000","made_at":"`+at("10:00:00")+`"}`)}, want: deadOne(badSz)},
		{name: "bad made_at wins over bad size", recs: []rec{T("M", `{"toy_id":"x","size":"XXL","made_at":"yesterday"}`)}, want: deadOne(badAt)},
		{name: "size not key", recs: []rec{T("L", toyV("x", "M", at("10:00:00"))).in(1)}, want: deadOne(notK)},
		{name: "size not key: no key", recs: []rec{raw(record.Toys, nil, []byte(toyV("x", "M", at("10:00:00")))).in(1)}, want: deadOne(notK)},
		{name: "size not key: empty key", recs: []rec{T("", toyV("x", "M", at("10:00:00"))).in(1)}, want: deadOne(notK)},
		{name: "size not key: key not utf8", recs: []rec{raw(record.Toys, []byte{'M', 0xff}, []byte(toyV("x", "M", at("10:00:00")))).in(1)}, want: deadOne(notK)},
		{name: "size not key: key with NUL", recs: []rec{raw(record.Toys, []byte{'M', 0}, []byte(toyV("x", "M", at("10:00:00")))).in(1)}, want: deadOne(notK)},
		{name: "size not key: lowercase key", recs: []rec{T("m", toyV("x", "M", at("10:00:00"))).in(1)}, want: deadOne(notK)},
		{name: "size key XXL with size XXL is bad size", recs: []rec{T("XXL", toyV("x", "XXL", at("10:00:00"))).in(1)}, want: deadOne(badSz)},
		// --- packing lines (contract v3): the key's size part, then the hall
		{name: "a line with a hall", recs: []rec{T("M/hall-7", toyV("x", "M", at("10:00:00"))).in(1)}, want: validOne},
		{name: "a 32-character hall", recs: []rec{T("M/"+strings.Repeat("h", 32), toyV("x", "M", at("10:00:00"))).in(1)}, want: validOne},
		{name: "XL/h for size XL", recs: []rec{T("XL/h", toyV("x", "XL", at("10:00:00"))).in(1)}, want: validOne},
		{name: "a hall starting with a digit, ending with a dash", recs: []rec{T("M/7-", toyV("x", "M", at("10:00:00"))).in(1)}, want: validOne},
		{name: "an empty hall", recs: []rec{T("M/", toyV("x", "M", at("10:00:00"))).in(1)}, want: deadOne(badLn)},
		{name: "a second slash", recs: []rec{T("M/a/b", toyV("x", "M", at("10:00:00"))).in(1)}, want: deadOne(badLn)},
		{name: "an uppercase hall", recs: []rec{T("M/Hall", toyV("x", "M", at("10:00:00"))).in(1)}, want: deadOne(badLn)},
		{name: "a 33-character hall", recs: []rec{T("M/"+strings.Repeat("h", 33), toyV("x", "M", at("10:00:00"))).in(1)}, want: deadOne(badLn)},
		{name: "a hall starting with a dash", recs: []rec{T("M/-x", toyV("x", "M", at("10:00:00"))).in(1)}, want: deadOne(badLn)},
		{name: "a hall with an underscore", recs: []rec{T("M/h_1", toyV("x", "M", at("10:00:00"))).in(1)}, want: deadOne(badLn)},
		{name: "a hall with a trailing newline", recs: []rec{T("M/h\n", toyV("x", "M", at("10:00:00"))).in(1)}, want: deadOne(badLn)},
		{name: "a hall not ASCII", recs: []rec{T("M/é", toyV("x", "M", at("10:00:00"))).in(1)}, want: deadOne(badLn)},
		{name: "a hall with a full-width digit", recs: []rec{T("M/１", toyV("x", "M", at("10:00:00"))).in(1)}, want: deadOne(badLn)},
		{name: "a hall not UTF-8", recs: []rec{raw(record.Toys, []byte("M/h\xff"), []byte(toyV("x", "M", at("10:00:00")))).in(1)}, want: deadOne(badLn)},
		{name: "a hall with NUL", recs: []rec{raw(record.Toys, []byte("M/h\x00"), []byte(toyV("x", "M", at("10:00:00")))).in(1)}, want: deadOne(badLn)},
		{name: "a heartbeat with a bad line", recs: []rec{T("M/H", hbV("M", at("10:00:00"))).in(1)}, want: deadOne(badLn)},
		{name: "a hall under another size", recs: []rec{T("L/h", toyV("x", "M", at("10:00:00"))).in(1)}, want: deadOne(notK)},
		{name: "XL/h for size M", recs: []rec{T("XL/h", toyV("x", "M", at("10:00:00"))).in(1)}, want: deadOne(notK)},
		{name: "a slash first", recs: []rec{T("/h", toyV("x", "M", at("10:00:00"))).in(1)}, want: deadOne(notK)},
		{name: "a size part not UTF-8", recs: []rec{raw(record.Toys, []byte("M\xff/h"), []byte(toyV("x", "M", at("10:00:00")))).in(1)}, want: deadOne(notK)},
		{name: "a lowercase size part", recs: []rec{T("m/h", toyV("x", "M", at("10:00:00"))).in(1)}, want: deadOne(notK)},
		{name: "size not key before bad line", recs: []rec{T("L/Hall", toyV("x", "M", at("10:00:00"))).in(1)}, want: deadOne(notK)},
		{name: "bad size before bad line", recs: []rec{T("M/Hall", toyV("x", "XXL", at("10:00:00"))).in(1)}, want: deadOne(badSz)},
		{name: "bad line before no id", recs: []rec{T("M/", `{"size":"M","made_at":"`+at("10:00:00")+`"}`).in(1)}, want: deadOne(badLn)},
		{
			name: "a toy goes only into a box of its own line",
			recs: []rec{
				T("M/h1", toyV("t1", "M", at("10:00:01"))), T("M/h1", toyV("t2", "M", at("10:00:02"))),
				B("M/h2", boxV("b1", "M", at("10:00:01"))),
				T("M/h2", toyV("t1", "M", at("10:00:03"))), // the same id on another line: an item
				B("M", boxV("b9", "M", at("10:00:04"))),
				B("M/h2", boxV("b1", "M", at("10:00:05"))), // a duplicate on M/h2
				T("M/h1", hbV("M", at("10:00:30"))), B("M/h1", hbV("M", at("10:00:30"))),
				T("M/h2", hbV("M", at("10:00:30"))), B("M/h2", hbV("M", at("10:00:30"))),
				T("M", hbV("M", at("10:00:30"))), B("M", hbV("M", at("10:00:30"))),
			},
			want: map[string][]string{
				"packed":   {"t1+b1 M/h2 " + at("10:00:00")},
				"unpacked": {"t1 M/h1 " + at("10:00:00"), "t2 M/h1 " + at("10:00:00")},
				"spare":    {"b9 M " + at("10:00:00")},
				"dead":     {"boxes/0@1 duplicate"},
				"late":     nil,
			},
		},
		{
			name: "each line has its own clock",
			recs: []rec{
				T("M/h1", toyV("a", "M", at("10:01:00"))),
				T("M/h1", toyV("b", "M", at("10:00:01"))), // late on M/h1
				T("M/h2", toyV("c", "M", at("10:00:01"))), // not late: M/h2's clock is its own
				T("M", toyV("d", "M", at("10:00:01"))),
			},
			want: map[string][]string{"late": {"toys/0@1 b M/h1 " + at("10:00:01")}, "dead": nil},
		},
		{
			// A hall gone quiet: the heartbeats of M and M/h2 close nothing of
			// M/h1, and M/h1 holds nothing of theirs back.
			name: "windows close per line",
			recs: []rec{
				T("M/h1", toyV("q1", "M", at("10:00:01"))), T("M/h1", toyV("q2", "M", at("10:00:02"))),
				B("M/h1", boxV("qb", "M", at("10:00:03"))),
				T("M/h2", toyV("t", "M", at("10:00:01"))),
				T("M", toyV("u", "M", at("10:00:01"))),
				T("M/h2", hbV("M", at("10:01:00"))), B("M/h2", hbV("M", at("10:01:00"))),
				T("M", hbV("M", at("10:01:00"))), B("M", hbV("M", at("10:01:00"))),
			},
			want: map[string][]string{
				"packed":   {"q1+qb M/h1 " + at("10:00:00")},
				"unpacked": {"t M/h2 " + at("10:00:00"), "u M " + at("10:00:00")},
				"spare":    nil,
			},
		},
		{
			// Contract v3, said outright: at quiescence a window no heartbeat
			// closed (records made after the final heartbeats) reports its
			// pairs, not its unpacked toys or spare boxes.
			name: "a window open at quiescence reports its pairs only",
			recs: []rec{
				T("L/h", toyV("t1", "L", at("10:00:01"))), T("L/h", toyV("t2", "L", at("10:00:02"))),
				B("L/h", boxV("b1", "L", at("10:00:03"))),
				T("L/h", hbV("L", at("10:00:15"))), B("L/h", hbV("L", at("10:00:15"))), // the final heartbeats
				T("L/h", toyV("t3", "L", at("10:00:21"))), T("L/h", toyV("t4", "L", at("10:00:22"))),
				B("L/h", boxV("b3", "L", at("10:00:23"))),
				B("XL/h", boxV("b4", "XL", at("10:00:23"))),
			},
			want: map[string][]string{
				"packed":   {"t1+b1 L/h " + at("10:00:00"), "t3+b3 L/h " + at("10:00:20")},
				"unpacked": {"t2 L/h " + at("10:00:00")},
				"spare":    nil,
				"late":     nil,
				"dead":     nil,
			},
		},
		// --- no id
		{name: "id missing", recs: []rec{T("M", `{"size":"M","made_at":"`+at("10:00:00")+`"}`)}, want: deadOne(noID)},
		{name: "id empty", recs: []rec{T("M", toyV("", "M", at("10:00:00")))}, want: deadOne(noID)},
		{name: "id number", recs: []rec{T("M", `{"toy_id":7,"size":"M","made_at":"`+at("10:00:00")+`"}`)}, want: deadOne(noID)},
		{name: "id null", recs: []rec{T("M", `{"toy_id":null,"size":"M","made_at":"`+at("10:00:00")+`"}`)}, want: deadOne(noID)},
		{name: "id true", recs: []rec{T("M", `{"toy_id":true,"size":"M","made_at":"`+at("10:00:00")+`"}`)}, want: deadOne(noID)},
		{name: "box_id on toys", recs: []rec{T("M", boxV("x", "M", at("10:00:00")))}, want: deadOne(noID)},
		{name: "toy_id on boxes", recs: []rec{B("M", toyV("x", "M", at("10:00:00")))}, want: map[string][]string{"dead": {"boxes/1@0 no id"}}},
		{name: "Toy_ID is not toy_id", recs: []rec{T("M", `{"Toy_ID":"x","size":"M","made_at":"`+at("10:00:00")+`"}`)}, want: deadOne(noID)},
		{name: "heartbeat false without id", recs: []rec{T("M", `{"heartbeat":false,"size":"M","made_at":"`+at("10:00:00")+`"}`)}, want: deadOne(noID)},
		{name: "heartbeat string true without id", recs: []rec{T("M", `{"heartbeat":"true","size":"M","made_at":"`+at("10:00:00")+`"}`)}, want: deadOne(noID)},
		{name: "heartbeat 1 without id", recs: []rec{T("M", `{"heartbeat":1,"size":"M","made_at":"`+at("10:00:00")+`"}`)}, want: deadOne(noID)},
		{name: "id of one space is an id", recs: []rec{T("M", toyV(" ", "M", at("10:00:00")))}, want: validOne},
		// --- heartbeats
		{
			name: "heartbeat with id is a heartbeat and makes no duplicate",
			recs: []rec{
				T("M", `{"heartbeat":true,"toy_id":"x","size":"M","made_at":"`+at("10:00:01")+`"}`),
				T("M", toyV("x", "M", at("10:00:02"))),
				B("M", boxV("b", "M", at("10:00:03"))),
			},
			want: map[string][]string{"dead": nil, "packed": {"x+b M " + at("10:00:00")}},
		},
		{
			name: "heartbeat with a non-string id",
			recs: []rec{T("M", `{"heartbeat":true,"toy_id":5,"size":"M","made_at":"`+at("10:00:01")+`"}`)},
			want: validOne,
		},
		{
			name: "invalid heartbeat does not move the clock",
			recs: []rec{
				T("M", toyV("a", "M", at("10:00:01"))),
				T("L", hbV("M", at("10:01:00"))).in(1), // size not key: dead
				T("M", toyV("c", "M", at("10:00:02"))),
				B("M", boxV("b", "M", at("10:00:03"))),
			},
			want: map[string][]string{"dead": {"toys/1@1 size not key"}, "late": nil},
		},
		// --- duplicate JSON members: the last one wins, as in encoding/json
		{
			name: "duplicate toy_id member",
			recs: []rec{
				T("M", `{"toy_id":"a","toy_id":"b","size":"M","made_at":"`+at("10:00:01")+`"}`),
				B("M", boxV("box", "M", at("10:00:02"))),
			},
			want: map[string][]string{"packed": {"b+box M " + at("10:00:00")}},
		},
		{
			name: "heartbeat true then false is not a heartbeat",
			recs: []rec{T("M", `{"heartbeat":true,"heartbeat":false,"size":"M","made_at":"`+at("10:00:01")+`"}`)},
			want: deadOne(noID),
		},
		{
			name: "bad size then good size is valid",
			recs: []rec{T("M", `{"toy_id":"x","size":"XXL","size":"M","made_at":"`+at("10:00:01")+`"}`)},
			want: validOne,
		},
		{
			name: "good made_at then bad made_at",
			recs: []rec{T("M", `{"toy_id":"x","size":"M","made_at":"`+at("10:00:01")+`","made_at":"now"}`)},
			want: deadOne(badAt),
		},
		// --- escapes in ids
		{
			name: "a surrogate pair is one character",
			recs: []rec{T("M", toyEsc(`\ud83c\udf81`, at("10:00:01"))), T("M", toyV("🎁", "M", at("10:00:02")))},
			want: map[string][]string{"dead": {"toys/1@1 duplicate"}},
		},
		{
			name: "ids with NUL are ids, compared byte for byte",
			recs: []rec{
				T("M", toyEsc(`a\u0000`, at("10:00:01"))), T("M", toyEsc(`a\u0000b`, at("10:00:02"))),
				T("M", toyEsc(`a\u0000`, at("10:00:03"))), T("M", toyEsc(`\u0000`, at("10:00:04"))),
			},
			want: map[string][]string{"dead": {"toys/1@2 duplicate"}},
		},
		{
			name: "unicode ids and case",
			recs: []rec{
				T("M", toyV("é", "M", at("10:00:01"))), T("M", toyEsc(`\u00e9`, at("10:00:02"))),
				T("M", toyV("É", "M", at("10:00:03"))), T("M", toyV("🎁", "M", at("10:00:04"))),
				B("M", boxV("b1", "M", at("10:00:05"))), B("M", boxV("b2", "M", at("10:00:06"))),
			},
			want: map[string][]string{
				"dead":   {"toys/1@1 duplicate"},
				"packed": {"é+b1 M " + at("10:00:00"), "É+b2 M " + at("10:00:00")},
			},
		},
		// --- duplicates
		{
			name: "duplicates are per stream and size",
			recs: []rec{
				T("M", toyV("x", "M", at("10:00:01"))), T("L", toyV("x", "L", at("10:00:01"))),
				B("M", boxV("x", "M", at("10:00:01"))), T("M", toyV("x", "M", at("10:00:02"))),
			},
			want: map[string][]string{"dead": {"toys/1@1 duplicate"}},
		},
		{
			name: "late comes before duplicate, and ids are unique within a window only",
			recs: []rec{
				T("M", toyV("a", "M", at("10:00:20"))),
				T("M", toyV("x", "M", at("10:00:01"))), // late: 10:00:15 >= 10:00:10
				T("M", toyV("x", "M", at("10:00:21"))), // another window: an item
				T("M", toyV("a", "M", at("10:00:02"))), // late (a's first copy is in another window)
			},
			want: map[string][]string{
				"dead": nil,
				"late": {"toys/1@1 x M " + at("10:00:01"), "toys/1@3 a M " + at("10:00:02")},
			},
		},
		{
			name: "a re-sent record after its window closed for its stream is late, not a duplicate",
			recs: []rec{
				T("M", toyV("x", "M", at("10:00:01"))),
				B("M", boxV("b", "M", at("10:00:02"))),
				T("M", hbV("M", at("10:00:20"))),       // toys' watermark 10:00:15: window 10:00:00 closed for toys
				T("M", toyV("x", "M", at("10:00:01"))), // the same record again: late
				B("M", hbV("M", at("10:00:20"))),
			},
			want: map[string][]string{
				"packed":   {"x+b M " + at("10:00:00")},
				"late":     {"toys/1@2 x M " + at("10:00:01")},
				"dead":     nil,
				"unpacked": nil,
				"spare":    nil,
			},
		},
		{
			name: "an id reused in a later window is an item in both",
			recs: []rec{
				T("M", toyV("x", "M", at("10:00:01"))), T("M", toyV("x", "M", at("10:00:11"))),
				B("M", boxV("b", "M", at("10:00:02"))), B("M", boxV("b", "M", at("10:00:12"))),
				T("M", toyV("x", "M", at("10:00:21"))), // a third window, no box
				T("M", hbV("M", at("10:00:40"))), B("M", hbV("M", at("10:00:40"))),
			},
			want: map[string][]string{
				"packed":   {"x+b M " + at("10:00:00"), "x+b M " + at("10:00:10")},
				"unpacked": {"x M " + at("10:00:20")},
				"late":     nil,
				"dead":     nil,
			},
		},
		{
			name: "two late copies of one id are two late rows",
			recs: []rec{
				T("M", toyV("x", "M", at("10:00:01"))),
				T("M", hbV("M", at("10:00:30"))),
				T("M", toyV("x", "M", at("10:00:01"))), // late
				T("M", toyV("x", "M", at("10:00:01"))), // late again, not a duplicate
				// Partition 2 comes after partition 1, whose clock is at
				// 10:00:30: both copies of y are late.
				T("M", toyV("y", "M", at("10:00:05"))).in(2),
				T("M", hbV("M", at("10:00:30"))).in(2),
				T("M", toyV("y", "M", at("10:00:05"))).in(2),
			},
			want: map[string][]string{
				"late": {
					"toys/1@2 x M " + at("10:00:01"), "toys/1@3 x M " + at("10:00:01"),
					"toys/2@0 y M " + at("10:00:05"), "toys/2@2 y M " + at("10:00:05"),
				},
				"dead": nil,
			},
		},
		{
			name: "a copy in the same window is a duplicate until the window closes, then late",
			recs: []rec{
				T("M", toyV("x", "M", at("10:00:01"))),
				T("M", toyV("x", "M", at("10:00:09"))), // duplicate
				T("M", hbV("M", at("10:00:14.999999"))),
				T("M", toyV("x", "M", at("10:00:03"))), // duplicate: the window is still open for toys
				B("M", boxV("x", "M", at("10:00:04"))), // boxes are another stream
				B("M", boxV("x", "M", at("10:00:05"))), // duplicate on boxes
				T("M", hbV("M", at("10:00:15"))),
				T("M", toyV("x", "M", at("10:00:04"))), // late
			},
			want: map[string][]string{
				"dead":   {"toys/1@1 duplicate", "toys/1@3 duplicate", "boxes/1@1 duplicate"},
				"late":   {"toys/1@5 x M " + at("10:00:04")},
				"packed": {"x+x M " + at("10:00:00")},
			},
		},
		// --- lateness boundaries
		{
			name: "late by exactly L",
			recs: []rec{T("M", toyV("a", "M", at("10:00:15"))), T("M", toyV("b", "M", at("10:00:09.999999")))},
			want: map[string][]string{"late": {"toys/1@1 b M " + at("10:00:09.999999")}},
		},
		{
			name: "one microsecond short of late",
			recs: []rec{T("M", toyV("a", "M", at("10:00:14.999999"))), T("M", toyV("b", "M", at("10:00:09.999999")))},
			want: map[string][]string{"late": nil},
		},
		{
			name: "nanoseconds below the lateness bound do not count",
			recs: []rec{T("M", toyV("a", "M", at("10:00:14.9999999"))), T("M", toyV("b", "M", at("10:00:05")))},
			want: map[string][]string{"late": nil},
		},
		{
			name: "L = 0",
			w:    10 * time.Second, l: -1,
			recs: []rec{
				T("M", toyV("a", "M", at("10:00:10"))), T("M", toyV("b", "M", at("10:00:09.999999999"))),
				T("M", toyV("c", "M", at("10:00:10"))),
			},
			want: map[string][]string{"late": {"toys/1@1 b M " + at("10:00:09.999999999")}},
		},
		{
			name: "a late row keeps nine fractional digits, truncated beyond",
			recs: []rec{T("M", toyV("a", "M", at("10:00:30"))), T("M", toyV("b", "M", at("10:00:01.1234567899")))},
			want: map[string][]string{"late": {"toys/1@1 b M " + at("10:00:01.123456789")}},
		},
		{
			name: "a late row's offset is converted to UTC",
			recs: []rec{T("M", toyV("a", "M", at("10:00:30"))), T("M", toyV("b", "M", "2026-12-24T11:00:01.5+01:00"))},
			want: map[string][]string{"late": {"toys/1@1 b M " + at("10:00:01.5")}},
		},
		// --- windows: floors, boundaries, negative times, offsets
		{
			name: "window boundary and a fraction that must not round up",
			recs: []rec{
				T("M", toyV("a", "M", at("10:00:09.9999996"))), T("M", toyV("b", "M", at("10:00:10"))),
				B("M", boxV("x", "M", at("10:00:00"))), B("M", boxV("y", "M", at("10:00:19.999999999"))),
			},
			want: map[string][]string{"packed": {"a+x M " + at("10:00:00"), "b+y M " + at("10:00:10")}},
		},
		{
			name: "times before 1970 are floored",
			recs: []rec{
				T("M", toyV("d", "M", "1969-12-31T23:59:49.5Z")),
				T("M", toyV("a", "M", "1969-12-31T23:59:59.999999Z")), T("M", toyV("b", "M", "1969-12-31T23:59:50Z")),
				T("M", toyV("c", "M", "1970-01-01T00:00:00Z")),
				B("M", boxV("z", "M", "1969-12-31T23:59:45Z")),
				B("M", boxV("x", "M", "1969-12-31T23:59:55Z")), B("M", boxV("y", "M", "1970-01-01T00:00:05Z")),
				T("M", hbV("M", "1970-01-01T00:01:00Z")), B("M", hbV("M", "1970-01-01T00:01:00Z")),
			},
			want: map[string][]string{
				"packed":   {"a+x M 1969-12-31T23:59:50Z", "c+y M 1970-01-01T00:00:00Z", "d+z M 1969-12-31T23:59:40Z"},
				"unpacked": {"b M 1969-12-31T23:59:50Z"},
				"late":     nil,
			},
		},
		{
			name: "an offset moves a record into another window",
			recs: []rec{
				T("M", toyV("a", "M", "2026-12-24T10:00:09+00:01")), // 09:59:09Z
				B("M", boxV("x", "M", "2026-12-24T09:59:05-00:00")),
			},
			want: map[string][]string{"packed": {"a+x M " + at("09:59:00")}},
		},
		{
			name: "years 0000 and 9999 at the edges of RFC 3339",
			w:    time.Hour, l: time.Minute,
			recs: []rec{
				T("M", toyV("a", "M", "0000-01-01T00:30:00+01:00")),
				T("M", toyV("big", "M", "9999-12-31T23:59:59.999999999-01:00")),
				T("M", toyV("b", "M", "0000-01-01T00:00:00Z")), // late
				B("M", boxV("x", "M", "0000-01-01T00:00:00.5-00:00")),
				B("M", hbV("M", "9999-12-31T23:59:59Z")),
			},
			want: map[string][]string{
				"late":     {"toys/1@2 b M 0000-01-01T00:00:00Z"},
				"unpacked": {"a M -0001-12-31T23:00:00Z"}, // RFC 3339 has no form for it; Go's
				"spare":    {"x M 0000-01-01T00:00:00Z"},
			},
		},
		{
			name: "W and L that are not whole seconds",
			w:    1500 * time.Millisecond, l: 333 * time.Microsecond,
			recs: []rec{
				T("M", toyV("a", "M", at("10:00:01.4999999"))), T("M", toyV("b", "M", at("10:00:01.5"))),
				T("M", toyV("c", "M", at("10:00:03.000333"))), T("M", toyV("d", "M", at("10:00:01.4"))),
				B("M", boxV("x", "M", at("10:00:00.1"))), B("M", boxV("y", "M", at("10:00:02.9"))),
				B("M", hbV("M", at("10:00:03.000333"))),
			},
			want: map[string][]string{
				"packed":   {"a+x M " + at("10:00:00"), "b+y M " + at("10:00:01.5")},
				"late":     {"toys/1@3 d M " + at("10:00:01.4")},
				"unpacked": nil,
			},
		},
		{
			// With W = 1 µs a window's number is its microsecond: the last
			// one before 1970 and the first after it differ only at the
			// highest level of the shared text's block tree (np_levels).
			name: "windows of 1 µs, watermarks across 1970 and up to 9999",
			w:    time.Microsecond, l: 0,
			recs: []rec{
				T("M", toyV("a", "M", "1969-12-31T23:59:59.999999Z")),
				B("M", boxV("x", "M", "1969-12-31T23:59:59.999999Z")),
				T("M", hbV("M", "1970-01-01T00:00:00Z")),
				T("M", toyV("b", "M", "1969-12-31T23:59:59.999999Z")), // late
				B("M", boxV("y", "M", "1969-12-31T23:59:59.9999995Z")),
				T("M", hbV("M", "9999-12-31T23:59:59.999999Z")),
				T("M", toyV("c", "M", at("10:00:00"))), // late
				B("M", hbV("M", "1970-01-01T00:00:00.000001Z")),
			},
			want: map[string][]string{
				"packed": {"a+x M 1969-12-31T23:59:59.999999Z"},
				"late":   {"toys/1@2 b M 1969-12-31T23:59:59.999999Z", "toys/1@4 c M " + at("10:00:00")},
				"spare":  {"y M 1969-12-31T23:59:59.999999Z"},
			},
		},
		// --- closing
		{
			name: "a window with no boxes at all never closes",
			recs: []rec{T("M", toyV("a", "M", at("10:00:01"))), T("M", hbV("M", at("10:01:00")))},
			want: map[string][]string{"unpacked": nil},
		},
		{
			name: "a window closes when both watermarks reach its end exactly",
			recs: []rec{
				T("M", toyV("a", "M", at("10:00:01"))), T("M", toyV("b", "M", at("10:00:02"))),
				B("M", boxV("x", "M", at("10:00:03"))),
				T("M", hbV("M", at("10:00:15"))), B("M", hbV("M", at("10:00:15"))),
				T("L", toyV("c", "L", at("10:00:01"))), B("L", boxV("y", "L", at("10:00:01"))), B("L", boxV("z", "L", at("10:00:02"))),
				T("L", hbV("L", at("10:00:15"))), B("L", hbV("L", at("10:00:14.999999"))),
			},
			want: map[string][]string{
				"unpacked": {"b M " + at("10:00:00")},
				"spare":    nil, // L's window is open: boxes' watermark is 1 µs short
				"packed":   {"a+x M " + at("10:00:00"), "c+y L " + at("10:00:00")},
			},
		},
		// --- order is (partition, offset)
		{
			name: "one (stream, size) over two partitions",
			recs: []rec{
				T("M", toyV("p1", "M", at("10:00:01"))).in(1),
				T("M", toyV("p0", "M", at("10:00:30"))).in(0),
				T("M", toyV("p1b", "M", at("10:00:02"))).in(1),
				B("M", boxV("x", "M", at("10:00:01"))), B("M", boxV("y", "M", at("10:00:02"))),
			},
			want: map[string][]string{
				// partition 0 first: p0 sets the clock, p1's toys are late.
				"late": {"toys/1@0 p1 M " + at("10:00:01"), "toys/1@1 p1b M " + at("10:00:02")},
			},
		},
		// --- the worked examples of docs/SEMANTICS.md
		{
			name: "example 1: more toys than boxes, and the reverse",
			recs: []rec{
				T("M", toyV("t1", "M", at("10:00:01"))), T("M", toyV("t2", "M", at("10:00:07"))),
				T("M", toyV("t3", "M", at("10:00:04"))), T("M", toyV("t4", "M", at("10:00:12"))),
				B("M", boxV("b1", "M", at("10:00:03"))), B("M", boxV("b2", "M", at("10:00:15"))),
				B("M", boxV("b3", "M", at("10:00:18"))),
				T("M", hbV("M", at("10:00:25"))), B("M", hbV("M", at("10:00:25"))),
			},
			want: map[string][]string{
				"packed":   {"t1+b1 M " + at("10:00:00"), "t4+b2 M " + at("10:00:10")},
				"unpacked": {"t2 M " + at("10:00:00"), "t3 M " + at("10:00:00")},
				"spare":    {"b3 M " + at("10:00:10")},
			},
		},
		{
			name: "example 2: a late record and a duplicate",
			recs: []rec{
				T("M", toyV("a", "M", at("10:00:02"))), T("M", toyV("b", "M", at("10:00:14"))),
				T("M", toyV("c", "M", at("10:00:05"))), T("M", toyV("b", "M", at("10:00:15"))),
				T("M", toyV("d", "M", at("10:00:08"))), B("M", boxV("box1", "M", at("10:00:03"))),
			},
			want: map[string][]string{
				"packed": {"a+box1 M " + at("10:00:00")},
				"late":   {"toys/1@4 d M " + at("10:00:08")},
				"dead":   {"toys/1@3 duplicate"},
			},
		},
	}
	for i := range cases {
		if cases[i].w == 0 {
			cases[i].w, cases[i].l = 10*time.Second, 5*time.Second
		}
		if cases[i].l < 0 {
			cases[i].l = 0
		}
	}
	return cases
}

// withX is a valid toy of size M with one more member, x, whose value is the
// JSON text x.
func withX(x string) string {
	return `{"toy_id":"t","size":"M","x":` + x + `,"made_at":"` + at("10:00:00") + `"}`
}

// nest is n levels of arrays around 0.
func nest(n int) string { return strings.Repeat("[", n) + "0" + strings.Repeat("]", n) }

// toyEsc is a toy of size M whose toy_id is the raw JSON string body esc
// (escapes kept as written).
func toyEsc(esc, madeAt string) string {
	return `{"toy_id":"` + esc + `","size":"M","made_at":"` + madeAt + `"}`
}

// TestEdgeCases runs every edge case on every engine: the SQL must equal the
// reference, dead reasons included, and both must equal the hand-computed
// rows where a case gives them.
func TestEdgeCases(t *testing.T) {
	cases := edgeCases()
	// The reference itself must agree with the hand-computed rows, or the
	// case is wrong, not the SQL.
	for _, c := range cases {
		ref := referenceOf(c)
		for set, want := range c.want {
			want = slices.Sorted(slices.Values(want))
			if got := rows(ref, set); !slices.Equal(got, want) {
				t.Errorf("%s: the reference's %s is %q, the case says %q", c.name, set, got, want)
			}
		}
	}
	sqltest.EachEngine(t, func(t *testing.T, e *sqlengine.Engine) {
		for _, c := range cases {
			got := sqltest.RunAndCompare(t, e, inputs(c.recs...), c.w, c.l)
			for set, want := range c.want {
				want = slices.Sorted(slices.Values(want))
				if g := rows(got, set); !slices.Equal(g, want) {
					t.Errorf("%s: %s %s is %q, want %q", c.name, e.Dialect(), set, g, want)
				}
			}
		}
	})
}

func referenceOf(c edgeCase) results.Set {
	return contract.Compute(inputs(c.recs...), contract.Params{Window: c.w, Lateness: c.l}, contract.ClosedOnly)
}

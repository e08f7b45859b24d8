package record

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzParse checks that Parse never panics, that a refusal is always an
// *InvalidError with one of the six parse reasons, that it says malformed
// json exactly when strictObject (the contract's strict JSON written out
// from its rules) refuses the value, and that an accepted
// record is what the rule says (valid size equal to the key's size part, the
// key a well-formed line and the record's Line, an id or a heartbeat) and survives a round trip: encoded again as JSON, it parses to
// the same fields and the same instant, in the same offset.
//
// Seeds live in testdata/fuzz/FuzzParse (one or more per reason). Run with
//
//	go test -fuzz=FuzzParse -fuzztime=60s ./internal/record
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, boxes bool, key, value []byte) {
		s := Toys
		if boxes {
			s = Boxes
		}
		r, err := Parse(s, key, value)
		// Each parse has its own zone of a made_at's offset: times compare by Equal.
		if rs, errs := Parse(s, string(key), value); !rs.MadeAt.Equal(r.MadeAt) || rs.withoutTime() != r.withoutTime() || fmt.Sprint(errs) != fmt.Sprint(err) {
			t.Fatalf("Parse with the key %q as a string: %+v, %v; as bytes: %+v, %v", key, rs, errs, r, err)
		}
		if _, strict := strictObject(value); (ReasonOf(err) == ReasonMalformedJSON) == strict {
			t.Fatalf("Parse(%q): %v; the contract's strict JSON says object: %v", value, err, strict)
		}
		if err != nil {
			var ie *InvalidError
			if !errors.As(err, &ie) {
				t.Fatalf("error %v is not an *InvalidError", err)
			}
			switch ie.Reason {
			case ReasonMalformedJSON, ReasonBadMadeAt, ReasonBadSize, ReasonSizeNotKey, ReasonBadLine, ReasonNoID:
			default:
				t.Fatalf("reason %q is not a parse reason", ie.Reason)
			}
			if r != (Record{}) {
				t.Fatalf("invalid record with a non-zero Record %+v", r)
			}
			return
		}

		if keySize, _, _ := SplitLine(string(key)); r.Stream != s || !ValidSize(r.Size) || r.Size != keySize || r.Line != string(key) || !ValidLine(r.Line) {
			t.Fatalf("accepted %+v for stream %s, key %q", r, s, key)
		}
		if !r.Heartbeat && r.ID == "" {
			t.Fatalf("accepted a record with neither id nor heartbeat: %+v", r)
		}
		if y := r.MadeAt.Year(); y < 0 || y > 9999 {
			t.Fatalf("made_at year %d in its own offset: RFC 3339 has four digits", y)
		}
		us := r.MadeAtMicros()
		if time.UnixMicro(us).After(r.MadeAt) || !time.UnixMicro(us+1).After(r.MadeAt) {
			t.Fatalf("MadeAtMicros %d is not the floor of %v", us, r.MadeAt)
		}

		// Round trip through the fields we keep.
		m := map[string]any{"size": r.Size, "made_at": r.MadeAt.Format(time.RFC3339Nano)}
		if r.Heartbeat {
			m["heartbeat"] = true
		}
		if r.ID != "" {
			m[s.IDField()] = r.ID
		}
		again, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("re-encoding %+v: %v", r, err)
		}
		r2, err := Parse(s, key, again)
		if err != nil {
			t.Fatalf("re-encoded %+v as %s, which Parse refuses: %v", r, again, err)
		}
		if !r2.MadeAt.Equal(r.MadeAt) {
			t.Fatalf("made_at changed in the round trip: %v -> %v", r.MadeAt, r2.MadeAt)
		}
		_, off1 := r.MadeAt.Zone()
		_, off2 := r2.MadeAt.Zone()
		if off1 != off2 {
			t.Fatalf("offset changed in the round trip: %d -> %d", off1, off2)
		}
		a, b := r, r2
		a.MadeAt, b.MadeAt = time.Time{}, time.Time{}
		if a != b {
			t.Fatalf("round trip changed the record:\n  %+v\n  %+v", a, b)
		}

		// The result sets' time form parses back to the same instant whenever
		// the UTC year has four digits (outside that, RFC 3339 has no form).
		if y := r.MadeAt.UTC().Year(); y >= 0 && y <= 9999 {
			back, err := ParseMadeAt(FormatTime(r.MadeAt))
			if err != nil || !back.Equal(r.MadeAt) {
				t.Fatalf("FormatTime(%v) = %q does not parse back: %v", r.MadeAt, FormatTime(r.MadeAt), err)
			}
		}
	})
}

// TestFuzzSeeds checks that the seed corpus says what its file names say: a
// file named valid_* holds a valid record, one named after a reason (with
// spaces as underscores) a record refused for that reason, and every reason
// has a seed.
func TestFuzzSeeds(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzParse")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	prefixes := map[string]Reason{
		"valid_":          "",
		"malformed_json_": ReasonMalformedJSON,
		"bad_made_at_":    ReasonBadMadeAt,
		"bad_size_":       ReasonBadSize,
		"size_not_key":    ReasonSizeNotKey,
		"bad_line_":       ReasonBadLine,
		"no_id_":          ReasonNoID,
	}
	covered := map[Reason]int{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) != 4 || lines[0] != "go test fuzz v1" {
			t.Fatalf("%s: not a 3-argument go test fuzz v1 file", e.Name())
		}
		boxes := lines[1] == "bool(true)"
		args := make([][]byte, 2)
		for i, l := range lines[2:] {
			q, ok := strings.CutPrefix(l, "[]byte(")
			q, ok2 := strings.CutSuffix(q, ")")
			s, err := strconv.Unquote(q)
			if !ok || !ok2 || err != nil {
				t.Fatalf("%s: line %q is not a []byte literal", e.Name(), l)
			}
			args[i] = []byte(s)
		}
		want, found := Reason("?"), false
		for p, r := range prefixes {
			if strings.HasPrefix(e.Name(), p) {
				want, found = r, true
			}
		}
		if !found {
			t.Errorf("%s: name says no reason", e.Name())
			continue
		}
		s := Toys
		if boxes {
			s = Boxes
		}
		_, err = Parse(s, args[0], args[1])
		if got := ReasonOf(err); got != want {
			t.Errorf("%s: reason %q, want %q", e.Name(), got, want)
		}
		covered[want]++
	}
	for _, r := range prefixes {
		if covered[r] == 0 {
			t.Errorf("no seed for reason %q", r)
		}
	}
}

// rfc3339Grammar is the regular expression the SQL engines check made_at
// with (internal/contractsql/sql/10_np_grammar.sql): RFC 3339 section 5.6
// with the field ranges. scanRFC3339 is held to it, so that Go and SQL agree on
// what a bad made_at is.
var rfc3339Grammar = func() *regexp.Regexp {
	text, err := os.ReadFile(filepath.Join("..", "contractsql", "sql", "10_np_grammar.sql"))
	if err != nil {
		panic(err)
	}
	m := regexp.MustCompile(`regexp_count\(made_at, '([^']*)'\)`).FindSubmatch(text)
	if m == nil {
		panic("10_np_grammar.sql: no regexp_count(made_at, '...')")
	}
	return regexp.MustCompile(string(m[1]))
}()

// isRFC3339 reports whether scanRFC3339 accepts s.
func isRFC3339(s string) bool {
	_, ok := scanRFC3339(s)
	return ok
}

func TestIsRFC3339(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{"2026-12-24T10:00:00Z", true},
		{"2026-12-24t10:00:00z", true},
		{"2026-12-24T10:00:00.5Z", true},
		{"2026-12-24T10:00:00.123456789+01:00", true},
		{"0000-01-01T00:00:00-23:59", true},
		{"9999-12-31T23:59:59+00:00", true},
		{"2026-02-30T10:00:00Z", true}, // the grammar's; time.Parse refuses the date
		{"", false},
		{"2026-12-24T10:00:00", false},          // no offset
		{"2026-12-24 10:00:00Z", false},         // space
		{"2026-12-24T10:00:00.Z", false},        // a point without digits
		{"2026-12-24T10:00:00,5Z", false},       // comma as the decimal mark
		{"2026-12-24T1:00:00Z", false},          // one-digit hour
		{"2026-00-24T10:00:00Z", false},         // month 00
		{"2026-13-24T10:00:00Z", false},         // month 13
		{"2026-12-00T10:00:00Z", false},         // day 00
		{"2026-12-32T10:00:00Z", false},         // day 32
		{"2026-12-24T24:00:00Z", false},         // hour 24
		{"2026-12-24T10:60:00Z", false},         // minute 60
		{"2026-12-24T10:00:60Z", false},         // a leap second
		{"2026-12-24T10:00:00+24:00", false},    // offset hour 24
		{"2026-12-24T10:00:00+01:60", false},    // offset minute 60
		{"2026-12-24T10:00:00+0100", false},     // offset without a colon
		{"2026-12-24T10:00:00Z\n", false},       // anything after the offset
		{"2026-12-24T10:00:00+01:00:00", false}, // a longer offset
		{"+2026-12-24T10:00:00Z", false},        // a sign before the year
		{"12026-12-24T10:00:00Z", false},        // five-digit year
		{"2026-1a-24T10:00:00Z", false},         // a letter in a field
		{"２026-12-24T10:00:00Z", false},         // a digit that is not ASCII
		{"2026-12-24T10:00:00.１Z", false},       // the same in the fraction
		{"2026-12-24T10:00:00.000000000000001Z", true},
	} {
		if got := isRFC3339(tc.s); got != tc.want {
			t.Errorf("isRFC3339(%q) = %v, want %v", tc.s, got, tc.want)
		}
		if got := rfc3339Grammar.MatchString(tc.s); got != tc.want {
			t.Errorf("the grammar's expression says %v for %q, the table %v", got, tc.s, tc.want)
		}
	}
}

// FuzzIsRFC3339: isRFC3339 accepts exactly what the grammar's regular
// expression accepts. Run with
//
//	go test -fuzz=FuzzIsRFC3339 -fuzztime=60s ./internal/record
func FuzzIsRFC3339(f *testing.F) {
	for _, s := range []string{"2026-12-24T10:00:00Z", "2026-12-24t10:00:00.5-01:30", "2026-12-24T10:00:00.Z", "2026-19-39T29:69:69+29:69", "2026-12-24T10:00:00+01:00x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isRFC3339(s), rfc3339Grammar.MatchString(s); got != want {
			t.Fatalf("isRFC3339(%q) = %v, the grammar says %v", s, got, want)
		}
	})
}

// FuzzParseMadeAt: on whatever the grammar accepts, parseMadeAt agrees with
// time.Parse (given the string upper-cased, as RFC 3339's t and z are Go's T
// and Z): both refuse it (a day its month does not have), or both give the
// same instant in the same offset. It refuses whatever the grammar refuses,
// and says the same of a string as of its bytes. Run with
//
//	go test -fuzz=FuzzParseMadeAt -fuzztime=60s ./internal/record
func FuzzParseMadeAt(f *testing.F) {
	for _, s := range []string{
		"2026-12-24T10:00:00Z", "2026-12-24t10:00:00.5z", "2026-12-24T04:30:00-05:30", "2026-12-24T10:00:00+00:00",
		"2026-12-24T10:00:00-00:00", "2026-12-24T10:00:00.123456789+14:00", "2026-12-24T10:00:00.1234567899Z",
		"2026-12-24T10:00:00.000000000000001Z", "0000-01-01T00:00:00+23:59", "9999-12-31T23:59:59.999999999-23:59",
		"2024-02-29T00:00:00Z", "2026-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "2000-02-29T00:00:00Z",
		"0000-02-29T00:00:00Z", "2026-04-31T00:00:00Z", "2026-12-31T23:59:60Z", "2026-12-24T10:00:00,5Z",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseMadeAt(s)
		if b, errb := parseMadeAt([]byte(s)); !b.Equal(got) || fmt.Sprint(errb) != fmt.Sprint(err) {
			t.Fatalf("%q as bytes: %v, %v; as a string: %v, %v", s, b, errb, got, err)
		}
		if !rfc3339Grammar.MatchString(s) {
			if err == nil {
				t.Fatalf("parseMadeAt(%q) = %v, but the grammar refuses it", s, got)
			}
			return
		}
		want, werr := time.Parse(time.RFC3339Nano, strings.ToUpper(s))
		if (err == nil) != (werr == nil) {
			t.Fatalf("parseMadeAt(%q): %v, %v; time.Parse: %v, %v", s, got, err, want, werr)
		}
		if err != nil {
			return
		}
		_, off := got.Zone()
		_, wantOff := want.Zone()
		if !got.Equal(want) || off != wantOff {
			t.Fatalf("parseMadeAt(%q) = %v, time.Parse %v", s, got, want)
		}
	})
}

// withoutTime is r with a zero MadeAt, which == can compare.
func (r Record) withoutTime() Record {
	r.MadeAt = time.Time{}
	return r
}

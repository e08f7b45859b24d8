package record

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// BenchmarkParse is the validity rule on the records the elves write, the
// first thing the packer does with every input record.
func BenchmarkParse(b *testing.B) {
	toy := []byte(`{"toy_id":"toy-e1-000123","kind":"teddy bear","size":"M","elf":"elf-1","made_at":"2026-12-24T10:00:01.234567Z"}`)
	hb := []byte(`{"heartbeat":true,"size":"M","made_at":"2026-12-24T10:00:01Z"}`)
	key := []byte("M")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		v := toy
		if i%16 == 0 {
			v = hb
		}
		if _, err := Parse(Toys, key, v); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzJSONString: JSONString reads a raw JSON value exactly as
// encoding/json reads it into a string, fast path or not.
func FuzzJSONString(f *testing.F) {
	for _, s := range []string{`"abc"`, `"a\"b"`, `"\u00e9"`, `""`, `"`, `"a`, `a"`, `1`, `null`, `"tab	"`, "\"\xff\"", `"a"b"`, `"é"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := JSONString(raw)
		var want string
		err := json.Unmarshal(raw, &want)
		wantOK := err == nil && len(raw) > 0 && raw[0] == '"'
		if ok != wantOK || (ok && got != want) {
			t.Fatalf("JSONString(%q) = %q, %v; encoding/json says %q, %v (%v)", raw, got, ok, want, wantOK, err)
		}
	})
}

// FuzzObject: Object accepts exactly the texts that encoding/json decodes
// into a map (one JSON object, UTF-8), with the same members: names
// unescaped as encoding/json does, the last duplicate winning, each value's
// text byte for byte.
func FuzzObject(f *testing.F) {
	for _, s := range []string{`{}`, ` {"a":1} `, `{"a":1}{}`, `[]`, `null`, `{"a":}`, "\xef\xbb\xbf{}", `{"a":"\u0000"}`, "{\"a\":\"\xff\"}", ``,
		`{"a":1,"a":2}`, `{"a\u0062":[1,{"c":null}],"ab":true}`, `{"\ud800":"\udc00x"}`, `{"a":"\ud83d\ude00"}`, `{"a":1} x`, `{"a":1}  `,
		`{"a" : 1 , "b":-0.5e+3}`, `{"a":01}`, `{"a":"\x"}`, `{,}`, `{"a":1,}`, "{\"a\":\"\t\"}", `{"":""}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		fields, why := Object(value)
		var want map[string]json.RawMessage
		isObject := utf8.Valid(value) && json.Unmarshal(value, &want) == nil && want != nil
		if (fields != nil) != isObject {
			t.Fatalf("Object(%q) = %v, %q; encoding/json says object: %v", value, fields, why, isObject)
		}
		if fields == nil {
			if why == "" {
				t.Fatalf("Object(%q) refused without a reason", value)
			}
			return
		}
		if len(fields) != len(want) {
			t.Fatalf("Object(%q) has %d members, encoding/json %d", value, len(fields), len(want))
		}
		for k, v := range want {
			if got, ok := fields[k]; !ok || string(got) != string(v) {
				t.Fatalf("Object(%q)[%q] = %q (%v), encoding/json %q", value, k, got, ok, v)
			}
		}
	})
}

// TestObjectNesting: encoding/json refuses values nested deeper than 10,000
// levels; so must Object.
func TestObjectNesting(t *testing.T) {
	for _, depth := range []int{9_999, 10_000, 10_001, 20_000} {
		v := []byte(`{"a":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}`)
		var m map[string]json.RawMessage
		want := json.Unmarshal(v, &m) == nil
		if fields, _ := Object(v); (fields != nil) != want {
			t.Errorf("depth %d: Object accepts %v, encoding/json %v", depth, fields != nil, want)
		}
	}
}

// TestParseReadsLastDuplicate: Parse reads the members Object returns.
func TestParseReadsLastDuplicate(t *testing.T) {
	r, err := Parse(Toys, []byte("M"), []byte(`{"size":"S","toy_id":"a","size":"M","made_at":"x","made_at":"2026-12-24T00:00:00Z","toy_id":"b","heartbeat":true,"heartbeat":false}`))
	if err != nil || r.Size != "M" || r.ID != "b" || r.Heartbeat {
		t.Fatalf("Parse = %+v, %v; want size M, id b, not a heartbeat", r, err)
	}
	if _, err := Parse(Toys, []byte("M"), []byte(`{"size":"M","made_at":"2026-12-24T00:00:00Z","toy_\u0069d":"a"}`)); err != nil {
		t.Fatalf("escaped member name: %v", err)
	}
}

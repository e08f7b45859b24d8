package record

import (
	"encoding/json"
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

// FuzzObject: Object accepts exactly the UTF-8 texts holding one JSON object.
func FuzzObject(f *testing.F) {
	for _, s := range []string{`{}`, ` {"a":1} `, `{"a":1}{}`, `[]`, `null`, `{"a":}`, "\xef\xbb\xbf{}", `{"a":"\u0000"}`, "{\"a\":\"\xff\"}", ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		fields, why := Object(value)
		var probe any
		isObject := json.Unmarshal(value, &probe) == nil
		if isObject {
			_, isObject = probe.(map[string]any)
		}
		want := isObject && json.Valid(value)
		if want && !utf8.Valid(value) {
			want = false
		}
		if (fields != nil) != want {
			t.Fatalf("Object(%q) = %v, %q; want object: %v", value, fields, why, want)
		}
		if fields == nil && why == "" {
			t.Fatalf("Object(%q) refused without a reason", value)
		}
	})
}

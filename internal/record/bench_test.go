package record

import (
	"encoding/json"
	"regexp"
	"testing"
)

// BenchmarkParse is the validity rule on the records the elves write, the
// first thing the packer does with every input record, with the key as
// bytes and as the string the packer has (goka's).
func BenchmarkParse(b *testing.B) {
	toy := []byte(`{"toy_id":"toy-e1-000123","kind":"teddy bear","size":"M","elf":"elf-1","made_at":"2026-12-24T10:00:01.234567Z"}`)
	hb := []byte(`{"heartbeat":true,"size":"M","made_at":"2026-12-24T10:00:01Z"}`)
	for _, key := range []string{"M", "M/hall-07"} {
		b.Run("bytes/"+key, func(b *testing.B) { benchmarkParse(b, []byte(key), toy, hb) })
		b.Run("string/"+key, func(b *testing.B) { benchmarkParse(b, key, toy, hb) })
	}
}

func benchmarkParse[K string | []byte](b *testing.B, key K, toy, hb []byte) {
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

// FuzzObject: Object accepts exactly the texts that strictObject, the
// contract's rules written out plainly, accepts, with the same members:
// names unescaped, the last duplicate winning, each value's text byte for
// byte. What it accepts, encoding/json reads the same way.
func FuzzObject(f *testing.F) {
	for _, s := range []string{`{}`, ` {"a":1} `, `{"a":1}{}`, `[]`, `null`, `{"a":}`, "\xef\xbb\xbf{}", `{"a":"\u0000"}`, "{\"a\":\"\xff\"}", ``,
		`{"a":1,"a":2}`, `{"a\u0062":[1,{"c":null}],"ab":true}`, `{"\ud800":"\udc00x"}`, `{"a":"\ud83d\ude00"}`, `{"a":1} x`, `{"a":1}  `,
		`{"a" : 1 , "b":-0.5e+3}`, `{"a":01}`, `{"a":"\x"}`, `{,}`, `{"a":1,}`, "{\"a\":\"\t\"}", `{"":""}`} {
		f.Add([]byte(s))
	}
	for _, c := range strictCases() {
		f.Add([]byte(c.value))
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		fields, why := Object(value)
		members, ok := strictObject(value)
		if (fields != nil) != ok {
			t.Fatalf("Object(%q) = %v, %q; the contract's rules say object: %v", value, fields, why, ok)
		}
		if fields == nil {
			if why == "" {
				t.Fatalf("Object(%q) refused without a reason", value)
			}
			return
		}
		want := map[string]string{}
		for _, m := range members {
			want[m[0]] = m[1]
		}
		var std map[string]json.RawMessage
		if err := json.Unmarshal(value, &std); err != nil || len(std) != len(want) {
			t.Fatalf("Object(%q) accepted what encoding/json reads otherwise: %v, %d members", value, err, len(std))
		}
		if len(fields) != len(want) {
			t.Fatalf("Object(%q) has %d members, the rules %d", value, len(fields), len(want))
		}
		for k, v := range want {
			if got, ok := fields[k]; !ok || string(got) != v || string(std[k]) != v {
				t.Fatalf("Object(%q)[%q] = %q (%v), the rules %q, encoding/json %q", value, k, got, ok, v, std[k])
			}
		}
	})
}

// FuzzFiniteNumber: finiteNumber decides as the exact rule does on every
// JSON number, a search space FuzzObject reaches only slowly.
func FuzzFiniteNumber(f *testing.F) {
	for _, c := range finiteCases {
		f.Add([]byte(c.num))
	}
	f.Fuzz(func(t *testing.T, num []byte) {
		if !numberGrammar.Match(num) {
			return
		}
		p := &strictParser{s: num}
		if got, want := finiteNumber(num), p.number(); got != want || p.i != len(num) {
			t.Fatalf("finiteNumber(%q) = %v, exactly: %v", num, got, want)
		}
	})
}

// numberGrammar is RFC 8259's number, whatever its magnitude.
var numberGrammar = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

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

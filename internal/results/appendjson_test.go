package results

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestAppendJSONAsEncodingJSON: every row's AppendJSON is the JSON that
// encoding/json writes for it: the same members (a zero cut absent), the
// same values once decoded, whatever its strings hold (quotes, escapes,
// control characters, HTML's specials, any Unicode, invalid UTF-8), and
// a valid JSON object alone, appended after what b held.
func TestAppendJSONAsEncodingJSON(t *testing.T) {
	texts := []string{"", "t-1", `a"b`, `back\slash`, "tab\tnew\nline\x00nul\x1f", "<b>&amp;</b>", "élève", "日本", "😀",
		"\u2028\u2029", "bad\xffutf8", "\xc3", "S", "XL/hall-7", "2026-12-24T10:00:00.000001Z"}
	rng := rand.New(rand.NewPCG(1, 2))
	text := func() string { return texts[rng.IntN(len(texts))] }
	cut := func() Cut {
		if rng.IntN(2) == 0 {
			return Cut{}
		}
		return Cut{Bytes: rng.IntN(1 << 21), SHA256: text()}
	}
	for range 2000 {
		rows := []interface{ AppendJSON([]byte) []byte }{
			&Packed{ToyID: text(), BoxID: text(), Line: text(), Size: text(), WindowStart: text(), ToyIDCut: cut(), BoxIDCut: cut()},
			&Unpacked{ToyID: text(), Line: text(), Size: text(), WindowStart: text(), ToyIDCut: cut()},
			&Spare{BoxID: text(), Line: text(), Size: text(), WindowStart: text(), BoxIDCut: cut()},
			&Late{Stream: text(), Partition: rng.Int32() - 1<<30, Offset: rng.Int64() - 1<<62, ID: text(), Line: text(), Size: text(), MadeAt: text(), IDCut: cut()},
		}
		for _, r := range rows {
			want, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			b := r.AppendJSON([]byte("prefix"))
			if string(b[:6]) != "prefix" {
				t.Fatalf("%T: AppendJSON overwrote what b held: %q", r, b)
			}
			got := b[6:]
			if !json.Valid(got) {
				t.Fatalf("%T %+v: AppendJSON wrote invalid JSON %q", r, r, got)
			}
			var g, w map[string]any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(want, &w); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(g, w) {
				t.Fatalf("%T:\n AppendJSON %s\nencoding/json %s", r, got, want)
			}
		}
	}
}

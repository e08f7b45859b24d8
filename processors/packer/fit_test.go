package packer

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
)

// runes that encoding/json writes in 1, 2, 3, 4 or 6 bytes.
var jsonRunes = []rune{'a', '"', '\\', '\n', '\t', 0x01, 0x1f, '<', '>', '&', 'é', '€', '\u2028', '\u2029', '😀', utf8.RuneError}

func randomText(rng *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		b.WriteRune(jsonRunes[rng.IntN(len(jsonRunes))])
	}
	return b.String()
}

func FuzzJSONLen(f *testing.F) {
	for _, s := range []string{"", "a", "<\u2028\x01", "\xff\xfe", "é😀"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, _ := json.Marshal(s)
		if got := jsonLen(s) + 2; got != len(b) {
			t.Fatalf("jsonLen(%q) = %d, encoding/json writes %d bytes (with quotes: %d)", s, got-2, len(b)-2, len(b))
		}
		for _, n := range []int{0, 1, 5, len(s)} {
			p := prefixJSON(s, n)
			if !strings.HasPrefix(s, p) || jsonLen(p) > n {
				t.Fatalf("prefixJSON(%q, %d) = %q", s, n, p)
			}
			if len(p) < len(s) {
				// The next rune would not fit: the prefix is the longest.
				_, w := utf8.DecodeRuneInString(s[len(p):])
				if jsonLen(s[:len(p)+w]) <= n {
					t.Fatalf("prefixJSON(%q, %d) = %q stops early", s, n, p)
				}
			}
		}
	})
}

func TestShares(t *testing.T) {
	for _, c := range []struct {
		room       int
		need, want []int
	}{
		{10, []int{3, 4}, []int{3, 4}},
		{10, []int{3, 40}, []int{3, 7}},
		{10, []int{30, 40}, []int{5, 5}},
		{10, []int{}, []int{}},
		{-5, []int{3}, []int{0}},
		{12, []int{2, 9, 9}, []int{2, 5, 5}},
	} {
		got := shares(c.room, c.need)
		if len(got) != len(c.want) {
			t.Fatalf("shares(%d, %v) = %v, want %v", c.room, c.need, got, c.want)
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Fatalf("shares(%d, %v) = %v, want %v", c.room, c.need, got, c.want)
			}
		}
	}
}

// TestCarryID: a long id travels as its start with the whole one's length
// and digest; it is keyed like the whole id would be; short ids travel as
// they are.
func TestCarryID(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, id := range []string{"t-1", strings.Repeat("é", 5000), randomText(rng, 3000), strings.Repeat("x", keyIDMax+1)} {
		got := carryID(id, 1000)
		if len(id) <= 1000 {
			if got != id {
				t.Fatalf("carryID of a %d-byte id changed it", len(id))
			}
			continue
		}
		if len(got) > 1000 {
			t.Fatalf("carried id of %d bytes for a limit of 1000", len(got))
		}
		text, c := splitID(got)
		if !strings.HasPrefix(id, text) || !utf8.ValidString(text) || c != results.CutOf([]byte(id)) {
			t.Fatalf("carried id splits into %q, %v", text, c)
		}
		k1, whole1 := keyID(id)
		k2, whole2 := keyID(got)
		if k1 != k2 || whole1 || whole2 {
			t.Fatalf("keyID: whole id %q (%v), carried %q (%v)", k1, whole1, k2, whole2)
		}
	}
	if k, whole := keyID("short"); k != "short" || !whole {
		t.Fatalf("keyID(short) = %q, %v", k, whole)
	}
}

// TestRowsFitInARecord: result rows and dead letters of the longest inputs
// the broker takes, of every kind that inflates when written (JSON escapes,
// base64), fit in one record once encoded, and each cut field says how long
// its whole value was and what its digest is.
func TestRowsFitInARecord(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, lim := range []limits{defaultLimits(), {record: minRecordBytes}} {
		p := &Packer{lim: lim, cfg: DefaultConfig()}
		big := lim.record
		ids := map[string]string{
			"letters":  strings.Repeat("a", big),
			"html":     strings.Repeat("<", big),
			"controls": strings.Repeat("\x01", big),
			"u2028":    strings.Repeat("\u2028", big/3),
			"mixed":    randomText(rng, big/3),
			"short":    "b-1",
		}
		for name, whole := range ids {
			id := carryID(whole, lim.idMax())
			// The window whose start takes the most digits, so the most key bytes.
			slot := &slotState{Line: "XL", Window: math.MinInt64, Toy: id, Box: id, Closed: true}
			ws := record.FormatMicros(0)
			check := func(row string, key string, v any, fields map[string]results.Cut, texts map[string]string) {
				t.Helper()
				// As the packer writes it, and as encoding/json would, which
				// escapes more.
				a, ok := v.(jsonAppender)
				if !ok {
					t.Fatalf("%s row %T does not append its JSON", row, v)
				}
				b, err := json.Marshal(v)
				if err != nil {
					t.Fatal(err)
				}
				for _, b := range [][]byte{a.AppendJSON(nil), b} {
					if n := len(key) + len(b); n > lim.room() {
						t.Errorf("limit %d, %s id: %s row takes %d bytes, room %d", lim.record, name, row, n, lim.room())
					}
				}
				for f, c := range fields {
					text := texts[f]
					if c.IsZero() {
						if text != whole {
							t.Errorf("%s id: %s.%s not whole and not marked cut", name, row, f)
						}
						continue
					}
					if c != results.CutOf([]byte(whole)) || !strings.HasPrefix(whole, text) {
						t.Errorf("%s id: %s.%s cut wrongly: %v, %d bytes kept", name, row, f, c, len(text))
					}
				}
			}
			toyKey, boxKey := itemKey(slot.Line, slot.Window, slot.Toy), itemKey(slot.Line, slot.Window, slot.Box)
			pr := p.packedRow(slot, ws, toyKey)
			check("packed", toyKey, pr, map[string]results.Cut{"toy": pr.ToyIDCut, "box": pr.BoxIDCut},
				map[string]string{"toy": pr.ToyID, "box": pr.BoxID})
			ur := p.unpackedRow(slot, ws, toyKey)
			check("unpacked", toyKey, ur, map[string]results.Cut{"toy": ur.ToyIDCut}, map[string]string{"toy": ur.ToyID})
			sr := p.spareRow(slot, ws, boxKey)
			check("spare", boxKey, sr, map[string]results.Cut{"box": sr.BoxIDCut}, map[string]string{"box": sr.BoxID})
			// The longest topic name Kafka allows, and the widest position.
			o := &validRecord{Stream: record.Toys, Partition: math.MaxInt32, Offset: math.MaxInt64, Line: "XL", ID: id, MadeUS: -1, MadeNS: 999}
			lk := lateKey(strings.Repeat("t", 249), o.Partition, o.Offset)
			lr := p.lateRow(o, lk)
			check("late", lk, lr, map[string]results.Cut{"id": lr.IDCut}, map[string]string{"id": lr.ID})

			// The same text as a dead letter's key and value, and as bytes
			// that are not UTF-8 (base64 in the dead letter).
			for _, raw := range [][]byte{[]byte(whole), append([]byte{0xff}, whole[:len(whole)-1]...)} {
				dl := newDeadLetter(record.Boxes, strings.Repeat("t", 249), 3, 1<<40, raw, raw)
				p.fitDead(dl, deadKey(dl.Topic, dl.Partition, dl.Offset))
				b, _ := json.Marshal(dl)
				if n := len(deadKey(dl.Topic, dl.Partition, dl.Offset)) + len(b); n > lim.room() {
					t.Errorf("limit %d, %s: dead letter takes %d bytes, room %d", lim.record, name, n, lim.room())
				}
				if kept := dl.rawValue(); !strings.HasPrefix(string(raw), string(kept)) ||
					(len(kept) < len(raw)) != !dl.ValueCut.IsZero() ||
					(!dl.ValueCut.IsZero() && dl.ValueCut != results.CutOf(raw)) {
					t.Errorf("%s: dead letter value kept %d of %d bytes, cut %v", name, len(kept), len(raw), dl.ValueCut)
				}
				if !dl.ValueCut.IsZero() && !strings.Contains(dl.Detail, "cut") {
					t.Errorf("%s: a cut dead letter's detail does not say so: %q", name, dl.Detail)
				}
			}
		}
	}
}

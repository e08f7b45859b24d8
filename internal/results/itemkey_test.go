package results

import "testing"

// TestItemKey: String and ParseItemKey are each other's inverse on keys,
// and ParseItemKey refuses what String never makes.
func TestItemKey(t *testing.T) {
	for _, k := range []ItemKey{
		{Line: "M", Window: 1798070400000000, ID: "toy-1"},
		{Line: "M/hall-7", Window: -10000000, ID: "a|b#c"},
		{Line: "XL", Window: 0, ID: "0f3a", Digest: true},
	} {
		got, ok := ParseItemKey(k.String())
		if !ok || got != k {
			t.Errorf("%q: parsed %+v, %v; want %+v", k.String(), got, ok, k)
		}
	}
	for _, s := range []string{"", "M", "M|", "M|10", "M|10|", "M|010|a", "M|+10|a", "M|1e3|a", "|10|a", "M|x|a"} {
		if k, ok := ParseItemKey(s); ok {
			t.Errorf("%q parsed as %+v", s, k)
		}
	}
}

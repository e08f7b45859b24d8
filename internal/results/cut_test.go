package results

import (
	"strings"
	"testing"
)

// TestCompareMatchesCutIDs: a row whose id was cut equals the other side's
// row with the whole id exactly when length and digest agree; the caller's
// rows are not changed.
func TestCompareMatchesCutIDs(t *testing.T) {
	whole := strings.Repeat("<", 1000)
	other := strings.Repeat("<", 999) + ">" // same length, another id
	cut := func(id string) Packed {
		return Packed{ToyID: id[:10], ToyIDCut: CutOf([]byte(id)), BoxID: "b", Size: "M", WindowStart: "w"}
	}
	ref := func(id string) Set {
		return Set{Packed: []Packed{{ToyID: id, BoxID: "b", Size: "M", WindowStart: "w"}}}
	}
	for _, c := range []struct {
		name  string
		goka  Set
		ref   Set
		equal bool
	}{
		{"cut matches whole", Set{Packed: []Packed{cut(whole)}}, ref(whole), true},
		{"same length, other id", Set{Packed: []Packed{cut(whole)}}, ref(other), false},
		{"whole on both sides", ref(whole), ref(whole), true},
		{"late row", Set{Late: []Late{{Stream: "toys", Partition: 1, Offset: 4, ID: whole[:5], IDCut: CutOf([]byte(whole)), Size: "M", MadeAt: "t"}}},
			Set{Late: []Late{{Stream: "toys", Partition: 1, Offset: 4, ID: whole, Size: "M", MadeAt: "t"}}}, true},
		{"late row, same id at another offset", Set{Late: []Late{{Stream: "toys", Partition: 1, Offset: 4, ID: whole[:5], IDCut: CutOf([]byte(whole)), Size: "M", MadeAt: "t"}}},
			Set{Late: []Late{{Stream: "toys", Partition: 1, Offset: 5, ID: whole, Size: "M", MadeAt: "t"}}}, false},
	} {
		before := c.ref.Packed
		d := Compare(c.goka, c.ref)
		if (len(d) == 0) != c.equal {
			t.Errorf("%s: differences %+v, want equal=%v", c.name, d, c.equal)
		}
		if d2 := Compare(c.ref, c.goka); (len(d2) == 0) != c.equal {
			t.Errorf("%s, sides swapped: differences %+v", c.name, d2)
		}
		if len(before) > 0 && before[0].ToyID != c.ref.Packed[0].ToyID {
			t.Errorf("%s: Compare changed the caller's rows", c.name)
		}
	}
}

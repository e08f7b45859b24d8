package results

import (
	"strings"
	"testing"
)

// TestCompareNamesRowsByTheirJSON: every row Compare reports is given as
// the JSON of the row itself (the result topics' format), in every set and
// on both sides; a dead row with its reason.
func TestCompareNamesRowsByTheirJSON(t *testing.T) {
	goka := Set{
		Packed:   []Packed{{ToyID: "t1", BoxID: "b1", Line: "M", Size: "M", WindowStart: "2026-12-24T10:00:00Z"}},
		Unpacked: []Unpacked{{ToyID: "t2", Line: "S/hall-7", Size: "S", WindowStart: "2026-12-24T10:00:00Z"}},
		Dead:     []Dead{{Stream: "toys", Partition: 1, Offset: 7, Reason: "no id"}},
	}
	ref := Set{
		Packed: []Packed{{ToyID: "t1", BoxID: "b2", Line: "M", Size: "M", WindowStart: "2026-12-24T10:00:00Z"}},
		Spare:  []Spare{{BoxID: "b3", Line: "L/h", Size: "L", WindowStart: "2026-12-24T10:00:10Z"}},
		Late:   []Late{{Stream: "boxes", Partition: 3, Offset: 12, ID: "b4", Line: "XL", Size: "XL", MadeAt: "2026-12-24T09:00:00Z"}},
		Dead:   []Dead{{Stream: "boxes", Partition: 0, Offset: 3, Reason: "duplicate"}},
	}
	var got []string
	for _, d := range Compare(goka, ref) {
		for _, row := range d.OnlyA {
			got = append(got, d.Set+" goka "+row)
		}
		for _, row := range d.OnlyB {
			got = append(got, d.Set+" reference "+row)
		}
	}
	want := []string{
		`packed goka {"toy_id":"t1","box_id":"b1","line":"M","size":"M","window_start":"2026-12-24T10:00:00Z"}`,
		`packed reference {"toy_id":"t1","box_id":"b2","line":"M","size":"M","window_start":"2026-12-24T10:00:00Z"}`,
		`unpacked goka {"toy_id":"t2","line":"S/hall-7","size":"S","window_start":"2026-12-24T10:00:00Z"}`,
		`spare reference {"box_id":"b3","line":"L/h","size":"L","window_start":"2026-12-24T10:00:10Z"}`,
		`late reference {"stream":"boxes","partition":3,"offset":12,"id":"b4","line":"XL","size":"XL","made_at":"2026-12-24T09:00:00Z"}`,
		`dead goka {"stream":"toys","partition":1,"offset":7,"reason":"no id"}`,
		`dead reference {"stream":"boxes","partition":0,"offset":3,"reason":"duplicate"}`,
	}
	if g, w := strings.Join(got, "\n"), strings.Join(want, "\n"); g != w {
		t.Errorf("Compare:\n%s\nwant:\n%s", g, w)
	}
}

// TestRowsAreIdentifiedByLine: rows of packed, unpacked and spare are
// identified by line, window and id together, and late rows carry their
// line: the same ids in the same window of another line of the same size are
// other rows, and sorting keeps a line's rows together, by size first.
func TestRowsAreIdentifiedByLine(t *testing.T) {
	const w = "2026-12-24T10:00:00Z"
	a := Set{
		Packed:   []Packed{{ToyID: "t", BoxID: "b", Line: "M/h1", Size: "M", WindowStart: w}},
		Unpacked: []Unpacked{{ToyID: "u", Line: "M/h1", Size: "M", WindowStart: w}},
		Spare:    []Spare{{BoxID: "s", Line: "M", Size: "M", WindowStart: w}},
		Late:     []Late{{Stream: "toys", Partition: 2, Offset: 3, ID: "l", Line: "M/h1", Size: "M", MadeAt: w}},
	}
	b := Set{
		Packed:   []Packed{{ToyID: "t", BoxID: "b", Line: "M/h2", Size: "M", WindowStart: w}},
		Unpacked: []Unpacked{{ToyID: "u", Line: "M", Size: "M", WindowStart: w}},
		Spare:    []Spare{{BoxID: "s", Line: "M/h1", Size: "M", WindowStart: w}},
		Late:     []Late{{Stream: "toys", Partition: 2, Offset: 3, ID: "l", Line: "M/h2", Size: "M", MadeAt: w}},
	}
	var sets []string
	for _, d := range Compare(a, b) {
		if len(d.OnlyA) != 1 || len(d.OnlyB) != 1 {
			t.Errorf("%s: %d rows only in a, %d only in b, want one each", d.Set, len(d.OnlyA), len(d.OnlyB))
		}
		sets = append(sets, d.Set)
	}
	if got := strings.Join(sets, " "); got != "packed unpacked spare late" {
		t.Errorf("sets that differ: %q, want every set but dead", got)
	}

	s := Set{Packed: []Packed{
		{ToyID: "a", BoxID: "b", Line: "S", Size: "S", WindowStart: w},
		{ToyID: "a", BoxID: "b", Line: "M/h2", Size: "M", WindowStart: w},
		{ToyID: "z", BoxID: "b", Line: "M", Size: "M", WindowStart: "2026-12-24T10:00:10Z"},
		{ToyID: "a", BoxID: "b", Line: "M/h1", Size: "M", WindowStart: w},
		{ToyID: "b", BoxID: "b", Line: "M", Size: "M", WindowStart: w},
	}}
	s.Sort()
	var got []string
	for _, r := range s.Packed {
		got = append(got, r.Line+" "+r.WindowStart[17:19]+" "+r.ToyID)
	}
	want := []string{"M 00 b", "M 10 z", "M/h1 00 a", "M/h2 00 a", "S 00 a"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("sorted: %q, want %q", got, want)
	}
	for _, r := range a.Rows("packed") {
		if r.Line != "M/h1" || r.Size != "M" {
			t.Errorf("Rows: line %q size %q", r.Line, r.Size)
		}
	}
}

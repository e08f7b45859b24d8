package results

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestSortLateByPosition: late rows are in (stream, partition, offset)
// order, whatever their ids and made_at; two late copies of one id stay two
// rows.
func TestSortLateByPosition(t *testing.T) {
	s := Set{Late: []Late{
		{Stream: "toys", Partition: 1, Offset: 9, ID: "a", Size: "M", MadeAt: "2026-12-24T10:00:01Z"},
		{Stream: "boxes", Partition: 2, Offset: 0, ID: "b", Size: "L", MadeAt: "2026-12-24T10:00:09Z"},
		{Stream: "toys", Partition: 1, Offset: 3, ID: "z", Size: "M", MadeAt: "2026-12-24T10:00:05Z"},
		{Stream: "toys", Partition: 0, Offset: 7, ID: "a", Size: "S", MadeAt: "2026-12-24T10:00:02Z"},
		{Stream: "toys", Partition: 1, Offset: 4, ID: "a", Size: "M", MadeAt: "2026-12-24T10:00:01Z"},
		{Stream: "boxes", Partition: 1, Offset: 5, ID: "c", Size: "M", MadeAt: "2026-12-24T10:00:00Z"},
	}}
	s.Sort()
	var got []string
	for _, l := range s.Late {
		got = append(got, fmt.Sprintf("%s/%d@%d %s", l.Stream, l.Partition, l.Offset, l.ID))
	}
	want := []string{"boxes/1@5 c", "boxes/2@0 b", "toys/0@7 a", "toys/1@3 z", "toys/1@4 a", "toys/1@9 a"}
	if !slices.Equal(got, want) {
		t.Errorf("sorted late rows %q, want %q", got, want)
	}
}

// TestCompareLateRowsByPosition: a late row is one record's row, so two
// late copies of one id are two rows, and a copy at another offset is
// another row: an engine that reports one of two copies, or the right id at
// the wrong offset, differs.
func TestCompareLateRowsByPosition(t *testing.T) {
	row := func(off int64) Late {
		return Late{Stream: "toys", Partition: 1, Offset: off, ID: "a", Line: "M/h1", Size: "M", MadeAt: "2026-12-24T10:00:01Z"}
	}
	two := Set{Late: []Late{row(2), row(3)}}
	for _, c := range []struct {
		name  string
		other Set
		diffs []string // the rows only in two, then only in other
	}{
		{"both copies", Set{Late: []Late{row(3), row(2)}}, nil},
		{"one copy", Set{Late: []Late{row(2)}}, []string{`+{"stream":"toys","partition":1,"offset":3,"id":"a","line":"M/h1","size":"M","made_at":"2026-12-24T10:00:01Z"}`}},
		{"one copy twice", Set{Late: []Late{row(2), row(2)}}, []string{
			`+{"stream":"toys","partition":1,"offset":3,"id":"a","line":"M/h1","size":"M","made_at":"2026-12-24T10:00:01Z"}`,
			`-{"stream":"toys","partition":1,"offset":2,"id":"a","line":"M/h1","size":"M","made_at":"2026-12-24T10:00:01Z"}`,
		}},
		{"another offset", Set{Late: []Late{row(2), row(4)}}, []string{
			`+{"stream":"toys","partition":1,"offset":3,"id":"a","line":"M/h1","size":"M","made_at":"2026-12-24T10:00:01Z"}`,
			`-{"stream":"toys","partition":1,"offset":4,"id":"a","line":"M/h1","size":"M","made_at":"2026-12-24T10:00:01Z"}`,
		}},
	} {
		var got []string
		for _, d := range Compare(two, c.other) {
			if d.Set != "late" {
				t.Errorf("%s: difference in %s", c.name, d.Set)
			}
			for _, r := range d.OnlyA {
				got = append(got, "+"+r)
			}
			for _, r := range d.OnlyB {
				got = append(got, "-"+r)
			}
		}
		if g, w := strings.Join(got, "\n"), strings.Join(c.diffs, "\n"); g != w {
			t.Errorf("%s: differences\n%s\nwant\n%s", c.name, g, w)
		}
	}
}

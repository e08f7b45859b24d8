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
		Packed:   []Packed{{ToyID: "t1", BoxID: "b1", Size: "M", WindowStart: "2026-12-24T10:00:00Z"}},
		Unpacked: []Unpacked{{ToyID: "t2", Size: "S", WindowStart: "2026-12-24T10:00:00Z"}},
		Dead:     []Dead{{Stream: "toys", Partition: 1, Offset: 7, Reason: "no id"}},
	}
	ref := Set{
		Packed: []Packed{{ToyID: "t1", BoxID: "b2", Size: "M", WindowStart: "2026-12-24T10:00:00Z"}},
		Spare:  []Spare{{BoxID: "b3", Size: "L", WindowStart: "2026-12-24T10:00:10Z"}},
		Late:   []Late{{Stream: "boxes", Partition: 3, Offset: 12, ID: "b4", Size: "XL", MadeAt: "2026-12-24T09:00:00Z"}},
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
		`packed goka {"toy_id":"t1","box_id":"b1","size":"M","window_start":"2026-12-24T10:00:00Z"}`,
		`packed reference {"toy_id":"t1","box_id":"b2","size":"M","window_start":"2026-12-24T10:00:00Z"}`,
		`unpacked goka {"toy_id":"t2","size":"S","window_start":"2026-12-24T10:00:00Z"}`,
		`spare reference {"box_id":"b3","size":"L","window_start":"2026-12-24T10:00:10Z"}`,
		`late reference {"stream":"boxes","partition":3,"offset":12,"id":"b4","size":"XL","made_at":"2026-12-24T09:00:00Z"}`,
		`dead goka {"stream":"toys","partition":1,"offset":7,"reason":"no id"}`,
		`dead reference {"stream":"boxes","partition":0,"offset":3,"reason":"duplicate"}`,
	}
	if g, w := strings.Join(got, "\n"), strings.Join(want, "\n"); g != w {
		t.Errorf("Compare:\n%s\nwant:\n%s", g, w)
	}
}

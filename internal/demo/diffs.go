package demo

import (
	"encoding/json"
	"fmt"

	"github.com/northpole-workshop/northpole/internal/results"
)

// RowDiff is one row only Goka or only the reference has, as its JSON (the
// result topics' format).
type RowDiff struct {
	Set    string
	OnlyIn string // "goka" or "reference"
	Row    json.RawMessage
}

// ReferenceRows are the rows of r.Reference, each as the JSON of the row it
// names, Goka's rows first, then the reference's, set by set.
// results.Compare names a row by its Go value (%+v; a dead row by its
// position), which is no format for people.
func (r Report) ReferenceRows() []RowDiff {
	var out []RowDiff
	for _, d := range r.Reference {
		for _, side := range []struct {
			name string
			set  results.Set
			rows []string
		}{{"goka", r.Run.Goka, d.OnlyA}, {"reference", r.ReferenceSet, d.OnlyB}} {
			byName := rowsByName(side.set, d.Set)
			for _, name := range side.rows {
				row, ok := byName[name]
				if !ok { // an id resolved against a cut one (results.Compare): only the name is left
					row, _ = json.Marshal(name)
				}
				out = append(out, RowDiff{Set: d.Set, OnlyIn: side.name, Row: row})
			}
		}
	}
	return out
}

// rowsByName indexes the rows of one set of s by the name results.Compare
// gives them.
func rowsByName(s results.Set, set string) map[string]json.RawMessage {
	m := map[string]json.RawMessage{}
	add := func(name string, row any) {
		b, err := json.Marshal(row)
		if err == nil {
			m[name] = b
		}
	}
	switch set {
	case "packed":
		for _, r := range s.Packed {
			add(fmt.Sprintf("%+v", r), r)
		}
	case "unpacked":
		for _, r := range s.Unpacked {
			add(fmt.Sprintf("%+v", r), r)
		}
	case "spare":
		for _, r := range s.Spare {
			add(fmt.Sprintf("%+v", r), r)
		}
	case "late":
		for _, r := range s.Late {
			add(fmt.Sprintf("%+v", r), r)
		}
	case "dead":
		for _, r := range s.Dead {
			add(fmt.Sprintf("{Stream:%s Partition:%d Offset:%d}", r.Stream, r.Partition, r.Offset), r)
		}
	}
	return m
}

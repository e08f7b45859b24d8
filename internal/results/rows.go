package results

import "fmt"

// SetNames are the five result sets in display order.
var SetNames = []string{"packed", "unpacked", "spare", "late", "dead"}

// Row is one row of a set with what rows are matched on: Key, its Go value
// (%+v, every field, its line and window included), which keeps every byte
// (JSON would make U+FFFD of bytes that are not UTF-8, so two ids could
// match); a dead row's is its position only, as the contract says. Line and
// Size are empty for a dead row: it has no trusted line.
type Row struct {
	Key, Line, Size string
	Value           any
}

// Rows are the rows of the set named (one of SetNames) with their keys.
func (s *Set) Rows(set string) []Row {
	var out []Row
	switch set {
	case "packed":
		for _, r := range s.Packed {
			out = append(out, Row{fmt.Sprintf("%+v", r), r.Line, r.Size, r})
		}
	case "unpacked":
		for _, r := range s.Unpacked {
			out = append(out, Row{fmt.Sprintf("%+v", r), r.Line, r.Size, r})
		}
	case "spare":
		for _, r := range s.Spare {
			out = append(out, Row{fmt.Sprintf("%+v", r), r.Line, r.Size, r})
		}
	case "late":
		for _, r := range s.Late {
			out = append(out, Row{fmt.Sprintf("%+v", r), r.Line, r.Size, r})
		}
	case "dead":
		for _, r := range s.Dead {
			out = append(out, Row{fmt.Sprintf("%s/%d@%d", r.Stream, r.Partition, r.Offset), "", "", r})
		}
	}
	return out
}

// Matched returns a and b with each id that one side had to cut (see Cut)
// written as that side has it in the other's rows, where the other's whole
// id has the cut's length and digest: compared by Key, the rows are then
// equal exactly when the whole ids are. The callers' rows are not touched.
func Matched(a, b Set) (Set, Set) {
	resolveCuts(a, &b)
	resolveCuts(b, &a)
	return a, b
}

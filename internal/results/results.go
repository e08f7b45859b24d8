// Package results holds the five result sets of the packing contract, in the
// shape every engine reports them, with the canonical ordering and the
// comparison that tests and the demo use.
package results

import (
	"cmp"
	"encoding/json"
	"slices"
)

// Packed: the toy of rank k went into the box of rank k of window (line,
// window_start). Size is the line's size class. Rows of packed, unpacked and
// spare are identified by line, window and id together. The *Cut fields are set only when an id was too long for the row to fit in
// one Kafka record (see Cut); engines that are not bound by Kafka's record
// size leave them zero.
type Packed struct {
	ToyID       string `json:"toy_id"`
	BoxID       string `json:"box_id"`
	Line        string `json:"line"`
	Size        string `json:"size"`
	WindowStart string `json:"window_start"`
	ToyIDCut    Cut    `json:"toy_id_cut,omitzero"`
	BoxIDCut    Cut    `json:"box_id_cut,omitzero"`
}

// Unpacked: a toy whose window closed with fewer boxes than its rank.
type Unpacked struct {
	ToyID       string `json:"toy_id"`
	Line        string `json:"line"`
	Size        string `json:"size"`
	WindowStart string `json:"window_start"`
	ToyIDCut    Cut    `json:"toy_id_cut,omitzero"`
}

// Spare: a box whose window closed with fewer toys than its rank.
type Spare struct {
	BoxID       string `json:"box_id"`
	Line        string `json:"line"`
	Size        string `json:"size"`
	WindowStart string `json:"window_start"`
	BoxIDCut    Cut    `json:"box_id_cut,omitzero"`
}

// Late: a toy or box that arrived after its window had passed the lateness
// bound. Each late record is a row of its own, identified by its position
// (stream, partition, offset): two late copies of one id are two rows.
type Late struct {
	Stream    string `json:"stream"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	ID        string `json:"id"`
	Line      string `json:"line"`
	Size      string `json:"size"`
	MadeAt    string `json:"made_at"`
	IDCut     Cut    `json:"id_cut,omitzero"`
}

// Dead: a dead letter or a duplicate. Engines are compared on
// (stream, partition, offset); Reason is for people.
type Dead struct {
	Stream    string `json:"stream"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Reason    string `json:"reason"`
}

// Set is the five result sets of one run.
type Set struct {
	Packed   []Packed
	Unpacked []Unpacked
	Spare    []Spare
	Late     []Late
	Dead     []Dead
}

// Sort puts every set in its canonical order (size, line, window, id; or
// position for late and dead rows).
func (s *Set) Sort() {
	slices.SortFunc(s.Packed, func(a, b Packed) int {
		return cmp.Or(cmp.Compare(a.Size, b.Size), cmp.Compare(a.Line, b.Line), cmp.Compare(a.WindowStart, b.WindowStart),
			cmp.Compare(a.ToyID, b.ToyID), cmp.Compare(a.BoxID, b.BoxID))
	})
	slices.SortFunc(s.Unpacked, func(a, b Unpacked) int {
		return cmp.Or(cmp.Compare(a.Size, b.Size), cmp.Compare(a.Line, b.Line), cmp.Compare(a.WindowStart, b.WindowStart), cmp.Compare(a.ToyID, b.ToyID))
	})
	slices.SortFunc(s.Spare, func(a, b Spare) int {
		return cmp.Or(cmp.Compare(a.Size, b.Size), cmp.Compare(a.Line, b.Line), cmp.Compare(a.WindowStart, b.WindowStart), cmp.Compare(a.BoxID, b.BoxID))
	})
	slices.SortFunc(s.Late, func(a, b Late) int {
		return cmp.Or(cmp.Compare(a.Stream, b.Stream), cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
	slices.SortFunc(s.Dead, func(a, b Dead) int {
		return cmp.Or(cmp.Compare(a.Stream, b.Stream), cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
}

// Counts is the size of each set.
type Counts struct {
	Packed   int `json:"packed"`
	Unpacked int `json:"unpacked"`
	Spare    int `json:"spare"`
	Late     int `json:"late"`
	Dead     int `json:"dead"`
}

func (s *Set) Counts() Counts {
	return Counts{len(s.Packed), len(s.Unpacked), len(s.Spare), len(s.Late), len(s.Dead)}
}

// CountsBySize splits the counts per size class. Dead letters have no trusted
// size, so they are counted under "" (the caller prints them as a total).
func (s *Set) CountsBySize() map[string]Counts {
	m := map[string]Counts{}
	bump := func(size string, f func(*Counts)) { c := m[size]; f(&c); m[size] = c }
	for _, r := range s.Packed {
		bump(r.Size, func(c *Counts) { c.Packed++ })
	}
	for _, r := range s.Unpacked {
		bump(r.Size, func(c *Counts) { c.Unpacked++ })
	}
	for _, r := range s.Spare {
		bump(r.Size, func(c *Counts) { c.Spare++ })
	}
	for _, r := range s.Late {
		bump(r.Size, func(c *Counts) { c.Late++ })
	}
	for range s.Dead {
		bump("", func(c *Counts) { c.Dead++ })
	}
	return m
}

// Diff lists, per set, the rows only in a and only in b, each as its JSON
// (the result topics' format). Dead rows are compared on (stream,
// partition, offset) only, as the contract says.
type Diff struct {
	Set   string
	OnlyA []string
	OnlyB []string
}

// Compare returns the differences between a and b; none means equal. An id
// that one side had to cut (see Cut) equals the other side's whole id when
// its length and digest match (Matched).
func Compare(a, b Set) []Diff {
	a, b = Matched(a, b)
	var out []Diff
	for _, set := range SetNames {
		x, y := keys(a.Rows(set)), keys(b.Rows(set))
		if oa, ob := minus(x, y), minus(y, x); len(oa)+len(ob) > 0 {
			out = append(out, Diff{Set: set, OnlyA: oa, OnlyB: ob})
		}
	}
	return out
}

// named is how often a row occurs on one side, and how it is shown.
type named struct {
	n     int
	shown string
}

func keys(rows []Row) map[string]*named {
	m := make(map[string]*named, len(rows))
	for _, r := range rows {
		if e, ok := m[r.Key]; ok {
			e.n++
			continue
		}
		b, err := json.Marshal(r.Value)
		if err != nil {
			b = []byte(r.Key)
		}
		m[r.Key] = &named{n: 1, shown: string(b)}
	}
	return m
}

// minus is a multiset difference, so that a row reported twice by one engine
// and once by the other shows up.
func minus(a, b map[string]*named) []string {
	var out []string
	for k, e := range a {
		have := 0
		if o, ok := b[k]; ok {
			have = o.n
		}
		for i := have; i < e.n; i++ {
			out = append(out, e.shown)
		}
	}
	slices.Sort(out)
	return out
}

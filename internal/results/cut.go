package results

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
)

// Cut says that a field written to Kafka holds only the start of its value,
// because the whole value did not fit in one record: Bytes is the length of
// the whole value and SHA256 its digest (hex), so that nothing is hidden and
// a reader holding the whole value can tell it is the same one. The zero Cut
// means the field is whole.
type Cut struct {
	Bytes  int    `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// IsZero reports that the field was not cut (encoding/json's omitzero).
func (c Cut) IsZero() bool { return c == Cut{} }

// String keeps diff lines of whole rows short.
func (c Cut) String() string {
	if c.IsZero() {
		return "-"
	}
	return fmt.Sprintf("cut from %d bytes, sha256 %s", c.Bytes, c.SHA256)
}

// CutOf is the Cut of a value v that was shortened.
func CutOf(v []byte) Cut {
	sum := sha256.Sum256(v)
	return Cut{Bytes: len(v), SHA256: hex.EncodeToString(sum[:])}
}

// Matches reports whether the whole value v is the one the cut field started.
func (c Cut) Matches(prefix, v string) bool {
	return len(v) == c.Bytes && len(v) >= len(prefix) && v[:len(prefix)] == prefix && CutOf([]byte(v)) == c
}

// resolveCuts rewrites the rows of other that have an id which cut shows
// only the start of, as cut has them, so that an engine whose rows are whole
// (the reference, SQL) and one that had to cut ids to fit Kafka records (the
// packer) compare equal exactly when the whole ids are equal. Only ids whose
// length and digest match a cut id of cut are touched, in a copy: never the
// caller's rows.
func resolveCuts(cut Set, other *Set) {
	type shown struct {
		prefix string
		cut    Cut
	}
	byLen := map[int][]shown{}
	add := func(prefix string, c Cut) {
		if !c.IsZero() {
			byLen[c.Bytes] = append(byLen[c.Bytes], shown{prefix, c})
		}
	}
	for _, r := range cut.Packed {
		add(r.ToyID, r.ToyIDCut)
		add(r.BoxID, r.BoxIDCut)
	}
	for _, r := range cut.Unpacked {
		add(r.ToyID, r.ToyIDCut)
	}
	for _, r := range cut.Spare {
		add(r.BoxID, r.BoxIDCut)
	}
	for _, r := range cut.Late {
		add(r.ID, r.IDCut)
	}
	if len(byLen) == 0 {
		return
	}
	*other = other.clone()
	resolve := func(id *string, c *Cut) {
		if !c.IsZero() {
			return
		}
		for _, s := range byLen[len(*id)] {
			if s.cut.Matches(s.prefix, *id) {
				*id, *c = s.prefix, s.cut
				return
			}
		}
	}
	o := other
	for i := range o.Packed {
		r := &o.Packed[i]
		resolve(&r.ToyID, &r.ToyIDCut)
		resolve(&r.BoxID, &r.BoxIDCut)
	}
	for i := range o.Unpacked {
		resolve(&o.Unpacked[i].ToyID, &o.Unpacked[i].ToyIDCut)
	}
	for i := range o.Spare {
		resolve(&o.Spare[i].BoxID, &o.Spare[i].BoxIDCut)
	}
	for i := range o.Late {
		resolve(&o.Late[i].ID, &o.Late[i].IDCut)
	}
	o.Sort()
}

func (s Set) clone() Set {
	return Set{Packed: slices.Clone(s.Packed), Unpacked: slices.Clone(s.Unpacked), Spare: slices.Clone(s.Spare),
		Late: slices.Clone(s.Late), Dead: slices.Clone(s.Dead)}
}

package demo

import (
	"fmt"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
)

// StreamInputs counts what was read back from one input topic. Records are
// the toys (or boxes) the elves were asked for, bad and duplicate ones
// included; heartbeats are counted apart, as nobody asked for them.
type StreamInputs struct {
	Records    int `json:"records"`
	Heartbeats int `json:"heartbeats"`
	// Bad records break the contract's validity rule; Duplicates repeat the
	// id of an earlier toy (or box) of their size and window (as Goka
	// classified them; the same id in another window is another item). Both
	// are dead letters.
	Bad        int `json:"bad"`
	Duplicates int `json:"duplicates"`
}

// inputCounts counts the records of each stream ("toys", "boxes"): every
// input record is a heartbeat or one of Records, and Records holds the bad
// ones and the duplicates among dead.
func inputCounts(inputs []record.Input, dead []results.Dead) map[string]StreamInputs {
	out := map[string]StreamInputs{string(record.Toys): {}, string(record.Boxes): {}}
	for _, in := range inputs {
		c := out[string(in.Stream)]
		switch r, err := record.Parse(in.Stream, in.Key, in.Value); {
		case err != nil:
			c.Records++
			c.Bad++
		case r.Heartbeat:
			c.Heartbeats++
		default:
			c.Records++
		}
		out[string(in.Stream)] = c
	}
	for _, d := range dead {
		if d.Reason == string(record.ReasonDuplicate) {
			c := out[d.Stream]
			c.Duplicates++
			out[d.Stream] = c
		}
	}
	return out
}

// deadBySize counts the dead letters per size class their record claims
// (record.ClaimedSize), and under withoutSize those that claim none or whose
// record is not among inputs.
func deadBySize(inputs []record.Input, dead []results.Dead) (bySize map[string]int, withoutSize int) {
	at := make(map[string]record.Input, len(inputs))
	pos := func(stream string, p int32, off int64) string { return fmt.Sprintf("%s/%d@%d", stream, p, off) }
	for _, in := range inputs {
		at[pos(string(in.Stream), in.Partition, in.Offset)] = in
	}
	bySize = map[string]int{}
	for _, d := range dead {
		if s, ok := record.ClaimedSize(at[pos(d.Stream, d.Partition, d.Offset)]); ok {
			bySize[s]++
		} else {
			withoutSize++
		}
	}
	return bySize, withoutSize
}

// Package contract is the batch reference implementation of the packing contract
// (docs/SEMANTICS.md, and the authoritative text it restates). It reads every
// record at once, applies the definitions literally, and returns the five result
// sets. It shares nothing with the streaming engines except record.Parse (the one
// validity rule), the results types and Params (W and L, their defaults and
// their validation), so that it can be used to check them.
//
// It is written for clarity, not speed: every step is a direct transcription of
// a definition in the contract, in the contract's words where possible.
package contract

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
)

// Params are the contract's two parameters. The packer, the elves, the SQL
// generator (risingwave.Contract) and Compute all take W and L from a Params,
// with its defaults and its Validate: nothing else of this package is shared
// with the engines it checks.
type Params struct {
	// Window is W, the width of a window. It must be positive and a whole
	// number of microseconds.
	Window time.Duration
	// Lateness is L, the allowed lateness. It must be >= 0 and a whole number
	// of microseconds.
	Lateness time.Duration
}

// DefaultParams are the contract's defaults: W = 10 s, L = 5 s.
func DefaultParams() Params {
	return Params{Window: 10 * time.Second, Lateness: 5 * time.Second}
}

// Validate reports every reason p cannot be used, or nil. W and L must be
// whole microseconds because every engine computes windows and lateness in
// whole microseconds (see record.Record.MadeAtMicros); with that restriction
// the results are exactly those of nanosecond arithmetic.
func (p Params) Validate() error {
	var errs []error
	if p.Window <= 0 {
		errs = append(errs, fmt.Errorf("contract: window must be positive, got %v", p.Window))
	} else if p.Window%time.Microsecond != 0 {
		errs = append(errs, fmt.Errorf("contract: window must be a whole number of microseconds, got %v", p.Window))
	}
	if p.Lateness < 0 {
		errs = append(errs, fmt.Errorf("contract: lateness must not be negative, got %v", p.Lateness))
	} else if p.Lateness%time.Microsecond != 0 {
		errs = append(errs, fmt.Errorf("contract: lateness must be a whole number of microseconds, got %v", p.Lateness))
	}
	return errors.Join(errs...)
}

// Mode says which unpacked and spare rows Compute reports. The contract
// defines unpacked toys and spare boxes literally (every toy of rank k >
// n_boxes(s, w), every box of rank k > n_toys(s, w)), and says they become
// final only when window (s, w) is closed: when the watermarks of both
// (toys, s) and (boxes, s) have reached the window's end, where the watermark
// of (X, s) is the greatest made_at among the valid records of (X, s) minus
// L, and minus infinity when (X, s) has no valid record. Packed, late and dead
// rows are final as soon as they are seen, so the mode does not change them.
type Mode int

const (
	// Literal is the literal definitions: what every engine reports at
	// quiescence once the elves' final heartbeats have closed every window.
	Literal Mode = iota
	// ClosedOnly restricts the unpacked and spare sets to windows that are
	// closed by the end of the input: what a streaming engine may already
	// have declared final after consuming exactly these records (for
	// example, a run without final heartbeats).
	ClosedOnly
)

// Compute returns the five result sets of the contract for inputs, in mode,
// sorted with results.Set.Sort. The order of inputs does not matter: the records of each
// (stream, size) are taken in (partition, offset) order.
//
// Every input's Stream must be record.Toys or record.Boxes, and p must pass
// Validate; Compute panics otherwise, as both are programming errors.
func Compute(inputs []record.Input, p Params, mode Mode) results.Set {
	if err := p.Validate(); err != nil {
		panic(err)
	}
	W := p.Window.Microseconds()
	L := p.Lateness.Microseconds()

	var out results.Set

	// Validity: a dead letter takes no part in anything below.
	type valid struct {
		in  record.Input
		rec record.Record
	}
	type streamSize struct {
		stream record.Stream
		size   string
	}
	groups := map[streamSize][]valid{}
	for _, in := range inputs {
		if !in.Stream.Valid() {
			panic(fmt.Sprintf("contract: input at partition %d offset %d has stream %q, want %q or %q",
				in.Partition, in.Offset, in.Stream, record.Toys, record.Boxes))
		}
		rec, err := record.Parse(in.Stream, in.Key, in.Value)
		if err != nil {
			out.Dead = append(out.Dead, results.Dead{
				Stream:    string(in.Stream),
				Partition: in.Partition,
				Offset:    in.Offset,
				Reason:    string(record.ReasonOf(err)),
			})
			continue
		}
		k := streamSize{in.Stream, rec.Size}
		groups[k] = append(groups[k], valid{in, rec})
	}

	// Classification, per (stream, size), in offset order.
	type windowKey struct {
		size  string
		start int64 // window_start in microseconds
	}
	items := map[record.Stream]map[windowKey][]string{ // ids of the items, in rank order
		record.Toys:  {},
		record.Boxes: {},
	}
	watermark := map[streamSize]int64{} // absent: minus infinity
	for k, recs := range groups {
		slices.SortStableFunc(recs, func(a, b valid) int {
			return cmp.Or(cmp.Compare(a.in.Partition, b.in.Partition), cmp.Compare(a.in.Offset, b.in.Offset))
		})
		var priorMax int64
		hasPrior := false // prior_max is minus infinity
		seen := map[string]bool{}
		for _, v := range recs {
			made := v.rec.MadeAtMicros()
			start := floorDiv(made, W) * W
			end := start + W
			switch {
			case v.rec.Heartbeat:
				// Moves the clock only.
			case seen[v.rec.ID]:
				out.Dead = append(out.Dead, results.Dead{
					Stream:    string(v.in.Stream),
					Partition: v.in.Partition,
					Offset:    v.in.Offset,
					Reason:    string(record.ReasonDuplicate),
				})
			case hasPrior && priorMax-L >= end:
				seen[v.rec.ID] = true
				out.Late = append(out.Late, results.Late{
					Stream: string(v.in.Stream),
					ID:     v.rec.ID,
					Size:   v.rec.Size,
					MadeAt: record.FormatTime(v.rec.MadeAt),
				})
			default:
				seen[v.rec.ID] = true
				wk := windowKey{k.size, start}
				items[k.stream][wk] = append(items[k.stream][wk], v.rec.ID)
			}
			if !hasPrior || made > priorMax {
				priorMax, hasPrior = made, true
			}
		}
		watermark[k] = priorMax - L // hasPrior is true: groups are never empty
	}

	// closed reports whether window (size, start) is closed at the end of the input.
	closed := func(wk windowKey) bool {
		end := wk.start + W
		for _, s := range []record.Stream{record.Toys, record.Boxes} {
			wm, ok := watermark[streamSize{s, wk.size}]
			if !ok || wm < end {
				return false
			}
		}
		return true
	}

	// Packing, per (size, window): rank k with rank k.
	windows := map[windowKey]bool{}
	for _, s := range []record.Stream{record.Toys, record.Boxes} {
		for wk := range items[s] {
			windows[wk] = true
		}
	}
	for wk := range windows {
		toys, boxes := items[record.Toys][wk], items[record.Boxes][wk]
		ws := record.FormatMicros(wk.start)
		n := min(len(toys), len(boxes))
		for k := range n {
			out.Packed = append(out.Packed, results.Packed{ToyID: toys[k], BoxID: boxes[k], Size: wk.size, WindowStart: ws})
		}
		if mode == ClosedOnly && !closed(wk) {
			continue
		}
		for _, id := range toys[n:] {
			out.Unpacked = append(out.Unpacked, results.Unpacked{ToyID: id, Size: wk.size, WindowStart: ws})
		}
		for _, id := range boxes[n:] {
			out.Spare = append(out.Spare, results.Spare{BoxID: id, Size: wk.size, WindowStart: ws})
		}
	}

	out.Sort()
	return out
}

// floorDiv is a/b rounded toward minus infinity (b > 0). Go's / truncates
// toward zero, which differs for negative a: times before 1970.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

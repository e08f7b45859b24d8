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
// generator (contractsql.Contract) and Compute all take W and L from a Params,
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
// n_boxes(l, w), every box of rank k > n_toys(l, w), for a line l), and says
// they become final only when window (l, w) is closed: when the watermarks of
// both (toys, l) and (boxes, l) have reached the window's end, where the
// watermark of (X, l) is the greatest made_at among the valid records of
// (X, l) minus L, and minus infinity when (X, l) has no valid record. Packed, late and dead
// rows are final as soon as they are seen, so the mode does not change them.
type Mode int

const (
	// Literal is the literal definitions: what every engine reports at
	// quiescence once the elves' final heartbeats have closed every window.
	Literal Mode = iota
	// ClosedOnly restricts the unpacked and spare sets to windows that are
	// closed by the end of the input: what a streaming engine may already
	// have declared final after consuming exactly these records (for
	// example, a run without final heartbeats, or a line whose records go on
	// after them). The contract says so outright since version 3: a window
	// still open at quiescence reports its pairs, not its unpacked toys and
	// spare boxes.
	ClosedOnly
)

// Compute returns the five result sets of the contract for inputs, in mode,
// sorted with results.Set.Sort. The order of inputs does not matter: the records of each
// (stream, line) are taken in (partition, offset) order.
//
// Every input's Stream must be record.Toys or record.Boxes, and p must pass
// Validate; Compute panics otherwise, as both are programming errors.
func Compute(inputs []record.Input, p Params, mode Mode) results.Set {
	if err := p.Validate(); err != nil {
		panic(err)
	}
	c := computation{
		W: p.Window.Microseconds(), L: p.Lateness.Microseconds(),
		items:     map[record.Stream]map[windowKey][]string{record.Toys: {}, record.Boxes: {}},
		watermark: map[streamLine]int64{},
	}
	for k, recs := range c.validate(inputs) {
		c.classify(k, recs)
	}
	c.pack(mode)
	c.out.Sort()
	return c.out
}

// computation is one run of Compute, step by step: validity, then the
// classification of each (stream, line) in offset order, then packing.
type computation struct {
	W, L int64 // µs
	out  results.Set
	// items are the ids of each window's items, in rank order.
	items map[record.Stream]map[windowKey][]string
	// watermark of each (stream, line) at the end of the input; absent:
	// minus infinity.
	watermark map[streamLine]int64
}

type streamLine struct {
	stream record.Stream
	line   string
}

// windowKey is a window of a line; size is the line's size class, carried
// for the rows.
type windowKey struct {
	line, size string
	start      int64 // window_start in microseconds
}

type valid struct {
	in  record.Input
	rec record.Record
}

// validate reports dead letters, which take no part in anything after, and
// groups the valid records by (stream, line).
func (c *computation) validate(inputs []record.Input) map[streamLine][]valid {
	groups := map[streamLine][]valid{}
	for _, in := range inputs {
		if !in.Stream.Valid() {
			panic(fmt.Sprintf("contract: input at partition %d offset %d has stream %q, want %q or %q",
				in.Partition, in.Offset, in.Stream, record.Toys, record.Boxes))
		}
		rec, err := record.Parse(in.Stream, in.Key, in.Value)
		if err != nil {
			c.dead(in, record.ReasonOf(err))
			continue
		}
		k := streamLine{in.Stream, rec.Line}
		groups[k] = append(groups[k], valid{in, rec})
	}
	return groups
}

func (c *computation) dead(in record.Input, reason record.Reason) {
	c.out.Dead = append(c.out.Dead, results.Dead{Stream: string(in.Stream), Partition: in.Partition, Offset: in.Offset, Reason: string(reason)})
}

// classify takes the valid records of one (stream, line) in (partition,
// offset) order: each is a heartbeat, late, a duplicate or an item, first
// match wins, and every one of them moves prior_max. A duplicate is an
// earlier toy or box of the same window with the same id; ids are unique
// within a window only.
func (c *computation) classify(k streamLine, recs []valid) {
	slices.SortStableFunc(recs, func(a, b valid) int {
		return cmp.Or(cmp.Compare(a.in.Partition, b.in.Partition), cmp.Compare(a.in.Offset, b.in.Offset))
	})
	var priorMax int64
	hasPrior := false // prior_max is minus infinity
	type windowID struct {
		start int64
		id    string
	}
	// The items of each window, by id. The contract counts every earlier
	// toy or box of the window; items are enough: once a record of a window
	// is late every later one is too (prior_max never decreases), and a
	// duplicate has an item before it.
	seen := map[windowID]bool{}
	for _, v := range recs {
		made := v.rec.MadeAtMicros()
		start := floorDiv(made, c.W) * c.W
		wid := windowID{start, v.rec.ID}
		switch {
		case v.rec.Heartbeat:
			// Moves the clock only.
		case hasPrior && priorMax-c.L >= start+c.W:
			c.out.Late = append(c.out.Late, results.Late{
				Stream: string(v.in.Stream), Partition: v.in.Partition, Offset: v.in.Offset,
				ID: v.rec.ID, Line: v.rec.Line, Size: v.rec.Size, MadeAt: record.FormatTime(v.rec.MadeAt),
			})
		case seen[wid]:
			c.dead(v.in, record.ReasonDuplicate)
		default:
			seen[wid] = true
			wk := windowKey{k.line, v.rec.Size, start}
			c.items[k.stream][wk] = append(c.items[k.stream][wk], v.rec.ID)
		}
		if !hasPrior || made > priorMax {
			priorMax, hasPrior = made, true
		}
	}
	c.watermark[k] = priorMax - c.L // hasPrior is true: groups are never empty
}

// closed reports whether window wk is closed at the end of the input.
func (c *computation) closed(wk windowKey) bool {
	for _, s := range []record.Stream{record.Toys, record.Boxes} {
		wm, ok := c.watermark[streamLine{s, wk.line}]
		if !ok || wm < wk.start+c.W {
			return false
		}
	}
	return true
}

// pack pairs rank k with rank k in every (line, window); in ClosedOnly mode
// only closed windows report their unpacked toys and spare boxes.
func (c *computation) pack(mode Mode) {
	windows := map[windowKey]bool{}
	for _, s := range []record.Stream{record.Toys, record.Boxes} {
		for wk := range c.items[s] {
			windows[wk] = true
		}
	}
	for wk := range windows {
		toys, boxes := c.items[record.Toys][wk], c.items[record.Boxes][wk]
		ws := record.FormatMicros(wk.start)
		n := min(len(toys), len(boxes))
		for k := range n {
			c.out.Packed = append(c.out.Packed, results.Packed{ToyID: toys[k], BoxID: boxes[k], Line: wk.line, Size: wk.size, WindowStart: ws})
		}
		if mode == ClosedOnly && !c.closed(wk) {
			continue
		}
		for _, id := range toys[n:] {
			c.out.Unpacked = append(c.out.Unpacked, results.Unpacked{ToyID: id, Line: wk.line, Size: wk.size, WindowStart: ws})
		}
		for _, id := range boxes[n:] {
			c.out.Spare = append(c.out.Spare, results.Spare{BoxID: id, Line: wk.line, Size: wk.size, WindowStart: ws})
		}
	}
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

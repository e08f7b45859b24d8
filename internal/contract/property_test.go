package contract

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
)

// The property test draws random inputs (valid, invalid, heartbeats, repeated
// ids, ids reused in later windows, records re-sent after their window
// closed, records on window boundaries, times before 1970, made_at in several
// offsets and with nanoseconds; packing lines with many halls, halls that go
// quiet, halls that appear late, keys on the edge of a well-formed line) and
// checks Compute against
//   - a second, deliberately naive formulation of the contract (oracle below),
//     written like the SQL: every column computed by scanning the earlier rows,
//     in nanoseconds rather than microseconds;
//   - the contract's invariants, stated directly on the result sets.
//
// It also counts, over all runs, the outcomes that version 2 of the contract
// changed (see coverage), and fails when the generator stopped producing one
// of them: a test that never meets a re-sent late record cannot catch an
// engine that gets it wrong.

const propertyRuns = 300

func TestProperties(t *testing.T) {
	var seen coverage
	for seed := range uint64(propertyRuns) {
		r := rand.New(rand.NewPCG(seed, 2026))
		inputs, p := randomInputs(r)
		name := fmt.Sprintf("seed %d (W=%v L=%v, %d inputs)", seed, p.Window, p.Lateness, len(inputs))

		got := Compute(inputs, p, Literal)
		if d := diffSets(got, oracle(inputs, p, Literal)); d != "" {
			t.Fatalf("%s: Compute and the naive oracle disagree:%s", name, d)
		}
		checkInvariants(t, name, inputs, p, got)

		// Closure: without final heartbeats ClosedOnly may withhold unpacked and
		// spare rows but nothing else; with them every window is closed and
		// ClosedOnly changes nothing.
		closed := Compute(inputs, p, ClosedOnly)
		seen.add(inputs, p, got, closed)
		if d := diffSets(closed, oracle(inputs, p, ClosedOnly)); d != "" {
			t.Fatalf("%s: with ClosedOnly, Compute and the naive oracle disagree:%s", name, d)
		}
		if d := diffSets(results.Set{Packed: closed.Packed, Late: closed.Late, Dead: closed.Dead},
			results.Set{Packed: got.Packed, Late: got.Late, Dead: got.Dead}); d != "" {
			t.Fatalf("%s: ClosedOnly changed packed, late or dead:%s", name, d)
		}
		if !subset(closed.Unpacked, got.Unpacked) || !subset(closed.Spare, got.Spare) {
			t.Fatalf("%s: ClosedOnly reported unpacked or spare rows the literal definition does not", name)
		}
		final := withFinalHeartbeats(inputs, p)
		all := Compute(final, p, Literal)
		if d := diffSets(Compute(final, p, ClosedOnly), all); d != "" {
			t.Fatalf("%s: with final heartbeats, ClosedOnly should change nothing:%s", name, d)
		}
		if d := diffSets(all, got); d != "" {
			t.Fatalf("%s: final heartbeats (at least W+L after everything) changed a result:%s", name, d)
		}

		// Neither the order of the slice nor how partitions interleave matters.
		shuffled := slices.Clone(inputs)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if d := diffSets(Compute(shuffled, p, Literal), got); d != "" {
			t.Fatalf("%s: shuffling the inputs changed the result:%s", name, d)
		}
	}
	t.Logf("outcomes over %d runs: %+v", propertyRuns, seen)
	seen.require(t)
}

// coverage counts the outcomes whose rows changed from version 1 of the
// contract to version 2, and the one that did not.
type coverage struct {
	// LateRepeat: a late record whose id is an item of its window (a re-sent
	// record after its window closed; version 1 made it a duplicate).
	LateRepeat int
	// ReusedID: an id that is an item of two windows of one (stream, size)
	// (version 1 made every use after the first a duplicate).
	ReusedID int
	// LateTwice: two late rows of one (stream, size, id) (version 1 had one
	// row per id at most).
	LateTwice int
	// Duplicate: a repeat within an open window, a duplicate in both versions.
	Duplicate int
	// Version 3. HallPair: a pair on a line with a hall. SameIDTwoLines: an
	// id that is an item of one window on two lines of one size (version 2
	// made the second a duplicate). OpenWhileClosedElsewhere: a window of a
	// line that ClosedOnly leaves open though the same window of another
	// line of its size is closed (version 2 closed both). BadLine: a dead
	// letter for a key that is no line.
	HallPair, SameIDTwoLines, OpenWhileClosedElsewhere, BadLine int
}

func (c *coverage) add(inputs []record.Input, p Params, got, closed results.Set) {
	type key struct{ stream, line, window, id string }
	items := map[key]bool{}
	windows := map[[3]string]int{}
	lines := map[[4]string]map[string]bool{} // (stream, size, window, id): its lines
	item := func(k key) {
		items[k] = true
		sw := [4]string{k.stream, sizeOf(k.line), k.window, k.id}
		if lines[sw] == nil {
			lines[sw] = map[string]bool{}
		}
		if lines[sw][k.line] = true; len(lines[sw]) == 2 {
			c.SameIDTwoLines++
		}
	}
	for _, r := range got.Packed {
		item(key{"toys", r.Line, r.WindowStart, r.ToyID})
		item(key{"boxes", r.Line, r.WindowStart, r.BoxID})
		if strings.Contains(r.Line, "/") {
			c.HallPair++
		}
	}
	for _, r := range got.Unpacked {
		item(key{"toys", r.Line, r.WindowStart, r.ToyID})
	}
	for _, r := range got.Spare {
		item(key{"boxes", r.Line, r.WindowStart, r.BoxID})
	}
	for k := range items {
		if windows[[3]string{k.stream, k.line, k.id}]++; windows[[3]string{k.stream, k.line, k.id}] == 2 {
			c.ReusedID++
		}
	}
	lateIDs := map[[3]string]int{}
	w := p.Window.Microseconds()
	for _, l := range got.Late {
		if lateIDs[[3]string{l.Stream, l.Line, l.ID}]++; lateIDs[[3]string{l.Stream, l.Line, l.ID}] == 2 {
			c.LateTwice++
		}
		for _, in := range inputs {
			if string(in.Stream) == l.Stream && in.Partition == l.Partition && in.Offset == l.Offset {
				rec, err := record.Parse(in.Stream, in.Key, in.Value)
				if err == nil && items[key{l.Stream, l.Line, record.FormatMicros(floorDiv(rec.MadeAtMicros(), w) * w), l.ID}] {
					c.LateRepeat++
				}
			}
		}
	}
	for _, d := range got.Dead {
		switch d.Reason {
		case string(record.ReasonDuplicate):
			c.Duplicate++
		case string(record.ReasonBadLine):
			c.BadLine++
		}
	}
	// A window is open under ClosedOnly when it has a toy or box left over in
	// the literal result but none in closed's.
	reported := map[[2]string]bool{} // (line, window) with unpacked or spare rows in closed
	for _, r := range closed.Unpacked {
		reported[[2]string{r.Line, r.WindowStart}] = true
	}
	for _, r := range closed.Spare {
		reported[[2]string{r.Line, r.WindowStart}] = true
	}
	open := map[[2]string]bool{}
	for _, r := range got.Unpacked {
		open[[2]string{r.Line, r.WindowStart}] = !reported[[2]string{r.Line, r.WindowStart}]
	}
	for _, r := range got.Spare {
		open[[2]string{r.Line, r.WindowStart}] = !reported[[2]string{r.Line, r.WindowStart}]
	}
	for lw, isOpen := range open {
		if !isOpen {
			continue
		}
		for other := range reported {
			if other[1] == lw[1] && other[0] != lw[0] && sizeOf(other[0]) == sizeOf(lw[0]) {
				c.OpenWhileClosedElsewhere++
				break
			}
		}
	}
}

// require fails t when some outcome never occurred: the generator no longer
// tests it.
func (c coverage) require(t *testing.T) {
	t.Helper()
	for name, n := range map[string]int{
		"a late record repeating an item of its window": c.LateRepeat,
		"an id that is an item of two windows":          c.ReusedID,
		"two late rows of one id":                       c.LateTwice,
		"a duplicate":                                   c.Duplicate,
		"a pair on a line with a hall":                  c.HallPair,
		"an id that is an item on two lines of a size":  c.SameIDTwoLines,
		"a window open while another line's is closed":  c.OpenWhileClosedElsewhere,
		"a bad line": c.BadLine,
	} {
		if n < 10 {
			t.Errorf("the generator produced %q only %d times", name, n)
		}
	}
}

func subset[T comparable](a, b []T) bool {
	n := map[T]int{}
	for _, x := range b {
		n[x]++
	}
	for _, x := range a {
		if n[x] == 0 {
			return false
		}
		n[x]--
	}
	return true
}

// halls are the halls the generator puts lines in: short and long (32
// characters), starting with a digit, ending with a dash.
var halls = []string{"h1", "hall-7", "0", "n-", "north-pole-2", strings.Repeat("z", 31) + "9", "b", "9x"}

// badLineKeys are keys whose size part is right (appended to the size) but
// which are no line.
var badLineKeys = []string{"/", "/a/b", "/Hall", "/" + strings.Repeat("h", 33), "/-x", "/h_1", "//", "/h/"}

func randomInputs(r *rand.Rand) ([]record.Input, Params) {
	W := []time.Duration{time.Second, 3 * time.Second, 10 * time.Second, 7500 * time.Microsecond}[r.IntN(4)]
	L := []time.Duration{0, W / 4, W / 2, W, 5 * time.Second}[r.IntN(5)]
	p := Params{Window: W, Lateness: L}

	base := time.Date(2026, 12, 24, 10, 0, 0, 0, time.UTC).UnixNano()
	if r.IntN(5) == 0 {
		base = -3 * int64(W) // straddle 1970-01-01
	}
	// A coarse grain puts many records exactly on window boundaries and makes
	// "late by exactly L" frequent; a fine one exercises nanoseconds.
	grain := []int64{1, 1000, int64(W) / 4, int64(W) / 2}[r.IntN(4)]
	zones := []*time.Location{time.UTC, time.FixedZone("", 3600), time.FixedZone("", -(5*3600 + 1800))}
	sizes := record.Sizes[:1+r.IntN(3)]
	n := r.IntN(80)
	idPool := 1 + n/3 // many duplicates
	if r.IntN(3) > 0 {
		idPool = 1 + 4*n // few
	}
	// The lines: each size alone, or in halls, or both. A line writes
	// records from step from to step to on both streams, or on one only:
	// some halls go quiet early, some appear late, some never write boxes.
	type span struct {
		line, size string
		from, to   int
		only       record.Stream // "" for both streams
	}
	var lines []span
	nHalls := []int{0, 1, 3, len(halls)}[r.IntN(4)]
	for _, size := range sizes {
		if nHalls == 0 || r.IntN(2) == 0 {
			lines = append(lines, span{line: size, size: size, to: n})
		}
		for _, h := range halls[:nHalls] {
			l := span{line: record.JoinLine(size, h), size: size, to: n}
			switch r.IntN(5) {
			case 0: // goes quiet
				l.to = r.IntN(n + 1)
			case 1: // appears late
				l.from = r.IntN(n + 1)
			case 2:
				l.only = []record.Stream{record.Toys, record.Boxes}[r.IntN(2)]
			}
			lines = append(lines, l)
		}
	}
	// Elves mostly write in time order, with jitter: some records late, most
	// not. One scenario in three is in random order: mostly late.
	ordered := r.IntN(3) > 0
	span8 := 8 * int64(W)

	offsets := map[string]int64{} // per (stream, partition)
	next := func(s record.Stream, key string) int64 {
		k := fmt.Sprint(s, part(key))
		o := offsets[k]
		offsets[k]++
		return o
	}
	var ins []record.Input
	sent := map[string][]record.Input{} // the toys and boxes written, by stream and line
	used := map[string][]string{}       // their ids
	for i := range n {
		s := []record.Stream{record.Toys, record.Boxes}[r.IntN(2)]
		var active []span
		for _, l := range lines {
			if l.from <= i && i < l.to && (l.only == "" || l.only == s) {
				active = append(active, l)
			}
		}
		if len(active) == 0 {
			active = lines
		}
		ln := active[r.IntN(len(active))]
		size := ln.size
		made := base + r.Int64N(span8)/grain*grain
		if ordered {
			made = base + (span8*int64(i)/int64(n)+r.Int64N(int64(W))-int64(W)/2)/grain*grain
		}
		madeAt := time.Unix(0, made).In(zones[r.IntN(len(zones))]).Format(time.RFC3339Nano)
		id := fmt.Sprintf("%c%d", s[0], r.IntN(idPool))
		fields := map[string]any{"size": size, "made_at": madeAt, "elf": "e"}
		key := ln.line
		ss := fmt.Sprint(s, key)
		valid := false // a toy or box
		switch k := r.IntN(100); {
		case k < 10: // heartbeat, sometimes with an id
			fields["heartbeat"] = true
			if r.IntN(2) == 0 {
				fields[s.IDField()] = id
			}
		case k < 14:
			ins = append(ins, raw(s, next(s, key), key, []string{`{"`, `[]`, "{\"toy_id\":\"\xff\"}", `null`}[r.IntN(4)]))
			continue
		case k < 16:
			fields["made_at"] = []any{"2026-12-24 10:00:00", 0, "2026-12-24T10:00:60Z"}[r.IntN(3)]
			fields[s.IDField()] = id
		case k < 18:
			fields["size"] = []any{"XXL", "m", nil}[r.IntN(3)]
			fields[s.IDField()] = id
		case k < 20: // size not key: the key's size part is not the value's size
			key = []string{"S", "M", "L", "XL", "", "L/h1", "XL/h1", "/h1", "m/h1"}[r.IntN(9)]
			if sizeOf(key) == size {
				key = "XXL"
			}
			fields[s.IDField()] = id
		case k < 22: // bad line: the size part is right, the rest is no hall
			key = size + badLineKeys[r.IntN(len(badLineKeys))]
			fields[s.IDField()] = id
			if r.IntN(3) == 0 {
				fields["heartbeat"] = true
			}
		case k < 24:
			fields[s.IDField()] = []any{"", 7, nil}[r.IntN(3)]
		case k < 34 && len(sent[ss]) > 0:
			// An elf re-sends a record it wrote before, byte for byte: a
			// duplicate while its window is open, late once the clock has
			// passed it, and sometimes twice.
			again := sent[ss][r.IntN(len(sent[ss]))]
			if r.IntN(2) == 0 {
				again = sent[ss][len(sent[ss])-1]
			}
			for range 1 + r.IntN(2) {
				again.Offset = next(s, key)
				ins = append(ins, again)
			}
			continue
		case k < 40 && len(used[ss]) > 0:
			// An id of this (stream, line) made again now: in ordered runs,
			// mostly in a later window, where it is a new item.
			fields[s.IDField()] = used[ss][r.IntN(len(used[ss]))]
			valid = true
		case k < 46:
			// An id another line of this size used: an item of its own line.
			var others []string
			for _, l := range lines {
				if l.size == size && l.line != key {
					others = append(others, used[fmt.Sprint(s, l.line)]...)
				}
			}
			if len(others) == 0 {
				others = []string{id}
			}
			fields[s.IDField()] = others[r.IntN(len(others))]
			used[ss] = append(used[ss], fields[s.IDField()].(string))
			valid = true
		default:
			fields[s.IDField()] = id
			used[ss] = append(used[ss], id)
			valid = true
		}
		in := input(s, key, next(s, key), fields)
		if valid {
			sent[ss] = append(sent[ss], in)
		}
		ins = append(ins, in)
	}
	return ins, p
}

// withFinalHeartbeats appends, for each stream and each line with a valid
// record, a heartbeat at least W + L after every made_at in inputs, as the
// elves do when they stop.
func withFinalHeartbeats(inputs []record.Input, p Params) []record.Input {
	last := time.Date(2026, 12, 24, 10, 0, 0, 0, time.UTC)
	next := map[string]int64{}
	lines := map[string]bool{}
	for _, in := range inputs {
		rec, err := record.Parse(in.Stream, in.Key, in.Value)
		if err == nil && rec.MadeAt.After(last) {
			last = rec.MadeAt
		}
		if err == nil {
			lines[rec.Line] = true
		}
		k := fmt.Sprint(in.Stream, in.Partition)
		next[k] = max(next[k], in.Offset+1)
	}
	out := slices.Clone(inputs)
	madeAt := last.Add(p.Window + p.Lateness).UTC().Format(time.RFC3339Nano)
	for _, s := range []record.Stream{record.Toys, record.Boxes} {
		for _, line := range slices.Sorted(maps.Keys(lines)) {
			k := fmt.Sprint(s, part(line))
			out = append(out, hb(s, next[k], line, madeAt))
			next[k]++
		}
	}
	return out
}

// oracle is the contract once more, as window functions in SQL state it:
// each column of a valid row is computed by scanning the earlier rows of its
// (stream, line), packing is a join on (line, window_start, rank). It works in
// nanoseconds (the generator stays within 1678..2262).
func oracle(inputs []record.Input, p Params, mode Mode) results.Set {
	type row struct {
		in                  record.Input
		rec                 record.Record
		made, start         int64
		hb, dup, late, item bool
		rank                int
	}
	W, L := int64(p.Window), int64(p.Lateness)
	var out results.Set
	var rows []*row
	for _, in := range inputs {
		rec, err := record.Parse(in.Stream, in.Key, in.Value)
		if err != nil {
			out.Dead = append(out.Dead, results.Dead{Stream: string(in.Stream), Partition: in.Partition, Offset: in.Offset, Reason: string(record.ReasonOf(err))})
			continue
		}
		made := rec.MadeAt.UnixNano()
		start := made / W * W
		if made%W < 0 {
			start -= W
		}
		rows = append(rows, &row{in: in, rec: rec, made: made, start: start, hb: rec.Heartbeat})
	}
	before := func(a, b *row) bool { // a precedes b in the same (stream, line)
		return a.in.Stream == b.in.Stream && a.rec.Line == b.rec.Line &&
			cmp.Or(cmp.Compare(a.in.Partition, b.in.Partition), cmp.Compare(a.in.Offset, b.in.Offset)) < 0
	}
	slices.SortFunc(rows, func(a, b *row) int { // so that earlier rows are classified first
		return cmp.Or(cmp.Compare(a.in.Partition, b.in.Partition), cmp.Compare(a.in.Offset, b.in.Offset))
	})
	for _, r := range rows {
		hasPrior, priorMax := false, int64(0)
		for _, e := range rows {
			if before(e, r) {
				if !hasPrior || e.made > priorMax {
					priorMax = e.made
				}
				hasPrior = true
			}
		}
		r.late = !r.hb && hasPrior && priorMax-L >= r.start+W
		for _, e := range rows {
			if before(e, r) && !r.hb && !r.late && !e.hb && e.start == r.start && e.rec.ID == r.rec.ID {
				r.dup = true
			}
		}
		r.item = !r.hb && !r.dup && !r.late
		if r.item {
			r.rank = 1
			for _, e := range rows {
				if before(e, r) && e.item && e.start == r.start {
					r.rank++
				}
			}
		}
		if r.dup {
			out.Dead = append(out.Dead, results.Dead{Stream: string(r.in.Stream), Partition: r.in.Partition, Offset: r.in.Offset, Reason: "duplicate"})
		}
		if r.late {
			out.Late = append(out.Late, results.Late{Stream: string(r.in.Stream), Partition: r.in.Partition, Offset: r.in.Offset,
				ID: r.rec.ID, Line: r.rec.Line, Size: r.rec.Size, MadeAt: r.rec.MadeAt.UTC().Format(time.RFC3339Nano)})
		}
	}
	ws := func(r *row) string { return time.Unix(0, r.start).UTC().Format(time.RFC3339Nano) }
	// Window (line, start) is closed when, for both streams, some valid
	// record of that line has made_at - L >= its end.
	closed := func(line string, start int64) bool {
		for _, s := range []record.Stream{record.Toys, record.Boxes} {
			reached := false
			for _, o := range rows {
				if o.in.Stream == s && o.rec.Line == line && o.made-L >= start+W {
					reached = true
				}
			}
			if !reached {
				return false
			}
		}
		return true
	}
	match := func(r *row, other record.Stream) *row {
		for _, o := range rows {
			if o.item && o.in.Stream == other && o.rec.Line == r.rec.Line && o.start == r.start && o.rank == r.rank {
				return o
			}
		}
		return nil
	}
	for _, r := range rows {
		if !r.item {
			continue
		}
		switch m := match(r, map[record.Stream]record.Stream{record.Toys: record.Boxes, record.Boxes: record.Toys}[r.in.Stream]); {
		case r.in.Stream == record.Toys && m != nil:
			out.Packed = append(out.Packed, results.Packed{ToyID: r.rec.ID, BoxID: m.rec.ID, Line: r.rec.Line, Size: r.rec.Size, WindowStart: ws(r)})
		case mode == ClosedOnly && !closed(r.rec.Line, r.start):
			// not final yet
		case r.in.Stream == record.Toys:
			out.Unpacked = append(out.Unpacked, results.Unpacked{ToyID: r.rec.ID, Line: r.rec.Line, Size: r.rec.Size, WindowStart: ws(r)})
		case m == nil:
			out.Spare = append(out.Spare, results.Spare{BoxID: r.rec.ID, Line: r.rec.Line, Size: r.rec.Size, WindowStart: ws(r)})
		}
	}
	return out
}

// checkInvariants states the contract's promises directly on a literal
// (Literal) result.
func checkInvariants(t *testing.T, name string, inputs []record.Input, p Params, got results.Set) {
	t.Helper()
	type pos struct {
		stream    string
		partition int32
		offset    int64
	}
	// item is what identifies a row of packed, unpacked or spare: ids are
	// unique within a window of a line only.
	type item struct{ stream, line, window, id string }
	type valid struct {
		pos
		rec  record.Record
		item item
	}
	w := p.Window.Microseconds()
	wantDead := map[pos]string{}
	var recs []valid
	byPos := map[pos]valid{}
	for _, in := range inputs {
		at := pos{string(in.Stream), in.Partition, in.Offset}
		rec, err := record.Parse(in.Stream, in.Key, in.Value)
		if err != nil {
			wantDead[at] = string(record.ReasonOf(err))
			continue
		}
		if rec.Line != string(in.Key) || !record.ValidLine(rec.Line) || sizeOf(rec.Line) != rec.Size {
			t.Fatalf("%s: record at %+v with key %q has line %q, size %q", name, at, in.Key, rec.Line, rec.Size)
		}
		v := valid{at, rec, item{string(in.Stream), rec.Line, record.FormatMicros(floorDiv(rec.MadeAtMicros(), w) * w), rec.ID}}
		recs = append(recs, v)
		byPos[at] = v
	}
	slices.SortFunc(recs, func(a, b valid) int {
		return cmp.Or(cmp.Compare(a.partition, b.partition), cmp.Compare(a.offset, b.offset))
	})

	// Every invalid record is dead, with its reason; every other dead row is
	// a duplicate, of a toy or box.
	dup := map[pos]bool{}
	seenDead := map[pos]bool{}
	for _, d := range got.Dead {
		at := pos{d.Stream, d.Partition, d.Offset}
		if seenDead[at] {
			t.Fatalf("%s: dead row %+v reported twice", name, d)
		}
		seenDead[at] = true
		if reason, ok := wantDead[at]; ok {
			if d.Reason != reason {
				t.Fatalf("%s: dead row %+v, want reason %q", name, d, reason)
			}
			continue
		}
		if d.Reason != string(record.ReasonDuplicate) {
			t.Fatalf("%s: dead row %+v of a valid record should be a duplicate", name, d)
		}
		if v, ok := byPos[at]; !ok || v.rec.Heartbeat {
			t.Fatalf("%s: duplicate %+v is no toy or box", name, d)
		}
		dup[at] = true
	}
	for at := range wantDead {
		if !seenDead[at] {
			t.Fatalf("%s: invalid record at %+v is not dead", name, at)
		}
	}

	// A late row is the row of one toy or box, at its position, with its id,
	// line, size and made_at; two late copies of an id are two rows.
	late := map[pos]bool{}
	for _, l := range got.Late {
		at := pos{l.Stream, l.Partition, l.Offset}
		v, ok := byPos[at]
		if !ok || v.rec.Heartbeat || late[at] || dup[at] {
			t.Fatalf("%s: late row %+v is not the only outcome of a toy or box", name, l)
		}
		if l.ID != v.rec.ID || l.Line != v.rec.Line || l.Size != v.rec.Size || l.MadeAt != record.FormatTime(v.rec.MadeAt) {
			t.Fatalf("%s: late row %+v, the record at its position is %+v", name, l, v.rec)
		}
		late[at] = true
	}

	// Items: no (stream, line, window, id) twice in packed, unpacked and
	// spare, and every row's size is its line's.
	items := map[item]string{}
	place := func(k item, where string) {
		if prev, ok := items[k]; ok {
			t.Fatalf("%s: %+v is both %s and %s", name, k, prev, where)
		}
		items[k] = where
	}
	sizeIsLines := func(line, size string) {
		if sizeOf(line) != size {
			t.Fatalf("%s: a row of line %q has size %q", name, line, size)
		}
	}
	for _, r := range got.Packed {
		sizeIsLines(r.Line, r.Size)
		place(item{"toys", r.Line, r.WindowStart, r.ToyID}, "packed toy")
		place(item{"boxes", r.Line, r.WindowStart, r.BoxID}, "packed box")
	}
	for _, r := range got.Unpacked {
		sizeIsLines(r.Line, r.Size)
		place(item{"toys", r.Line, r.WindowStart, r.ToyID}, "unpacked")
	}
	for _, r := range got.Spare {
		sizeIsLines(r.Line, r.Size)
		place(item{"boxes", r.Line, r.WindowStart, r.BoxID}, "spare")
	}

	// In offset order, within one (stream, line, window): once a record is
	// late every later one is (the window is closed for the stream), and of
	// the records with one id that are not late, the first is the item and
	// the others are duplicates.
	closed := map[item]bool{} // keyed by window (id "")
	first := map[item]bool{}
	nonHeartbeat := 0
	for _, v := range recs {
		if v.rec.Heartbeat {
			continue
		}
		nonHeartbeat++
		win := v.item
		win.id = ""
		switch {
		case late[v.pos]:
			closed[win] = true
		case closed[win]:
			t.Fatalf("%s: %+v at %+v is not late, though an earlier record of its window was", name, v.item, v.pos)
		case !first[v.item]:
			first[v.item] = true
			if dup[v.pos] {
				t.Fatalf("%s: %+v at %+v is a duplicate of nothing", name, v.item, v.pos)
			}
			if _, ok := items[v.item]; !ok {
				t.Fatalf("%s: %+v at %+v is neither late, a duplicate nor an item", name, v.item, v.pos)
			}
		case !dup[v.pos]:
			t.Fatalf("%s: %+v at %+v repeats an item of its window but is no duplicate", name, v.item, v.pos)
		}
	}
	if len(items) != len(first) {
		t.Fatalf("%s: %d items, from %d toys and boxes that are the first of their id in their window", name, len(items), len(first))
	}
	if len(items)+len(late)+len(dup) != nonHeartbeat {
		t.Fatalf("%s: %d items + %d late + %d duplicates != %d valid non-heartbeat records", name, len(items), len(late), len(dup), nonHeartbeat)
	}

	// Per (line, window): a toy is left unpacked only when every box is used,
	// and a box spare only when every toy is packed, so never both.
	type sw struct{ line, ws string }
	n := map[sw][3]int{} // packed, unpacked, spare
	for _, r := range got.Packed {
		c := n[sw{r.Line, r.WindowStart}]
		c[0]++
		n[sw{r.Line, r.WindowStart}] = c
	}
	for _, r := range got.Unpacked {
		c := n[sw{r.Line, r.WindowStart}]
		c[1]++
		n[sw{r.Line, r.WindowStart}] = c
	}
	for _, r := range got.Spare {
		c := n[sw{r.Line, r.WindowStart}]
		c[2]++
		n[sw{r.Line, r.WindowStart}] = c
	}
	for k, c := range n {
		if c[1] > 0 && c[2] > 0 {
			t.Fatalf("%s: window %+v has both unpacked toys and spare boxes", name, k)
		}
	}
}

package contract

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
)

// The property test draws random inputs (valid, invalid, heartbeats, repeated
// ids, ids reused in later windows, records re-sent after their window
// closed, records on window boundaries, times before 1970, made_at in several
// offsets and with nanoseconds) and checks Compute against
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
		seen.add(inputs, p, got)

		// Closure: without final heartbeats ClosedOnly may withhold unpacked and
		// spare rows but nothing else; with them every window is closed and
		// ClosedOnly changes nothing.
		closed := Compute(inputs, p, ClosedOnly)
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
}

func (c *coverage) add(inputs []record.Input, p Params, got results.Set) {
	type key struct{ stream, size, window, id string }
	items := map[key]bool{}
	windows := map[[3]string]int{}
	for _, r := range got.Packed {
		items[key{"toys", r.Size, r.WindowStart, r.ToyID}] = true
		items[key{"boxes", r.Size, r.WindowStart, r.BoxID}] = true
	}
	for _, r := range got.Unpacked {
		items[key{"toys", r.Size, r.WindowStart, r.ToyID}] = true
	}
	for _, r := range got.Spare {
		items[key{"boxes", r.Size, r.WindowStart, r.BoxID}] = true
	}
	for k := range items {
		if windows[[3]string{k.stream, k.size, k.id}]++; windows[[3]string{k.stream, k.size, k.id}] == 2 {
			c.ReusedID++
		}
	}
	lateIDs := map[[3]string]int{}
	w := p.Window.Microseconds()
	for _, l := range got.Late {
		if lateIDs[[3]string{l.Stream, l.Size, l.ID}]++; lateIDs[[3]string{l.Stream, l.Size, l.ID}] == 2 {
			c.LateTwice++
		}
		for _, in := range inputs {
			if string(in.Stream) == l.Stream && in.Partition == l.Partition && in.Offset == l.Offset {
				rec, err := record.Parse(in.Stream, in.Key, in.Value)
				if err == nil && items[key{l.Stream, l.Size, record.FormatMicros(floorDiv(rec.MadeAtMicros(), w) * w), l.ID}] {
					c.LateRepeat++
				}
			}
		}
	}
	for _, d := range got.Dead {
		if d.Reason == string(record.ReasonDuplicate) {
			c.Duplicate++
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
	// Elves mostly write in time order, with jitter: some records late, most
	// not. One scenario in three is in random order: mostly late.
	ordered := r.IntN(3) > 0
	span := 8 * int64(W)

	offsets := map[string]int64{} // per (stream, partition)
	next := func(s record.Stream, key string) int64 {
		k := fmt.Sprint(s, part(key))
		o := offsets[k]
		offsets[k]++
		return o
	}
	var ins []record.Input
	sent := map[string][]record.Input{} // the toys and boxes written, by stream and key
	used := map[string][]string{}       // their ids
	for i := range n {
		s := []record.Stream{record.Toys, record.Boxes}[r.IntN(2)]
		size := sizes[r.IntN(len(sizes))]
		made := base + r.Int64N(span)/grain*grain
		if ordered {
			made = base + (span*int64(i)/int64(n)+r.Int64N(int64(W))-int64(W)/2)/grain*grain
		}
		madeAt := time.Unix(0, made).In(zones[r.IntN(len(zones))]).Format(time.RFC3339Nano)
		id := fmt.Sprintf("%c%d", s[0], r.IntN(idPool))
		fields := map[string]any{"size": size, "made_at": madeAt, "elf": "e"}
		key := size
		ss := fmt.Sprint(s, size)
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
		case k < 20:
			key = []string{"S", "M", "L", "XL", ""}[r.IntN(5)]
			if key == size {
				key = "XXL"
			}
			fields[s.IDField()] = id
		case k < 22:
			fields[s.IDField()] = []any{"", 7, nil}[r.IntN(3)]
		case k < 32 && len(sent[ss]) > 0:
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
		case k < 38 && len(used[ss]) > 0:
			// An id of this (stream, size) made again now: in ordered runs,
			// mostly in a later window, where it is a new item.
			fields[s.IDField()] = used[ss][r.IntN(len(used[ss]))]
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

// withFinalHeartbeats appends, for each stream and size, a heartbeat at least
// W + L after every made_at in inputs, as the elves do when they stop.
func withFinalHeartbeats(inputs []record.Input, p Params) []record.Input {
	last := time.Date(2026, 12, 24, 10, 0, 0, 0, time.UTC)
	next := map[string]int64{}
	for _, in := range inputs {
		if rec, err := record.Parse(in.Stream, in.Key, in.Value); err == nil && rec.MadeAt.After(last) {
			last = rec.MadeAt
		}
		k := fmt.Sprint(in.Stream, in.Partition)
		next[k] = max(next[k], in.Offset+1)
	}
	out := slices.Clone(inputs)
	madeAt := last.Add(p.Window + p.Lateness).UTC().Format(time.RFC3339Nano)
	for _, s := range []record.Stream{record.Toys, record.Boxes} {
		for _, size := range record.Sizes {
			k := fmt.Sprint(s, part(size))
			out = append(out, hb(s, next[k], size, madeAt))
		}
	}
	return out
}

// oracle is the contract once more, as window functions in SQL state it:
// each column of a valid row is computed by scanning the earlier rows of its
// (stream, size), packing is a join on (size, window_start, rank). It works in
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
	before := func(a, b *row) bool { // a precedes b in the same (stream, size)
		return a.in.Stream == b.in.Stream && a.rec.Size == b.rec.Size &&
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
				ID: r.rec.ID, Size: r.rec.Size, MadeAt: r.rec.MadeAt.UTC().Format(time.RFC3339Nano)})
		}
	}
	ws := func(r *row) string { return time.Unix(0, r.start).UTC().Format(time.RFC3339Nano) }
	// Window (size, start) is closed when, for both streams, some valid record
	// of that size has made_at - L >= its end.
	closed := func(size string, start int64) bool {
		for _, s := range []record.Stream{record.Toys, record.Boxes} {
			reached := false
			for _, o := range rows {
				if o.in.Stream == s && o.rec.Size == size && o.made-L >= start+W {
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
			if o.item && o.in.Stream == other && o.rec.Size == r.rec.Size && o.start == r.start && o.rank == r.rank {
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
			out.Packed = append(out.Packed, results.Packed{ToyID: r.rec.ID, BoxID: m.rec.ID, Size: r.rec.Size, WindowStart: ws(r)})
		case mode == ClosedOnly && !closed(r.rec.Size, r.start):
			// not final yet
		case r.in.Stream == record.Toys:
			out.Unpacked = append(out.Unpacked, results.Unpacked{ToyID: r.rec.ID, Size: r.rec.Size, WindowStart: ws(r)})
		case m == nil:
			out.Spare = append(out.Spare, results.Spare{BoxID: r.rec.ID, Size: r.rec.Size, WindowStart: ws(r)})
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
	// unique within a window only.
	type item struct{ stream, size, window, id string }
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
		v := valid{at, rec, item{string(in.Stream), rec.Size, record.FormatMicros(floorDiv(rec.MadeAtMicros(), w) * w), rec.ID}}
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
	// size and made_at; two late copies of an id are two rows.
	late := map[pos]bool{}
	for _, l := range got.Late {
		at := pos{l.Stream, l.Partition, l.Offset}
		v, ok := byPos[at]
		if !ok || v.rec.Heartbeat || late[at] || dup[at] {
			t.Fatalf("%s: late row %+v is not the only outcome of a toy or box", name, l)
		}
		if l.ID != v.rec.ID || l.Size != v.rec.Size || l.MadeAt != record.FormatTime(v.rec.MadeAt) {
			t.Fatalf("%s: late row %+v, the record at its position is %+v", name, l, v.rec)
		}
		late[at] = true
	}

	// Items: no (stream, size, window, id) twice in packed, unpacked and spare.
	items := map[item]string{}
	place := func(k item, where string) {
		if prev, ok := items[k]; ok {
			t.Fatalf("%s: %+v is both %s and %s", name, k, prev, where)
		}
		items[k] = where
	}
	for _, r := range got.Packed {
		place(item{"toys", r.Size, r.WindowStart, r.ToyID}, "packed toy")
		place(item{"boxes", r.Size, r.WindowStart, r.BoxID}, "packed box")
	}
	for _, r := range got.Unpacked {
		place(item{"toys", r.Size, r.WindowStart, r.ToyID}, "unpacked")
	}
	for _, r := range got.Spare {
		place(item{"boxes", r.Size, r.WindowStart, r.BoxID}, "spare")
	}

	// In offset order, within one (stream, size, window): once a record is
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

	// Per (size, window): a toy is left unpacked only when every box is used,
	// and a box spare only when every toy is packed, so never both.
	type sw struct{ size, ws string }
	n := map[sw][3]int{} // packed, unpacked, spare
	for _, r := range got.Packed {
		c := n[sw{r.Size, r.WindowStart}]
		c[0]++
		n[sw{r.Size, r.WindowStart}] = c
	}
	for _, r := range got.Unpacked {
		c := n[sw{r.Size, r.WindowStart}]
		c[1]++
		n[sw{r.Size, r.WindowStart}] = c
	}
	for _, r := range got.Spare {
		c := n[sw{r.Size, r.WindowStart}]
		c[2]++
		n[sw{r.Size, r.WindowStart}] = c
	}
	for k, c := range n {
		if c[1] > 0 && c[2] > 0 {
			t.Fatalf("%s: window %+v has both unpacked toys and spare boxes", name, k)
		}
	}
}

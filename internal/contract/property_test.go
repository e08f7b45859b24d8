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
// ids, records on window boundaries, times before 1970, made_at in several
// offsets and with nanoseconds) and checks Compute against
//   - a second, deliberately naive formulation of the contract (oracle below),
//     written like the SQL: every column computed by scanning the earlier rows,
//     in nanoseconds rather than microseconds;
//   - the contract's invariants, stated directly on the result sets.

const propertyRuns = 300

func TestProperties(t *testing.T) {
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
		default:
			fields[s.IDField()] = id
		}
		ins = append(ins, input(s, key, next(s, key), fields))
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
				if !e.hb && !r.hb && e.rec.ID == r.rec.ID {
					r.dup = true
				}
			}
		}
		r.late = !r.hb && !r.dup && hasPrior && priorMax-L >= r.start+W
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
			out.Late = append(out.Late, results.Late{Stream: string(r.in.Stream), ID: r.rec.ID, Size: r.rec.Size, MadeAt: r.rec.MadeAt.UTC().Format(time.RFC3339Nano)})
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
	type sid struct{ stream, size, id string }
	// Where each valid non-heartbeat record may end up, by (stream, size, id):
	// the first with a given key is the one that is not a duplicate.
	window := map[sid]string{}
	wantDead := map[string]string{}
	nonHeartbeat := 0
	firsts := map[sid]bool{}
	for _, in := range inputs {
		pos := fmt.Sprint(in.Stream, in.Partition, in.Offset)
		rec, err := record.Parse(in.Stream, in.Key, in.Value)
		if err != nil {
			wantDead[pos] = string(record.ReasonOf(err))
			continue
		}
		if rec.Heartbeat {
			continue
		}
		nonHeartbeat++
		k := sid{string(in.Stream), rec.Size, rec.ID}
		if firsts[k] {
			continue // a duplicate: the generator writes each partition in offset order
		}
		firsts[k] = true
		us := rec.MadeAtMicros()
		w := p.Window.Microseconds()
		window[k] = record.FormatMicros(floorDiv(us, w) * w)
	}

	// Every invalid record is dead, with its reason; every other dead row is
	// a duplicate.
	dups := 0
	seenDead := map[string]bool{}
	for _, d := range got.Dead {
		pos := fmt.Sprint(d.Stream, d.Partition, d.Offset)
		if seenDead[pos] {
			t.Fatalf("%s: dead row %+v reported twice", name, d)
		}
		seenDead[pos] = true
		if reason, ok := wantDead[pos]; ok {
			if d.Reason != reason {
				t.Fatalf("%s: dead row %+v, want reason %q", name, d, reason)
			}
			continue
		}
		if d.Reason != string(record.ReasonDuplicate) {
			t.Fatalf("%s: dead row %+v of a valid record should be a duplicate", name, d)
		}
		dups++
	}
	for pos := range wantDead {
		if !seenDead[pos] {
			t.Fatalf("%s: invalid record at %s is not dead", name, pos)
		}
	}

	// Each valid non-heartbeat record is in exactly one place: the first of each
	// (stream, size, id) in packed, unpacked, spare or late, the others dead.
	placed := map[sid]string{}
	place := func(k sid, where string) {
		if prev, ok := placed[k]; ok {
			t.Fatalf("%s: %+v is both %s and %s", name, k, prev, where)
		}
		if !firsts[k] {
			t.Fatalf("%s: %s row %+v matches no valid record", name, where, k)
		}
		placed[k] = where
	}
	for _, r := range got.Packed {
		place(sid{"toys", r.Size, r.ToyID}, "packed toy")
		place(sid{"boxes", r.Size, r.BoxID}, "packed box")
		if window[sid{"toys", r.Size, r.ToyID}] != r.WindowStart || window[sid{"boxes", r.Size, r.BoxID}] != r.WindowStart {
			t.Fatalf("%s: packed %+v: toy and box are not both of window %s", name, r, r.WindowStart)
		}
	}
	for _, r := range got.Unpacked {
		place(sid{"toys", r.Size, r.ToyID}, "unpacked")
	}
	for _, r := range got.Spare {
		place(sid{"boxes", r.Size, r.BoxID}, "spare")
	}
	for _, r := range got.Late {
		place(sid{r.Stream, r.Size, r.ID}, "late")
	}
	if len(placed) != len(firsts) {
		t.Fatalf("%s: %d distinct valid toys and boxes, %d placed", name, len(firsts), len(placed))
	}
	if len(placed)+dups != nonHeartbeat {
		t.Fatalf("%s: %d placed + %d duplicates != %d valid non-heartbeat records", name, len(placed), dups, nonHeartbeat)
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

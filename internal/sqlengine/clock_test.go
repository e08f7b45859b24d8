package sqlengine_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/sqlengine"
	"github.com/northpole-workshop/northpole/internal/testsupport/sqltest"
)

// clockRun is one randomized input aimed at the clock (the watermark,
// lateness and closing): made_at anywhere from the year 0000 to 9999 and at
// every distance from the record before, in either direction, W and L from
// one microsecond to centuries, and some (stream, line) spread over several
// partitions. Lines are sizes alone or with halls: halls that go quiet, halls
// that appear late, halls without final heartbeats, and keys on the edge of a
// line among the dead letters.
type clockRun struct {
	seed    int64
	w, l    time.Duration
	recs    []rec
	spread  bool  // some (stream, line) has records in several partitions
	maxSpan int64 // the most windows between two made_at of one (stream, line)
}

// clockLine is a line of a clock run and the records it writes, from index
// from to index to.
type clockLine struct {
	line, size string
	part       int32
	from, to   int
}

var (
	firstInstant = time.Date(0, 1, 2, 0, 0, 0, 0, time.UTC)
	lastInstant  = time.Date(9999, 12, 30, 0, 0, 0, 0, time.UTC)
)

// upTo is k*d, or a century when that is more (or would overflow): the
// largest step a run takes in nanoseconds.
func upTo(d time.Duration, k int64) time.Duration {
	const century = 100 * 365 * 24 * time.Hour
	if d > century/time.Duration(k) {
		return century
	}
	return d * time.Duration(k)
}

func randomClockRun(seed int64) clockRun {
	rng := rand.New(rand.NewPCG(uint64(seed), 13))
	pick := func(ds ...time.Duration) time.Duration { return ds[rng.IntN(len(ds))] }
	const year = 365 * 24 * time.Hour
	r := clockRun{
		seed: seed,
		w:    pick(time.Microsecond, 7*time.Microsecond, time.Second, 10*time.Second, time.Hour, 97*year),
		l:    pick(0, time.Microsecond, 3*time.Second, 10*time.Second, 25*time.Hour, 290*year),
	}
	centers := []time.Time{firstInstant.Add(time.Hour), time.Unix(0, 0).UTC(), time.Date(2026, 12, 24, 10, 0, 0, 0, time.UTC), lastInstant.Add(-time.Hour)}
	sizes := record.Sizes[:1+rng.IntN(2)]
	n := 60 + rng.IntN(240)
	var lines []clockLine
	halls := []string{"h1", "hall-7", "0", strings.Repeat("z", 32)}[:[]int{0, 1, 2, 4}[rng.IntN(4)]]
	for i, s := range sizes {
		if len(halls) == 0 || rng.IntN(2) == 0 {
			lines = append(lines, clockLine{line: s, size: s, part: int32(i), to: n})
		}
		for _, h := range halls {
			l := clockLine{line: record.JoinLine(s, h), size: s, part: int32(20 + rng.IntN(4)), to: n}
			switch rng.IntN(4) {
			case 0: // goes quiet
				l.to = rng.IntN(n)
			case 1: // appears late
				l.from = rng.IntN(n)
			}
			lines = append(lines, l)
		}
	}
	// Each line's clock walks from the run's center: the next record near
	// the one before it, or a distance away drawn on a log scale, in
	// nanoseconds or in years, up to the whole range. Toys and boxes share
	// the walk, so that they meet in windows.
	now := map[string]time.Time{}
	for _, l := range lines {
		now[l.line] = centers[rng.IntN(len(centers))]
	}
	step := func(t time.Time) time.Time {
		switch rng.IntN(6) {
		case 0, 1: // within two windows either way
			t = t.Add(time.Duration(rng.Int64N(int64(upTo(r.w, 4)))) - upTo(r.w, 2))
		case 2: // later, by at most L plus a window
			t = t.Add(time.Duration(rng.Int64N(int64(upTo(r.l, 1) + upTo(r.w, 1)/2 + 1))))
		case 3, 4: // any number of nanoseconds up to 2^62, either way
			d := time.Duration(rng.Int64N(int64(1) << (1 + rng.IntN(62))))
			if rng.IntN(2) == 0 {
				d = -d
			}
			t = t.Add(d)
		default: // up to 8192 years, either way
			y := rng.IntN(1 << rng.IntN(14))
			if rng.IntN(2) == 0 {
				y = -y
			}
			t = t.AddDate(y, 0, 0)
		}
		if t.Before(firstInstant) {
			return firstInstant
		}
		if t.After(lastInstant) {
			return lastInstant
		}
		return t
	}
	parts := map[string]int{} // stream/line -> partitions it uses
	for _, st := range []record.Stream{record.Toys, record.Boxes} {
		for _, l := range lines {
			parts[string(st)+"/"+l.line] = 1
			if rng.IntN(4) == 0 {
				parts[string(st)+"/"+l.line] = 2 + rng.IntN(2)
				r.spread = true
			}
		}
	}
	ids := map[string][]string{}
	lo, hi := map[string]int64{}, map[string]int64{}
	for i := range n {
		st := []record.Stream{record.Toys, record.Boxes}[rng.IntN(2)]
		var active []clockLine
		for _, l := range lines {
			if l.from <= i && i < l.to {
				active = append(active, l)
			}
		}
		if len(active) == 0 {
			active = lines
		}
		ln := active[rng.IntN(len(active))]
		size, key := ln.size, ln.line
		k := string(st) + "/" + key
		t := step(now[key])
		now[key] = t
		if us, ok := lo[k]; !ok || t.UnixMicro() < us {
			lo[k] = t.UnixMicro()
		}
		if us, ok := hi[k]; !ok || t.UnixMicro() > us {
			hi[k] = t.UnixMicro()
		}
		madeAt := formatRandomly(rng, t)
		var value string
		switch c := rng.IntN(20); {
		case c < 4:
			value = hbV(size, madeAt)
		case c < 5: // a dead letter, which must not move the clock
			value = toyV("dead", size, "2026-02-30T10:00:00Z")
			if rng.IntN(2) == 0 { // a key on the edge of a line: bad line or size not key
				value = toyV("dead", size, madeAt)
				key = []string{size + "/", size + "/Hall", key + "/x", "/" + key, size + "/-h", size + "/" + strings.Repeat("a", 33)}[rng.IntN(6)]
			}
		default:
			id := fmt.Sprintf("%s%d", st[:1], i)
			if len(ids[k]) > 0 && rng.IntN(8) == 0 {
				id = ids[k][rng.IntN(len(ids[k]))]
			}
			ids[k] = append(ids[k], id)
			if st == record.Toys {
				value = toyV(id, size, madeAt)
			} else {
				value = boxV(id, size, madeAt)
			}
		}
		x := raw(st, []byte(key), []byte(value)).in(ln.part)
		if n := parts[k]; n > 1 {
			x = x.in(ln.part + int32(10*rng.IntN(n)))
		}
		r.recs = append(r.recs, x)
	}
	// Final heartbeats close every window in two runs of three, of every
	// line but the halls that lose theirs; the others leave windows open.
	if rng.IntN(3) > 0 {
		for _, st := range []record.Stream{record.Toys, record.Boxes} {
			for _, l := range lines {
				if l.line != l.size && rng.IntN(5) == 0 {
					continue
				}
				r.recs = append(r.recs, raw(st, []byte(l.line), []byte(hbV(l.size, formatRandomly(rng, lastInstant)))).in(l.part))
			}
		}
	}
	for k := range hi {
		r.maxSpan = max(r.maxSpan, (hi[k]-lo[k])/r.w.Microseconds())
	}
	return r
}

// formatRandomly writes t as RFC 3339 in a random zone offset, with 0 to 9
// fraction digits (digits beyond the microsecond are dropped by every
// engine, and the truncation is a floor).
func formatRandomly(rng *rand.Rand, t time.Time) string {
	zone := time.FixedZone("", (rng.IntN(48*60-1)-(24*60-1))*60)
	layout := "2006-01-02T15:04:05"
	if digits := rng.IntN(10); digits > 0 {
		layout += "." + "000000000"[:digits]
	}
	return t.In(zone).Format(layout + "Z07:00")
}

func (r clockRun) String() string {
	return fmt.Sprintf("seed=%d W=%v L=%v records=%d spread=%v span=%d windows", r.seed, r.w, r.l, len(r.recs), r.spread, r.maxSpan)
}

// TestRandomizedClocksEqualReference: on inputs where made_at jumps by any
// distance in either direction, the SQL's lateness and closed windows equal
// the reference's (which computes prior_max record by record), on every
// engine, all five sets.
func TestRandomizedClocksEqualReference(t *testing.T) {
	const runs = 40
	sqltest.EachEngine(t, func(t *testing.T, e *sqlengine.Engine) {
		var total, late, packed, closedOnes, spread, deep, lateCopies, reused, dup, hallPairs, badLines int
		for i := range runs {
			r := randomClockRun(int64(i + 1))
			got := sqltest.RunAndCompare(t, e, inputs(r.recs...), r.w, r.l)
			if t.Failed() {
				t.Fatalf("%v: stopping at the first run that differs", r)
			}
			c := got.Counts()
			total += len(r.recs)
			late += c.Late
			packed += c.Packed
			closedOnes += c.Unpacked + c.Spare
			lc, ru := sqltest.IDReuse(got)
			lateCopies += lc
			reused += ru
			for _, d := range got.Dead {
				switch d.Reason {
				case string(record.ReasonDuplicate):
					dup++
				case string(record.ReasonBadLine):
					badLines++
				}
			}
			for _, p := range got.Packed {
				if p.Line != p.Size {
					hallPairs++
				}
			}
			if r.spread {
				spread++
			}
			// Records 2^40 windows apart meet only high in the tree.
			if r.maxSpan >= 1<<40 {
				deep++
			}
		}
		// Ids are reused at random here (see randomClockRun), so the runs
		// also exercise the second version of the contract: ids that are
		// items in several windows, late copies of one id, and duplicates
		// within a window.
		if late == 0 || packed == 0 || closedOnes == 0 || spread == 0 || deep == 0 || lateCopies == 0 || reused == 0 || dup == 0 || hallPairs == 0 || badLines == 0 {
			t.Errorf("the runs had %d late, %d packed, %d unpacked or spare rows, %d runs over several partitions, %d runs spanning 2^40 windows, %d late rows sharing an id, %d ids that are items in several windows, %d duplicates, %d pairs on lines with halls, %d bad lines: some case is not exercised",
				late, packed, closedOnes, spread, deep, lateCopies, reused, dup, hallPairs, badLines)
		}
		t.Logf("%d runs, %d input records: %d late, %d packed, %d unpacked or spare, %d runs over several partitions, %d spanning 2^40 windows or more, %d late rows sharing their id with another late row, %d ids items in several windows, %d duplicates, %d pairs on lines with halls, %d bad lines",
			runs, total, late, packed, closedOnes, spread, deep, lateCopies, reused, dup, hallPairs, badLines)
	})
}

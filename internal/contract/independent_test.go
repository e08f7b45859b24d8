package contract

// An independent implementation of the packing contract
// (docs/CONTRACT.md), written from the spec alone by someone
// who had not read Compute, record.Parse or docs/SEMANTICS.md, and a
// randomized differential test against Compute and record.Parse. It uses
// exact rational arithmetic for times and its own RFC 3339 reader, so that it
// shares as little as possible with the code under test (it does share
// encoding/json for the JSON grammar). Everything here is prefixed "ind" to
// stay clear of the package's own test helpers.
//
// When it was written it ran 45,000 random cases against Compute with no
// difference outside the disputed readings.
//
// It follows version 2 of the contract, again from the spec's text alone:
// late is tested before duplicate, a duplicate is an earlier toy or box of
// the same window with the same id (every such record is written down, late
// and duplicate ones included, as the spec words it), and late rows carry
// their partition and offset. It forgets the ids of a window as soon as the
// window has closed for their (stream, size), as the spec asks of streaming
// engines, and checks on every case that keeping them changes nothing. Its
// generator re-sends earlier items byte for byte (soon after, or long after,
// once or twice) and reuses ids in later windows; TestIndependentDifferential
// fails when those outcomes stop occurring.
//
// It follows version 3 too (packing lines), once more from the spec's words:
// the key is the line, "the key up to its first slash" is compared with the
// size, the rest must be a hall by the spec's sentence about halls, and every
// grouping that was per size is per line. Its generator writes lines with
// many halls, halls that go quiet and halls that appear late, keys on the edge
// of a line, and final heartbeats per line.
//
// Knobs: IND_CASES (default 2000), IND_SEED (first seed, default 1),
// IND_DISPUTED=1 (also generate inputs where the spec allows several
// readings; those cases are not compared, see docs/SEMANTICS.md, "Our
// readings of unclear points"), IND_EXACT_LATE=1 (write late made_at with
// every digit given instead of the project's nanoseconds, one such reading).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
)

// ---------------------------------------------------------------------------
// Validity, from the spec.

type indRec struct {
	in        record.Input
	valid     bool
	reason    string
	size      string
	line      string   // the key, when valid
	madeAt    *big.Rat // seconds since the Unix epoch, exact
	heartbeat bool
	id        string
	disputed  string // non-empty when my reading is one of several plausible ones
}

// indObject reads value as "UTF-8 text holding one JSON object". It returns the
// members (last duplicate wins) and whether some name occurs twice.
func indObject(value []byte) (map[string]json.RawMessage, bool, bool) {
	if !utf8.Valid(value) {
		return nil, false, false
	}
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, false, false
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, false, false
	}
	m := map[string]json.RawMessage{}
	dup := false
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, false, false
		}
		k, ok := kt.(string)
		if !ok {
			return nil, false, false
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, false, false
		}
		if _, seen := m[k]; seen {
			dup = true
		}
		m[k] = raw
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, false, false
	}
	// Nothing but white space after the object.
	rest := value[dec.InputOffset():]
	if len(bytes.Trim(rest, " \t\r\n")) != 0 {
		return nil, false, false
	}
	// The decoder accepts invalid escapes? json.Valid double-checks the grammar
	// (e.g. unescaped control characters, lone surrogates are allowed by JSON).
	if !json.Valid(value) {
		return nil, false, false
	}
	// "Every string is valid Unicode": encoding/json turns an escaped lone
	// surrogate into U+FFFD, the spec makes the record malformed.
	if indLoneSurrogate(value) {
		return nil, false, false
	}
	return m, dup, true
}

// indLoneSurrogate reports whether some string of the JSON text v (already
// known to be valid JSON) has a \u escape of a surrogate that is not a high
// one followed at once by an escaped low one.
func indLoneSurrogate(v []byte) bool {
	hex4 := func(i int) int {
		if i+6 > len(v) || v[i] != '\\' || v[i+1] != 'u' {
			return -1
		}
		n, err := strconv.ParseUint(string(v[i+2:i+6]), 16, 16)
		if err != nil {
			return -1
		}
		return int(n)
	}
	in := false
	for i := 0; i < len(v); i++ {
		switch {
		case !in:
			in = v[i] == '"'
		case v[i] == '"':
			in = false
		case v[i] == '\\' && v[i+1] != 'u':
			i++ // a one-character escape, perhaps \\
		case v[i] == '\\':
			c := hex4(i)
			switch {
			case c >= 0xdc00 && c <= 0xdfff:
				return true
			case c >= 0xd800 && c <= 0xdbff:
				if d := hex4(i + 6); d < 0xdc00 || d > 0xdfff {
					return true
				}
				i += 6
			}
			i += 5
		}
	}
	return false
}

func indString(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

func indDigits(s string, n int) (int, bool) {
	if len(s) != n {
		return 0, false
	}
	v := 0
	for i := 0; i < n; i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}

func indLeap(y int) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

func indDaysIn(y, m int) int {
	switch m {
	case 2:
		if indLeap(y) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// days since 1970-01-01 of a proleptic Gregorian date (Hinnant's algorithm).
func indDaysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

// indParseTime parses an RFC 3339 date-time (section 5.6) exactly. Leap
// seconds: accepted when, in UTC, they are 23:59:60 on the last day of a month
// (5.7 and appendix D), and then taken as the next day's 00:00:00 (POSIX).
// leap reports that case.
func indParseTime(s string) (t *big.Rat, leap bool, ok bool) {
	if len(s) < 20 {
		return nil, false, false
	}
	y, ok1 := indDigits(s[0:4], 4)
	mo, ok2 := indDigits(s[5:7], 2)
	d, ok3 := indDigits(s[8:10], 2)
	h, ok4 := indDigits(s[11:13], 2)
	mi, ok5 := indDigits(s[14:16], 2)
	se, ok6 := indDigits(s[17:19], 2)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || s[4] != '-' || s[7] != '-' ||
		(s[10] != 'T' && s[10] != 't') || s[13] != ':' || s[16] != ':' {
		return nil, false, false
	}
	if mo < 1 || mo > 12 || d < 1 || d > indDaysIn(y, mo) || h > 23 || mi > 59 || se > 60 {
		return nil, false, false
	}
	rest := s[19:]
	frac := ""
	if rest != "" && rest[0] == '.' {
		i := 1
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 1 {
			return nil, false, false
		}
		frac = rest[1:i]
		rest = rest[i:]
	}
	off := 0
	switch {
	case rest == "Z" || rest == "z":
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		oh, a := indDigits(rest[1:3], 2)
		om, b := indDigits(rest[4:6], 2)
		if !a || !b || oh > 23 || om > 59 {
			return nil, false, false
		}
		off = oh*3600 + om*60
		if rest[0] == '-' {
			off = -off
		}
	default:
		return nil, false, false
	}
	secs := indDaysFromCivil(y, mo, d)*86400 + int64(h*3600+mi*60+se) - int64(off)
	if se == 60 {
		// In UTC this must be 23:59:60 on the last day of a month.
		u := secs - 1 // 23:59:59 UTC of the same day, if it is a leap second
		tm := time.Unix(u, 0).UTC()
		if tm.Hour() != 23 || tm.Minute() != 59 || tm.Second() != 59 || tm.Day() != indDaysIn(tm.Year(), int(tm.Month())) {
			return nil, false, false
		}
		leap = true
	}
	r := new(big.Rat).SetInt64(secs)
	if frac != "" {
		num, _ := new(big.Int).SetString(frac, 10)
		den := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(len(frac))), nil)
		r.Add(r, new(big.Rat).SetFrac(num, den))
	}
	return r, leap, true
}

func indValidate(in record.Input) indRec {
	r := indRec{in: in}
	fail := func(reason string) indRec { r.reason = reason; return r }
	m, dupNames, ok := indObject(in.Value)
	if !ok {
		return fail("malformed json")
	}
	if dupNames {
		r.disputed = "duplicate member names"
	}
	if bytes.HasPrefix(in.Value, []byte("\xef\xbb\xbf")) {
		r.disputed = "byte order mark"
	}
	ms, ok := indString(m["made_at"])
	if !ok {
		return fail("bad made_at")
	}
	t, leap, ok := indParseTime(ms)
	if !ok {
		return fail("bad made_at")
	}
	if leap {
		r.disputed = "leap second"
	}
	size, ok := indString(m["size"])
	if !ok || (size != "S" && size != "M" && size != "L" && size != "XL") {
		return fail("bad size")
	}
	// The key is the record's packing line. Its size is the key up to its
	// first slash, or the whole key without one; what follows the slash must
	// be a hall, and nothing more (a second slash is no hall character).
	key := string(in.Key)
	keySize, hall, slashed := key, "", false
	if i := strings.Index(key, "/"); i >= 0 {
		keySize, hall, slashed = key[:i], key[i+1:], true
	}
	if size != keySize {
		return fail("size not key")
	}
	if slashed && !indHall(hall) {
		return fail("bad line")
	}
	idField := "toy_id"
	if in.Stream == record.Boxes {
		idField = "box_id"
	}
	hb := string(bytes.TrimSpace(m["heartbeat"])) == "true"
	id, isStr := indString(m[idField])
	if !hb && (!isStr || id == "") {
		if raw := bytes.TrimSpace(m[idField]); len(raw) > 0 && raw[0] != '"' && string(raw) != "null" {
			r.disputed = "non-string id"
		}
		return fail("no id")
	}
	r.valid, r.size, r.line, r.madeAt, r.heartbeat, r.id = true, size, key, t, hb, id
	return r
}

// indHall: "1 to 32 characters of a-z, 0-9 and -, the first a letter or a
// digit".
func indHall(h string) bool {
	const letters, digits = "abcdefghijklmnopqrstuvwxyz", "0123456789"
	if utf8.RuneCountInString(h) < 1 || utf8.RuneCountInString(h) > 32 || !utf8.ValidString(h) {
		return false
	}
	for i, c := range h {
		ok := strings.ContainsRune(letters+digits, c) || (i > 0 && c == '-')
		if !ok {
			return false
		}
	}
	return true
}

// ---------------------------------------------------------------------------
// The definitions and result sets.

func indRatDur(d time.Duration) *big.Rat { return new(big.Rat).SetFrac64(int64(d), 1e9) }

func indFloor(r *big.Rat) *big.Int {
	q := new(big.Int)
	m := new(big.Int)
	q.DivMod(r.Num(), r.Denom(), m) // Euclidean: floor for a positive denominator
	return q
}

// indFormat writes an exact instant in UTC, RFC 3339, with as many fractional
// digits as needed (all of them: no truncation).
func indFormat(r *big.Rat) string {
	sec := indFloor(r)
	frac := new(big.Rat).Sub(r, new(big.Rat).SetInt(sec))
	s := time.Unix(sec.Int64(), 0).UTC().Format("2006-01-02T15:04:05")
	if frac.Sign() != 0 {
		fs := frac.FloatString(60) // "0.xxxxx"
		fs = strings.TrimRight(fs[1:], "0")
		s += fs
	}
	return s + "Z"
}

var indBoundaryHits, indStartHits int

// indFormatLate formats a late record's made_at. The spec does not say how;
// by default floor to nanoseconds (what Compute does, found by this test);
// IND_EXACT_LATE=1 keeps every digit.
func indFormatLate(r *big.Rat) string {
	if os.Getenv("IND_EXACT_LATE") != "" {
		return indFormat(r)
	}
	ns := indFloor(new(big.Rat).Mul(r, new(big.Rat).SetInt64(1e9)))
	return indFormat(new(big.Rat).SetFrac(ns, big.NewInt(1e9)))
}

// indKey is a (stream, line); indWin a window of a line.
type indKey struct {
	stream record.Stream
	line   string
}

type indWin struct {
	line  string
	start string
}

type indOut struct {
	set    results.Set
	closed map[indWin]bool
	// every window with items, for ClosedOnly
	unpackedBy map[indWin][]results.Unpacked
	spareBy    map[indWin][]results.Spare
	disputed   []string
	// idsWritten counts the ids written down for duplicate detection;
	// idsHeld is the most held at once for one (stream, line).
	idsWritten, idsHeld int
}

// indCompute computes the five sets of inputs. With forget, it keeps the ids
// of a (stream, line) only for its windows that are still open, as the spec
// asks of a streaming engine; without, it keeps them all.
func indCompute(inputs []record.Input, W, L time.Duration, forget bool) indOut {
	w, l := indRatDur(W), indRatDur(L)
	var out indOut
	groups := map[indKey][]indRec{}
	sizeOfLine := map[string]string{}
	for _, in := range inputs {
		r := indValidate(in)
		if r.disputed != "" {
			out.disputed = append(out.disputed, r.disputed)
		}
		if !r.valid {
			out.set.Dead = append(out.set.Dead, results.Dead{Stream: string(in.Stream), Partition: in.Partition, Offset: in.Offset, Reason: r.reason})
			continue
		}
		k := indKey{in.Stream, r.line}
		groups[k] = append(groups[k], r)
		sizeOfLine[r.line] = r.size
	}
	type item struct {
		id  string
		off int64
	}
	items := map[indKey]map[string][]item{} // (X,l) -> window start -> items
	starts := map[indWin]*big.Rat{}
	maxOf := map[indKey]*big.Rat{}
	for k, g := range groups {
		sort.SliceStable(g, func(i, j int) bool {
			if g[i].in.Offset != g[j].in.Offset {
				return g[i].in.Offset < g[j].in.Offset
			}
			return g[i].in.Partition < g[j].in.Partition
		})
		var priorMax *big.Rat
		// The ids of each window of (X, l), by the window's start, with the
		// window's end, for the windows that are still open for (X, l). Every
		// toy or box is written down, late and duplicate ones too: the spec's
		// "an earlier valid record ... in the same window that is not a
		// heartbeat", literally. With forget, a window's ids are dropped once
		// priorMax - L reaches its end: every later record of that window is
		// late, and late is tested before duplicate, so nothing reads them
		// again. Without it they are kept to the end, which must change
		// nothing.
		type idsOf struct {
			end *big.Rat
			ids map[string]bool
		}
		open := map[string]*idsOf{}
		items[k] = map[string][]item{}
		for _, r := range g {
			ws := new(big.Rat).Mul(new(big.Rat).SetInt(indFloor(new(big.Rat).Quo(r.madeAt, w))), w)
			we := new(big.Rat).Add(ws, w)
			st := indFormat(ws)
			if priorMax != nil && !r.heartbeat && new(big.Rat).Sub(priorMax, l).Cmp(we) == 0 {
				indBoundaryHits++
			}
			if r.madeAt.Cmp(ws) == 0 {
				indStartHits++
			}
			// The window of r has closed for (X, l) when the greatest made_at
			// before r, minus L, has reached its end.
			closed := priorMax != nil && new(big.Rat).Sub(priorMax, l).Cmp(we) >= 0
			switch {
			case r.heartbeat:
			case closed:
				out.set.Late = append(out.set.Late, results.Late{Stream: string(k.stream), Partition: r.in.Partition, Offset: r.in.Offset,
					ID: r.id, Line: k.line, Size: r.size, MadeAt: indFormatLate(r.madeAt)})
			case open[st] != nil && open[st].ids[r.id]:
				out.set.Dead = append(out.set.Dead, results.Dead{Stream: string(r.in.Stream), Partition: r.in.Partition, Offset: r.in.Offset, Reason: "duplicate"})
			default:
				items[k][st] = append(items[k][st], item{r.id, r.in.Offset})
				starts[indWin{k.line, st}] = ws
			}
			if !r.heartbeat {
				if open[st] == nil {
					open[st] = &idsOf{end: we, ids: map[string]bool{}}
				}
				open[st].ids[r.id] = true
				out.idsWritten++
			}
			if priorMax == nil || r.madeAt.Cmp(priorMax) > 0 {
				priorMax = r.madeAt
			}
			held := 0
			for st, o := range open {
				if forget && new(big.Rat).Sub(priorMax, l).Cmp(o.end) >= 0 {
					delete(open, st)
					continue
				}
				held += len(o.ids)
			}
			out.idsHeld = max(out.idsHeld, held)
		}
		maxOf[k] = priorMax
	}
	out.closed = map[indWin]bool{}
	out.unpackedBy = map[indWin][]results.Unpacked{}
	out.spareBy = map[indWin][]results.Spare{}
	for win := range starts {
		toys := items[indKey{record.Toys, win.line}][win.start]
		boxes := items[indKey{record.Boxes, win.line}][win.start]
		size := sizeOfLine[win.line]
		n := min(len(toys), len(boxes))
		for i := 0; i < n; i++ {
			out.set.Packed = append(out.set.Packed, results.Packed{ToyID: toys[i].id, BoxID: boxes[i].id, Line: win.line, Size: size, WindowStart: win.start})
		}
		for _, t := range toys[n:] {
			u := results.Unpacked{ToyID: t.id, Line: win.line, Size: size, WindowStart: win.start}
			out.set.Unpacked = append(out.set.Unpacked, u)
			out.unpackedBy[win] = append(out.unpackedBy[win], u)
		}
		for _, b := range boxes[n:] {
			s := results.Spare{BoxID: b.id, Line: win.line, Size: size, WindowStart: win.start}
			out.set.Spare = append(out.set.Spare, s)
			out.spareBy[win] = append(out.spareBy[win], s)
		}
		// Closed: both watermarks (max made_at - L) have reached the end.
		ws := starts[win]
		we := new(big.Rat).Add(ws, w)
		closed := true
		for _, st := range []record.Stream{record.Toys, record.Boxes} {
			m := maxOf[indKey{st, win.line}]
			if m == nil || new(big.Rat).Sub(m, l).Cmp(we) < 0 {
				closed = false
			}
		}
		out.closed[win] = closed
	}
	out.set.Sort()
	return out
}

// indClosedOnly is my reading of "final": unpacked and spare only of closed
// windows, everything else unchanged.
func indClosedOnly(o indOut) results.Set {
	s := o.set
	s.Unpacked, s.Spare = nil, nil
	for win, c := range o.closed {
		if c {
			s.Unpacked = append(s.Unpacked, o.unpackedBy[win]...)
			s.Spare = append(s.Spare, o.spareBy[win]...)
		}
	}
	s.Sort()
	return s
}

// ---------------------------------------------------------------------------
// Generator.

type indGen struct {
	rnd                  *rand.Rand
	W, L                 time.Duration
	base                 time.Time
	sizes                []string
	lines                []indLine
	parts                map[record.Stream]map[string]int32
	next                 map[record.Stream]map[int32]int64
	clock                map[indKey]time.Duration // offset from base, the elves' rough clock
	ids                  map[indKey][]string
	sent                 map[indKey][][]byte // the values of the items written, to send again
	all                  []string
	n                    int
	out                  []record.Input
	kinds                map[string]int
	kindOf               map[[3]int64]string
	finals, missingFinal bool
}

// indLine is a packing line the elves write, from step from to step to
// (halls that go quiet, halls that appear late).
type indLine struct {
	line, size string
	from, to   int
}

// indHalls: names the spec allows, the longest (32) among them.
var indHalls = []string{"h", "hall-7", "9", "x-", "north-2", "abcdefghijklmnopqrstuvwxyz-01234", "0a"}

var indWs = []time.Duration{time.Microsecond, 3 * time.Microsecond, 1300 * time.Microsecond, time.Hour, time.Second, 2 * time.Second, 3 * time.Second, 5 * time.Second, 10 * time.Second, 7 * time.Second, 1500 * time.Millisecond, 250 * time.Millisecond, time.Minute}

func indNewGen(seed int64) *indGen {
	rnd := rand.New(rand.NewSource(seed))
	g := &indGen{rnd: rnd, kinds: map[string]int{}}
	g.W = indWs[rnd.Intn(len(indWs))]
	switch rnd.Intn(7) {
	case 0:
		g.L = 0
	case 1:
		g.L = g.W
	case 2:
		g.L = g.W / 2
	case 3:
		g.L = 2*g.W + (g.W / 3).Truncate(time.Microsecond)
	case 4:
		g.L = time.Duration(rnd.Intn(20)) * 500 * time.Millisecond
	case 5:
		g.L = 5 * time.Second
	default:
		g.L = time.Duration(rnd.Intn(4000)) * time.Millisecond
	}
	switch rnd.Intn(9) {
	case 8:
		g.base = time.Date(9999, 12, 31, 23, 59, 50, 0, time.UTC) // toward year 10000 in UTC
	case 0:
		g.base = time.Unix(-20, 0).UTC() // straddle the epoch: floor of negatives
	case 1:
		g.base = time.Date(0, 1, 1, 0, 0, 3, 0, time.UTC) // year 0000
	case 2:
		g.base = time.Date(2026, 12, 24, 10, 0, 0, 0, time.UTC).Add(time.Duration(rnd.Intn(1000)) * time.Millisecond)
	default:
		g.base = time.Date(2026, 12, 24, 10, 0, 0, 0, time.UTC)
	}
	all := []string{"S", "M", "L", "XL"}
	rnd.Shuffle(4, func(i, j int) { all[i], all[j] = all[j], all[i] })
	g.sizes = all[:1+rnd.Intn(4)]
	// Lines: sizes alone, sizes in halls, or both.
	halls := indHalls[:[]int{0, 0, 1, 3, len(indHalls)}[rnd.Intn(5)]]
	for _, z := range g.sizes {
		if len(halls) == 0 || rnd.Intn(3) > 0 {
			g.lines = append(g.lines, indLine{line: z, size: z, to: 1 << 30})
		}
		for _, h := range halls {
			g.lines = append(g.lines, indLine{line: z + "/" + h, size: z, to: 1 << 30})
		}
	}
	g.parts = map[record.Stream]map[string]int32{}
	g.next = map[record.Stream]map[int32]int64{}
	for _, s := range []record.Stream{record.Toys, record.Boxes} {
		np := 1 + rnd.Intn(4)
		if len(halls) > 0 {
			np = 1 + rnd.Intn(9)
		}
		g.parts[s] = map[string]int32{}
		for _, z := range all {
			g.parts[s][z] = int32(rnd.Intn(np))
			for _, h := range indHalls {
				g.parts[s][z+"/"+h] = int32(rnd.Intn(np))
			}
		}
		g.next[s] = map[int32]int64{}
	}
	g.clock = map[indKey]time.Duration{}
	g.ids = map[indKey][]string{}
	g.sent = map[indKey][][]byte{}
	return g
}

func (g *indGen) pick(xs []string) string { return xs[g.rnd.Intn(len(xs))] }

// timeText writes t in one of RFC 3339's many forms.
func (g *indGen) timeText(t time.Time) string {
	var zone *time.Location
	switch g.rnd.Intn(6) {
	case 0:
		zone = time.FixedZone("", 3600)
	case 1:
		zone = time.FixedZone("", -(5*3600 + 1800))
	case 2:
		zone = time.FixedZone("", 14*3600)
	default:
		zone = time.UTC
	}
	lt := t.In(zone)
	s := lt.Format("2006-01-02T15:04:05")
	ns := lt.Nanosecond()
	switch g.rnd.Intn(5) {
	case 0:
		s += fmt.Sprintf(".%09d", ns)
	case 1:
		if ns%1e6 == 0 {
			s += fmt.Sprintf(".%03d", ns/1e6)
		} else {
			s += fmt.Sprintf(".%09d", ns)
		}
	default:
		if ns != 0 {
			s += strings.TrimRight(fmt.Sprintf(".%09d", ns), "0")
		}
	}
	if strings.Contains(s, ".") {
	} else if g.rnd.Intn(10) == 0 && ns == 0 {
		s += ".000000000000" // more than nanosecond digits
	} else if g.rnd.Intn(10) == 0 && ns == 0 {
		s += fmt.Sprintf(".%012d", g.rnd.Int63n(1e12)) // beyond nanoseconds
	} else if g.rnd.Intn(20) == 0 && ns == 0 {
		s += "." + strings.Repeat("9", 10+g.rnd.Intn(5)) // just below the next second
	}
	_, off := lt.Zone()
	if off == 0 {
		switch g.rnd.Intn(6) {
		case 0:
			s += "z"
		case 1:
			s += "+00:00"
		case 2:
			s += "-00:00"
		default:
			s += "Z"
		}
	} else {
		s += lt.Format("-07:00")
	}
	if g.rnd.Intn(15) == 0 {
		s = s[:10] + "t" + s[11:]
	}
	return s
}

// madeAt chooses a made_at for (X, l), moving the elves' clock.
func (g *indGen) madeAt(k indKey) time.Time {
	c := g.clock[k]
	step := time.Duration(g.rnd.Intn(6)) * 250 * time.Millisecond
	c += step
	g.clock[k] = c
	var d time.Duration
	switch r := g.rnd.Intn(20); {
	case r < 10:
		d = c
	case r < 13: // disorder
		d = c - time.Duration(g.rnd.Intn(8))*250*time.Millisecond
	case r < 15: // far behind the max: late
		d = c - g.L - g.W - time.Duration(g.rnd.Intn(20))*250*time.Millisecond
		if g.rnd.Intn(3) == 0 {
			d -= time.Duration(1 + g.rnd.Intn(999999))
		}
	case r < 17: // on the lateness boundary: window_end + L == current clock
		we := c - g.L
		// round down to a window end relative to the epoch
		abs := g.base.Add(we)
		// Truncate is relative to the zero time, not the epoch.
		ws := time.Unix(0, 0).Add(time.Duration(indFloorDiv(abs.Sub(time.Unix(0, 0)), g.W)) * g.W)
		if abs.Year() < 1700 {
			ws = abs.Truncate(g.W)
		}
		d = ws.Sub(g.base) - time.Duration(1+g.rnd.Intn(3))*time.Nanosecond*time.Duration([]int64{1, 1000, 250e6}[g.rnd.Intn(3)])
		if g.rnd.Intn(2) == 0 {
			d = ws.Sub(g.base) - g.W // exactly the window start
		}
	case r < 19: // exactly on a window boundary
		abs := g.base.Add(c)
		d = time.Unix(0, 0).Add(time.Duration(indFloorDiv(abs.Sub(time.Unix(0, 0)), g.W))*g.W).Sub(g.base) + time.Duration(g.rnd.Intn(2))*g.W
		if abs.Year() < 1700 {
			d = abs.Truncate(g.W).Sub(g.base)
		}
	default: // fine fractions
		d = c + time.Duration(g.rnd.Intn(1000))*time.Microsecond + time.Duration(g.rnd.Intn(3))*time.Nanosecond
	}
	return g.base.Add(d)
}

func indFloorDiv(a, b time.Duration) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return int64(q)
}

// emit writes a record with key in the partition of line (a bad key goes
// where its elf's line goes).
func (g *indGen) emit(s record.Stream, key string, line string, value []byte, kind string) {
	p := g.parts[s][line]
	if _, ok := g.parts[s][line]; !ok {
		p = int32(g.rnd.Intn(4))
	}
	off := g.next[s][p]
	g.next[s][p] = off + 1 + int64(g.rnd.Intn(3)/2)
	var k []byte
	if key != "\x00nil" {
		k = []byte(key)
	}
	g.out = append(g.out, record.Input{Stream: s, Topic: string(s), Partition: p, Offset: off, Key: k, Value: value})
	g.kinds[kind]++
	if g.kindOf == nil {
		g.kindOf = map[[3]int64]string{}
	}
	g.kindOf[indPos(g.out[len(g.out)-1])] = kind
}

func indPos(x record.Input) [3]int64 {
	st := int64(0)
	if x.Stream == record.Boxes {
		st = 1
	}
	return [3]int64{st, int64(x.Partition), x.Offset}
}

func (g *indGen) newID(k indKey) string {
	g.n++
	var id string
	switch g.rnd.Intn(10) {
	case 0: // an id another stream / line uses too
		if len(g.all) > 0 {
			id = g.pick(g.all)
			break
		}
		fallthrough
	default:
		id = fmt.Sprintf("%s%d", string(k.stream)[:1], g.n)
	}
	g.all = append(g.all, id)
	return id
}

func indJSON(fields [][2]string) []byte {
	var b strings.Builder
	b.WriteString("{")
	for i, f := range fields {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(f[0]) + ": " + f[1])
	}
	b.WriteString("}")
	return []byte(b.String())
}

func q(s string) string { b, _ := json.Marshal(s); return string(b) }

// step emits one record for (s, line).
func (g *indGen) step(s record.Stream, line string, disputed bool) {
	k := indKey{s, line}
	size := line
	if i := strings.Index(line, "/"); i >= 0 {
		size = line[:i]
	}
	idf := "toy_id"
	if s == record.Boxes {
		idf = "box_id"
	}
	ma := g.timeText(g.madeAt(k))
	good := func(id string) [][2]string {
		f := [][2]string{{idf, q(id)}, {"size", q(size)}, {"elf", q("alabaster")}, {"made_at", q(ma)}}
		if s == record.Toys {
			f = append(f, [2]string{"kind", q("teddy-bear")})
		}
		g.rnd.Shuffle(len(f), func(i, j int) { f[i], f[j] = f[j], f[i] })
		return f
	}
	r := g.rnd.Intn(100)
	switch {
	case r < 55:
		id := g.newID(k)
		g.ids[k] = append(g.ids[k], id)
		f := good(id)
		if g.rnd.Intn(10) == 0 {
			f = append(f, [2]string{"extra", `{"a": [1, 2, null], "heartbeat": false}`})
		}
		v := indJSON(f)
		if g.rnd.Intn(10) == 0 {
			v = append(append([]byte(" \n\t"), v...), "\r\n "...)
		}
		g.sent[k] = append(g.sent[k], v)
		g.emit(s, line, line, v, "item")
	case r < 63: // an elf sends an item again, the same bytes, at a later offset
		if len(g.sent[k]) == 0 {
			g.step(s, line, disputed)
			return
		}
		// The last one is most likely still in an open window (a duplicate);
		// an older one, after the clock moved on, is late, its id an item of
		// its window. Sometimes twice: two late rows of one id.
		kind, v := "resend-old", g.sent[k][g.rnd.Intn(len(g.sent[k]))]
		if g.rnd.Intn(3) == 0 {
			kind, v = "resend-last", g.sent[k][len(g.sent[k])-1]
		}
		for range 1 + g.rnd.Intn(2) {
			g.emit(s, line, line, v, kind)
		}
	case r < 70: // an id of (X, l) made again now: a duplicate in the same window, a new item in a later one
		if len(g.ids[k]) == 0 {
			g.step(s, line, disputed)
			return
		}
		id := g.pick(g.ids[k])
		if g.rnd.Intn(5) == 0 && id != "" && id[0] >= 'a' && id[0] <= 'z' {
			// the same id, written with an escape
			v := indJSON(good("\x00"))
			v = bytes.Replace(v, []byte(`"\u0000"`), []byte(fmt.Sprintf(`"\u%04x%s"`, id[0], id[1:])), 1)
			g.emit(s, line, line, v, "dup-escaped")
			return
		}
		g.emit(s, line, line, indJSON(good(id)), "dup")
	case r < 77: // heartbeat
		f := [][2]string{{"heartbeat", "true"}, {"size", q(size)}, {"elf", q("pepper")}, {"made_at", q(ma)}}
		switch g.rnd.Intn(4) {
		case 0: // a heartbeat carrying an id, maybe one already used
			id := g.newID(k)
			if len(g.ids[k]) > 0 && g.rnd.Intn(2) == 0 {
				id = g.pick(g.ids[k])
			}
			f = append(f, [2]string{idf, q(id)})
		case 1:
			f = append(f, [2]string{idf, `""`})
		}
		g.emit(s, line, line, indJSON(f), "heartbeat")
	default:
		g.bad(s, line, size, ma, good, disputed)
	}
}

func (g *indGen) bad(s record.Stream, line, size, ma string, good func(string) [][2]string, disputed bool) {
	k := indKey{s, line}
	idf := "toy_id"
	if s == record.Boxes {
		idf = "box_id"
	}
	other := g.pick([]string{"S", "M", "L", "XL"})
	for other == size {
		other = g.pick([]string{"S", "M", "L", "XL"})
	}
	id := g.newID(k)
	valid := string(indJSON(good(id)))
	replace := func(field, val string) [][2]string {
		f := good(id)
		for i := range f {
			if f[i][0] == field {
				f[i][1] = val
			}
		}
		return f
	}
	drop := func(field string) [][2]string {
		var out [][2]string
		for _, x := range good(id) {
			if x[0] != field {
				out = append(out, x)
			}
		}
		return out
	}
	type bc struct {
		kind  string
		key   string
		value []byte
	}
	secondSlash := line + "/b" // a hall and then more
	if line == size {
		secondSlash = size + "/a/b"
	}
	cases := []bc{
		{"malformed:truncated", line, []byte(valid[:len(valid)-3])},
		{"malformed:single-quotes", line, []byte(strings.ReplaceAll(valid, `"`, `'`))},
		{"malformed:array", line, []byte("[" + valid + "]")},
		{"malformed:null", line, []byte("null")},
		{"malformed:nil", line, nil},
		{"malformed:empty", line, []byte("")},
		{"malformed:two", line, []byte(valid + valid)},
		{"malformed:garbage", line, []byte(valid + "x")},
		{"malformed:badutf8", line, bytes.Replace([]byte(valid), []byte(`alabaster`), []byte("ala\xffbaster"), 1)},
		{"malformed:string", line, []byte(q(valid))},
		{"malformed:nul-after", line, []byte(valid + "\x00")},
		{"malformed:ctrl", line, bytes.Replace([]byte(valid), []byte(`alabaster`), []byte("ala\tbaster"), 1)},
		{"malformed:trailing-comma", line, []byte(valid[:len(valid)-1] + ",}")},
		{"bad_made_at:missing", line, indJSON(drop("made_at"))},
		{"bad_made_at:number", line, indJSON(replace("made_at", "1798106400"))},
		{"bad_made_at:null", line, indJSON(replace("made_at", "null"))},
		{"bad_made_at:space", line, indJSON(replace("made_at", q(strings.Replace(ma, "T", " ", 1))))},
		{"bad_made_at:nozone", line, indJSON(replace("made_at", q("2026-12-24T10:00:00")))},
		{"bad_made_at:hour24", line, indJSON(replace("made_at", q("2026-12-24T24:00:00Z")))},
		{"bad_made_at:feb30", line, indJSON(replace("made_at", q("2026-02-30T10:00:00Z")))},
		{"bad_made_at:feb29", line, indJSON(replace("made_at", q("2026-02-29T10:00:00Z")))},
		{"bad_made_at:empty", line, indJSON(replace("made_at", `""`))},
		{"bad_made_at:comma", line, indJSON(replace("made_at", q("2026-12-24T10:00:00,5Z")))},
		{"bad_made_at:offset-nocolon", line, indJSON(replace("made_at", q("2026-12-24T10:00:00+0100")))},
		{"bad_made_at:offset24", line, indJSON(replace("made_at", q("2026-12-24T10:00:00+24:00")))},
		{"bad_made_at:onedigit", line, indJSON(replace("made_at", q("2026-12-24T1:00:00Z")))},
		{"bad_made_at:leap-not-end-of-month", line, indJSON(replace("made_at", q("2026-12-24T10:00:60Z")))},
		{"bad_made_at:fiveyear", line, indJSON(replace("made_at", q("12026-12-24T10:00:00Z")))},
		{"bad_made_at:unix-string", line, indJSON(replace("made_at", q("1798106400")))},
		{"valid:escaped-made_at-Z", line, indJSON(replace("made_at", strings.Replace(q(ma), "Z", `\u005a`, 1)))},
		{"bad_size:xxl", "XXL", indJSON(replace("size", q("XXL")))},
		{"bad_size:lower", strings.ToLower(size), indJSON(replace("size", q(strings.ToLower(size))))},
		{"bad_size:number", line, indJSON(replace("size", "2"))},
		{"bad_size:missing", line, indJSON(drop("size"))},
		{"bad_size:null", line, indJSON(replace("size", "null"))},
		{"bad_size:array", line, indJSON(replace("size", "["+q(size)+"]"))},
		{"bad_size:space", line, indJSON(replace("size", q(size+" ")))},
		{"size_not_key:other", other, []byte(valid)},
		{"size_not_key:nilkey", "\x00nil", []byte(valid)},
		{"size_not_key:lowerkey", strings.ToLower(size), []byte(valid)},
		{"size_not_key:heartbeat", other, indJSON([][2]string{{"heartbeat", "true"}, {"size", q(size)}, {"made_at", q(ma)}})},
		{"size_not_key:hall-of-other", other + "/h", []byte(valid)},
		{"size_not_key:slash-first", "/" + size, []byte(valid)},
		{"size_not_key:space-before-slash", size + " /h", []byte(valid)},
		{"bad_line:empty-hall", size + "/", []byte(valid)},
		{"bad_line:second-slash", secondSlash, []byte(valid)},
		{"bad_line:two-slashes", size + "//h", []byte(valid)},
		{"bad_line:upper", size + "/Hall", []byte(valid)},
		{"bad_line:33", size + "/" + strings.Repeat("a", 33), []byte(valid)},
		{"bad_line:dash-first", size + "/-h", []byte(valid)},
		{"bad_line:underscore", size + "/h_1", []byte(valid)},
		{"bad_line:not-utf8", size + "/h\xff", []byte(valid)},
		{"bad_line:non-ascii", size + "/é", []byte(valid)},
		{"bad_line:heartbeat", size + "/H", indJSON([][2]string{{"heartbeat", "true"}, {"size", q(size)}, {"made_at", q(ma)}})},
		{"bad_line:no-id-too", size + "/", indJSON(drop(idf))},
		{"no_id:missing", line, indJSON(drop(idf))},
		{"no_id:empty", line, indJSON(replace(idf, `""`))},
		{"no_id:null", line, indJSON(replace(idf, "null"))},
		{"no_id:hb-false", line, indJSON(append(drop(idf), [2]string{"heartbeat", "false"}))},
		{"no_id:hb-string", line, indJSON(append(drop(idf), [2]string{"heartbeat", `"true"`}))},
		{"no_id:hb-one", line, indJSON(append(drop(idf), [2]string{"heartbeat", `1`}))},
		{"no_id:other-stream-id", line, indJSON(append(drop(idf), [2]string{map[string]string{"toy_id": "box_id", "box_id": "toy_id"}[idf], q("x")}))},
		{"valid:escaped-made_at-T", line, indJSON(replace("made_at", q(ma)[:11]+`\u0054`+q(ma)[12:]))},
		{"valid:null-extra", line, indJSON(append(good(id), [2]string{"extra", "null"}))},
		{"valid:hb-and-id-number", line, indJSON(append(replace(idf, "42"), [2]string{"heartbeat", "true"}))},
		{"valid:hb-with-bad-kind", line, indJSON(append(replace("kind", "7"), [2]string{"heartbeat", "true"}))},
	}
	if disputed {
		cases = append(cases,
			bc{"disputed:id-number", line, indJSON(replace(idf, "42"))},
			bc{"disputed:id-true", line, indJSON(replace(idf, "true"))},
			bc{"disputed:dupnames-id", line, []byte("{" + q(idf) + ": \"\", " + valid[1:])},
			bc{"disputed:dupnames-hb", line, indJSON(append(append(drop(idf), [2]string{"heartbeat", "true"}), [2]string{"heartbeat", "false"}))},
			bc{"disputed:dupnames-size", line, []byte(strings.Replace(valid, "{", `{"size": "XXL", `, 1))},
			bc{"disputed:bom", line, []byte("\ufeff" + valid)},
			bc{"disputed:leap", line, indJSON(replace("made_at", q("2016-12-31T23:59:60Z")))},
			bc{"disputed:leap-offset", line, indJSON(replace("made_at", q("2017-01-01T00:59:60+01:00")))},
			bc{"disputed:lone-surrogate", line, indJSON(replace(idf, `"\ud800"`))},
		)
	}
	c := cases[g.rnd.Intn(len(cases))]
	if c.value != nil && len(c.value) == 0 && c.kind != "malformed:empty" {
		c = cases[0]
	}
	g.emit(s, c.key, line, c.value, c.kind)
}

func indGenerate(seed int64, disputed bool) (*indGen, []record.Input) {
	g := indNewGen(seed)
	n := []int{3, 8, 20, 60, 150}[g.rnd.Intn(5)]
	// Some halls go quiet after a while, some appear late.
	for i := range g.lines {
		switch g.rnd.Intn(4) {
		case 0:
			g.lines[i].to = g.rnd.Intn(n + 1)
		case 1:
			g.lines[i].from = g.rnd.Intn(n + 1)
		}
	}
	// Occasionally one line is quiet on one stream (empty windows, unclosed windows).
	for i := 0; i < n; i++ {
		s := record.Toys
		if g.rnd.Intn(2) == 0 {
			s = record.Boxes
		}
		var now []string
		for _, l := range g.lines {
			if l.from <= i && i < l.to {
				now = append(now, l.line)
			}
		}
		if len(now) == 0 {
			now = []string{g.lines[g.rnd.Intn(len(g.lines))].line}
		}
		g.step(s, g.pick(now), disputed)
	}
	if g.rnd.Intn(2) == 0 { // the elves' final heartbeats, one per line and stream
		g.finals = true
		var hi time.Duration
		for _, c := range g.clock {
			hi = max(hi, c)
		}
		for _, l := range g.lines {
			for _, s := range []record.Stream{record.Toys, record.Boxes} {
				if g.rnd.Intn(6) == 0 {
					g.missingFinal = true
					continue
				}
				t := g.base.Add(hi + 2*g.W + g.L + time.Second + time.Duration(g.rnd.Intn(3))*g.W)
				f := [][2]string{{"heartbeat", "true"}, {"size", q(l.size)}, {"made_at", q(g.timeText(t))}}
				g.emit(s, l.line, l.line, indJSON(f), "final-heartbeat")
			}
		}
	}
	in := g.out
	if g.rnd.Intn(2) == 0 {
		g.rnd.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
	}
	return g, in
}

// ---------------------------------------------------------------------------
// Comparison.

func indDescribe(in []record.Input, W, L time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "W=%v L=%v\n", W, L)
	for _, x := range in {
		key := strconv.Quote(string(x.Key))
		if x.Key == nil {
			key = "nil"
		}
		val := strconv.Quote(string(x.Value))
		if x.Value == nil {
			val = "nil"
		}
		fmt.Fprintf(&b, "  %s p%d o%d key=%s %s\n", x.Stream, x.Partition, x.Offset, key, val)
	}
	return b.String()
}

func indDiff(a, b results.Set) []results.Diff { return results.Compare(a, b) }

// indMinimize removes records while differs still holds.
func indMinimize(in []record.Input, differs func([]record.Input) bool) []record.Input {
	cur := append([]record.Input(nil), in...)
	for changed := true; changed; {
		changed = false
		for i := 0; i < len(cur); i++ {
			try := append(append([]record.Input(nil), cur[:i]...), cur[i+1:]...)
			if differs(try) {
				cur, changed = try, true
				i--
			}
		}
	}
	return cur
}

func indSetString(s results.Set) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// indOutcomes counts, in my results, what version 2 of the spec decides
// differently from version 1, so that the test knows its generator makes it.
type indOutcomes struct {
	LateOfAnItem  int // a late record whose id is an item of its window: a re-send after the window closed
	ItemTwice     int // an id that is an item in two windows of one (stream, line)
	TwoLateRows   int // a second late row with the same (stream, line, id)
	Duplicates    int // a repeat in an open window
	LateResends   int // a late record with the very bytes of an earlier record
	SameBytesDups int // a duplicate with the very bytes of an earlier record
	// Version 3: pairs on lines with halls, an id that is an item in one
	// window on two lines, and bad lines.
	HallPairs, ItemOnTwoLines, BadLines int
}

func (o *indOutcomes) add(in []record.Input, W time.Duration, set results.Set) {
	type win struct{ stream, line, start, id string }
	items := map[win]bool{}
	for _, p := range set.Packed {
		items[win{"toys", p.Line, p.WindowStart, p.ToyID}] = true
		items[win{"boxes", p.Line, p.WindowStart, p.BoxID}] = true
		if strings.Contains(p.Line, "/") {
			o.HallPairs++
		}
	}
	for _, u := range set.Unpacked {
		items[win{"toys", u.Line, u.WindowStart, u.ToyID}] = true
	}
	for _, sp := range set.Spare {
		items[win{"boxes", sp.Line, sp.WindowStart, sp.BoxID}] = true
	}
	perID := map[[3]string]int{}
	perWindowID := map[[3]string]int{}
	for k := range items {
		id := [3]string{k.stream, k.line, k.id}
		if perID[id]++; perID[id] == 2 {
			o.ItemTwice++
		}
		wid := [3]string{k.stream, k.start, k.id}
		if perWindowID[wid]++; perWindowID[wid] == 2 {
			o.ItemOnTwoLines++
		}
	}
	at := map[[3]int64]record.Input{}
	for _, x := range in {
		at[indPos(x)] = x
	}
	// sameBytes: an earlier record of the same stream and partition has
	// exactly this value.
	sameBytes := func(x record.Input) bool {
		for _, y := range in {
			if y.Stream == x.Stream && y.Partition == x.Partition && y.Offset < x.Offset && bytes.Equal(y.Value, x.Value) {
				return true
			}
		}
		return false
	}
	w := indRatDur(W)
	lateIDs := map[[3]string]int{}
	for _, l := range set.Late {
		id := [3]string{l.Stream, l.Line, l.ID}
		if lateIDs[id]++; lateIDs[id] == 2 {
			o.TwoLateRows++
		}
		x := at[indPos(record.Input{Stream: record.Stream(l.Stream), Partition: l.Partition, Offset: l.Offset})]
		r := indValidate(x)
		start := indFormat(new(big.Rat).Mul(new(big.Rat).SetInt(indFloor(new(big.Rat).Quo(r.madeAt, w))), w))
		if items[win{l.Stream, l.Line, start, l.ID}] {
			o.LateOfAnItem++
		}
		if sameBytes(x) {
			o.LateResends++
		}
	}
	for _, d := range set.Dead {
		if d.Reason == "bad line" {
			o.BadLines++
		}
		if d.Reason == "duplicate" {
			o.Duplicates++
			if sameBytes(at[indPos(record.Input{Stream: record.Stream(d.Stream), Partition: d.Partition, Offset: d.Offset})]) {
				o.SameBytesDups++
			}
		}
	}
}

// require fails when my generator no longer makes one of the outcomes.
func (o indOutcomes) require(t *testing.T) {
	t.Helper()
	for name, n := range map[string]int{
		"late record whose id is an item of its window": o.LateOfAnItem,
		"id that is an item of two windows":             o.ItemTwice,
		"two late rows of one id":                       o.TwoLateRows,
		"duplicate":                                     o.Duplicates,
		"late re-sent record":                           o.LateResends,
		"re-sent record that is a duplicate":            o.SameBytesDups,
		"pair on a line with a hall":                    o.HallPairs,
		"id that is an item on two lines":               o.ItemOnTwoLines,
		"bad line":                                      o.BadLines,
	} {
		if n < 50 {
			t.Errorf("the generator made %d of: %s", n, name)
		}
	}
}

func TestIndependentDifferential(t *testing.T) {
	cases := 2000
	if v := os.Getenv("IND_CASES"); v != "" {
		cases, _ = strconv.Atoi(v)
	}
	disputed := os.Getenv("IND_DISPUTED") != ""
	seed0 := int64(1)
	if v := os.Getenv("IND_SEED"); v != "" {
		seed0, _ = strconv.ParseInt(v, 10, 64)
	}
	kinds := map[string]int{}
	var rowTotals [5]int
	closedWins, openWins, quiescent := 0, 0, 0
	records, diffCases, closedDiffCases, skipped, refused := 0, 0, 0, 0, 0
	idsWritten, idsHeld := 0, 0
	var outcomes indOutcomes
	validityDis := map[string]string{}
	validityN := map[string]int{}
	seenDiff := map[string]bool{}
	reasonDis := map[string]string{}
	for c := 0; c < cases; c++ {
		g, in := indGenerate(seed0+int64(c), disputed)
		for k, n := range g.kinds {
			kinds[k] += n
		}
		records += len(in)
		W, L := g.W, g.L
		p := Params{Window: W, Lateness: L}
		if err := p.Validate(); err != nil {
			refused++
			t.Logf("Params{%v,%v} refused: %v", W, L, err)
			continue
		}
		// Validity: mine against record.Parse.
		for _, x := range in {
			mine := indValidate(x)
			_, err := record.Parse(x.Stream, x.Key, x.Value)
			theirs := string(record.ReasonOf(err))
			if mine.valid != (err == nil) {
				k := g.kindOf[indPos(x)]
				validityN[k]++
				validityDis[k] = fmt.Sprintf("%s %q key=%q: mine valid=%v %q, Parse %v", x.Stream, x.Value, x.Key, mine.valid, mine.reason, err)
			} else if !mine.valid && mine.reason != theirs {
				k := g.kindOf[indPos(x)]
				reasonDis[k] = fmt.Sprintf("%s %q key=%q: mine %q, Parse %q", x.Stream, x.Value, x.Key, mine.reason, theirs)
			}
		}
		mineOut := indCompute(in, W, L, true)
		if len(mineOut.disputed) > 0 {
			skipped++
			continue
		}
		// Forgetting the ids of closed windows must change nothing.
		if d := indDiff(indCompute(in, W, L, false).set, mineOut.set); len(d) > 0 {
			t.Errorf("seed %d: keeping the ids of closed windows changed the result: %+v\n%s", seed0+int64(c), d, indDescribe(in, W, L))
		}
		idsWritten += mineOut.idsWritten
		idsHeld = max(idsHeld, mineOut.idsHeld)
		outcomes.add(in, W, mineOut.set)
		theirs := Compute(in, p, Literal)
		theirs.Sort()
		for i, n := range []int{len(mineOut.set.Packed), len(mineOut.set.Unpacked), len(mineOut.set.Spare), len(mineOut.set.Late), len(mineOut.set.Dead)} {
			rowTotals[i] += n
		}
		for _, cl := range mineOut.closed {
			if cl {
				closedWins++
			} else {
				openWins++
			}
		}
		if d := indDiff(mineOut.set, theirs); len(d) > 0 {
			diffCases++
			sig := fmt.Sprint(d[0].Set, len(d[0].OnlyA) > 0, len(d[0].OnlyB) > 0)
			if !seenDiff[sig] && len(seenDiff) < 8 {
				seenDiff[sig] = true
				min := indMinimize(in, func(x []record.Input) bool {
					m := indCompute(x, W, L, true)
					th := Compute(x, p, Literal)
					th.Sort()
					dd := indDiff(m.set, th)
					return len(dd) > 0 && fmt.Sprint(dd[0].Set, len(dd[0].OnlyA) > 0, len(dd[0].OnlyB) > 0) == sig
				})
				m := indCompute(min, W, L, true)
				th := Compute(min, p, Literal)
				th.Sort()
				t.Errorf("case seed %d: difference %s\n%s\nmine:   %s\ntheirs: %s\ndiff: %+v", seed0+int64(c), sig, indDescribe(min, W, L), indSetString(m.set), indSetString(th), indDiff(m.set, th))
			}
		}
		// ClosedOnly against my reading of finality.
		tc := Compute(in, p, ClosedOnly)
		tc.Sort()
		if g.finals && !g.missingFinal && g.base.Year() > 1000 && g.base.Year() < 5000 {
			quiescent++
			if d := indDiff(tc, theirs); len(d) > 0 {
				t.Errorf("seed %d: with every final heartbeat, ClosedOnly and literal differ: %+v", seed0+int64(c), d)
			}
		}
		if d := indDiff(indClosedOnly(mineOut), tc); len(d) > 0 {
			closedDiffCases++
			sig := "closed:" + fmt.Sprint(d[0].Set, len(d[0].OnlyA) > 0, len(d[0].OnlyB) > 0)
			if !seenDiff[sig] && len(seenDiff) < 12 {
				seenDiff[sig] = true
				min := indMinimize(in, func(x []record.Input) bool {
					m := indCompute(x, W, L, true)
					th := Compute(x, p, ClosedOnly)
					th.Sort()
					dd := indDiff(indClosedOnly(m), th)
					return len(dd) > 0 && "closed:"+fmt.Sprint(dd[0].Set, len(dd[0].OnlyA) > 0, len(dd[0].OnlyB) > 0) == sig
				})
				m := indCompute(min, W, L, true)
				th := Compute(min, p, ClosedOnly)
				th.Sort()
				t.Errorf("case seed %d: ClosedOnly difference %s\n%s\nmine:   %s\ntheirs: %s\ndiff: %+v", seed0+int64(c), sig, indDescribe(min, W, L), indSetString(indClosedOnly(m)), indSetString(th), indDiff(indClosedOnly(m), th))
			}
		}
	}
	var ks []string
	for k := range kinds {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var kb strings.Builder
	for _, k := range ks {
		fmt.Fprintf(&kb, "%s=%d ", k, kinds[k])
	}
	t.Logf("cases=%d records=%d refusedParams=%d skipped(disputed)=%d diffCases=%d closedOnlyDiffCases=%d", cases, records, refused, skipped, diffCases, closedDiffCases)
	t.Logf("kinds: %s", kb.String())
	t.Logf("quiescent cases (all final heartbeats, ClosedOnly==literal checked)=%d", quiescent)
	t.Logf("lateness-boundary equalities=%d made_at==window_start=%d", indBoundaryHits, indStartHits)
	t.Logf("rows packed/unpacked/spare/late/dead = %v; windows closed=%d open=%d", rowTotals, closedWins, openWins)
	t.Logf("ids written for duplicate detection=%d, most held at once by one (stream, line)=%d", idsWritten, idsHeld)
	t.Logf("outcomes: %+v", outcomes)
	if cases >= 1000 {
		outcomes.require(t)
	}
	// Outside the disputed inputs, the two validity rules must agree on
	// every record, reasons included.
	report := t.Errorf
	if disputed {
		report = t.Logf
	}
	for k, v := range validityDis {
		report("validity disagreement [%s x%d]: %s", k, validityN[k], v)
	}
	n := 0
	for k, v := range reasonDis {
		if n++; n <= 20 {
			report("reason disagreement: %s: %s", k, v)
		}
	}
}

package sleigh

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
)

// testPair is a pair as the packer keys and writes it.
type testPair struct {
	size   string
	hall   string // "": the size's bare line
	window int64  // µs since the epoch
	toy    string
	digest bool // keyed by a digest: the id was too long for a key
	box    string
}

func (p testPair) key() string {
	sep := "|"
	if p.digest {
		sep = "#"
	}
	return p.line() + "|" + strconv.FormatInt(p.window, 10) + sep + p.toy
}

func (p testPair) line() string { return record.JoinLine(p.size, p.hall) }

func (p testPair) value() []byte {
	b, _ := json.Marshal(results.Packed{ToyID: p.toy, BoxID: p.box, Line: p.line(), Size: p.size, WindowStart: record.FormatMicros(p.window)})
	return b
}

// manifestOrder is the order the manifest promises, written out on the
// pairs themselves: size class, line (the bare size first, then halls as
// bytes), window start in time, whole ids before digests, id.
func manifestOrder(a, b testPair) int {
	return cmp.Or(cmp.Compare(slices.Index(record.Sizes, a.size), slices.Index(record.Sizes, b.size)),
		strings.Compare(a.hall, b.hall), cmp.Compare(a.window, b.window), compareBool(a.digest, b.digest), strings.Compare(a.toy, b.toy))
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case b:
		return -1
	}
	return 1
}

// testSleigh is a sleigh whose view's tables are open without Kafka: parts
// partitions in dir ("": in memory).
func testSleigh(t *testing.T, cfg HTTPConfig, parts int, dir string) (*Sleigh, []*orderedTable) {
	t.Helper()
	c := DefaultConfig()
	c.Kafka = kafkaconf.Config{Brokers: []string{"k:9092"}}
	c.HTTP = cfg
	s, err := New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	tabs := newManifestTables(dir)
	tabs.complete = func() bool { return true }
	var out []*orderedTable
	for i := range parts {
		st, err := tabs.builder()("sleigh-table", int32(i))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := st.Close(); err != nil {
				t.Error(err)
			}
		})
		out = append(out, st.(*orderedTable))
	}
	s.tables.Store(tabs)
	return s, out
}

// load puts pairs on the partitions, spread by their index.
func load(t *testing.T, parts []*orderedTable, pairs []testPair) {
	t.Helper()
	for i, p := range pairs {
		if err := parts[i%len(parts)].Set(p.key(), p.value()); err != nil {
			t.Fatal(err)
		}
	}
}

type pageDoc struct {
	Complete bool   `json:"complete"`
	Total    int    `json:"total"`
	Pairs    int    `json:"pairs"`
	Next     string `json:"next"`
	Sizes    []struct {
		Size  string `json:"size"`
		Pairs int    `json:"pairs"`
		Lines []struct {
			Line    string `json:"line"`
			Pairs   int    `json:"pairs"`
			Windows []struct {
				WindowStart string `json:"window_start"`
				Pairs       []Pair `json:"pairs"`
			} `json:"windows"`
		} `json:"lines"`
	} `json:"sizes"`
}

// each calls f with every pair of the page and its line and window.
func (d pageDoc) each(f func(line, window string, p Pair)) {
	for _, sz := range d.Sizes {
		for _, ln := range sz.Lines {
			for _, w := range ln.Windows {
				for _, p := range w.Pairs {
					f(ln.Line, w.WindowStart, p)
				}
			}
		}
	}
}

func get(t *testing.T, h http.Handler, target string) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	b, _ := io.ReadAll(rec.Result().Body)
	return rec.Result(), string(b)
}

// listed is one pair as a page listed it.
type listed struct{ line, window, toy, box string }

func (p testPair) listed() listed {
	return listed{p.line(), record.FormatMicros(p.window), p.toy, p.box}
}

// pageThrough follows the next links from first to the last page and returns
// every pair listed, in order, checking each page's counts on the way.
func pageThrough(t *testing.T, h http.Handler, first string, limit int) []listed {
	t.Helper()
	var all []listed
	for target, pages := first, 0; target != ""; pages++ {
		if pages > 10000 {
			t.Fatal("more than 10,000 pages: the next links go round")
		}
		res, body := get(t, h, target)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", target, res.StatusCode, body)
		}
		var d pageDoc
		if err := json.Unmarshal([]byte(body), &d); err != nil {
			t.Fatalf("GET %s: %v in %s", target, err, body)
		}
		n := 0
		for _, sz := range d.Sizes {
			m := 0
			for _, ln := range sz.Lines {
				if size, _, _ := record.SplitLine(ln.Line); size != sz.Size {
					t.Errorf("GET %s: line %s listed in size %s", target, ln.Line, sz.Size)
				}
				l := 0
				for _, w := range ln.Windows {
					for _, p := range w.Pairs {
						all = append(all, listed{ln.Line, w.WindowStart, p.ToyID, p.BoxID})
						l++
					}
				}
				if l != ln.Pairs {
					t.Errorf("GET %s: line %s says %d pairs, lists %d", target, ln.Line, ln.Pairs, l)
				}
				m += l
			}
			if m != sz.Pairs {
				t.Errorf("GET %s: size %s says %d pairs, lists %d", target, sz.Size, sz.Pairs, m)
			}
			n += m
		}
		if n != d.Pairs || n > limit || n == 0 && d.Total > 0 || d.Next != "" && n != limit {
			t.Fatalf("GET %s: %d pairs listed, page says %d, limit %d, total %d, next %q", target, n, d.Pairs, limit, d.Total, d.Next)
		}
		target = d.Next
	}
	return all
}

func micros(s string) int64 {
	t, err := record.ParseMadeAt(s)
	if err != nil {
		panic(err)
	}
	return t.UnixMicro()
}

// TestOrderedKeysSortInManifestOrder: the ordered keys of pairs sort as
// bytes in manifest order, across sizes whose letters do not sort so, times
// before 1970 and window starts of different numbers of digits, and map
// back to the packer's key; other keys are kept apart and map back too.
func TestOrderedKeysSortInManifestOrder(t *testing.T) {
	pairs := []testPair{
		{size: "XL", window: -1, toy: "a"},
		{size: "S", window: 1000, toy: "b"},
		{size: "S", window: 999, toy: "c"},
		{size: "S", window: -1000, toy: "d"},
		{size: "S", window: -999, toy: "e"},
		{size: "M", window: 0, toy: "z"},
		{size: "M", window: 0, toy: "y", digest: true},
		{size: "M", window: 0, toy: "a|b"},
		{size: "L", window: micros("1969-12-31T23:59:50Z"), toy: "t"},
		{size: "L", window: micros("2026-12-24T10:00:00Z"), toy: "t"},
		{size: "S", window: -1 << 63, toy: "min"},
		{size: "S", window: 1<<63 - 1, toy: "max"},
		{size: "M", hall: "hall-2", window: -5, toy: "a"},
		{size: "M", hall: "hall-10", window: 7, toy: "a"},
		{size: "M", hall: "hall-1", window: 7, toy: "a"},
		{size: "M", hall: "hall-1", window: -7, toy: "b", digest: true},
		{size: "S", hall: "0", window: 0, toy: "a"},
		{size: "S", hall: strings.Repeat("z", record.MaxHallLen), window: 0, toy: "a"},
		{size: "XL", hall: "a", window: 0, toy: "a|b"},
	}
	var keys [][]byte
	for _, p := range pairs {
		k := orderedKey(p.key())
		if back, ok := fromOrdered(k); !ok || back != p.key() {
			t.Errorf("%s: ordered key maps back to %q, %v", p.key(), back, ok)
		}
		keys = append(keys, k)
	}
	want := slices.Clone(pairs)
	slices.SortFunc(want, manifestOrder)
	slices.SortFunc(keys, func(a, b []byte) int { return strings.Compare(string(a), string(b)) })
	for i, k := range keys {
		if back, _ := fromOrdered(k); back != want[i].key() {
			t.Errorf("position %d: %s, want %s", i, back, want[i].key())
		}
	}
	for _, other := range []string{"XXL|1|t", "M|+1|t", "M|01|t", "M|-0|t", "M|1|", "M|1", "M", "", "m|1|t",
		"M/|1|t", "M/a/b|1|t", "M/Hall|1|t", "M/-a|1|t", "M/" + strings.Repeat("a", record.MaxHallLen+1) + "|1|t", "m/h|1|t", "XXL/h|1|t", "M/h"} {
		k := orderedKey(other)
		if k[0] != otherKeys {
			t.Errorf("%q is taken for a packer's key", other)
		}
		if back, ok := fromOrdered(k); !ok || back != other {
			t.Errorf("%q maps back to %q, %v", other, back, ok)
		}
	}
}

// TestPagesListEveryPairOnce pages through manifests of several shapes with
// several limits and filters: every pair of the query is listed once, in
// manifest order, and pages hold at most their limit.
func TestPagesListEveryPairOnce(t *testing.T) {
	var many []testPair
	for i := range 600 {
		many = append(many, testPair{size: record.Sizes[i%4], window: int64(i%7-3) * 9_999_999, toy: fmt.Sprintf("toy-%d", i), box: fmt.Sprintf("box-%d", i)})
	}
	var halls []testPair
	for i := range 600 {
		h := []string{"", "hall-1", "hall-2", "hall-10", "a"}[i%5]
		halls = append(halls, testPair{size: record.Sizes[i%3], hall: h, window: int64(i%4) * 10_000_000, toy: fmt.Sprintf("toy-%d", i/15), box: fmt.Sprintf("box-%d", i)})
	}
	shapes := map[string][]testPair{
		"empty": nil,
		"one toy in two windows": {
			{size: "M", window: micros("2026-12-24T10:00:10Z"), toy: "t1", box: "b2"},
			{size: "M", window: micros("2026-12-24T10:00:00Z"), toy: "t1", box: "b1"},
		},
		"before 1970 and across digit counts": {
			{size: "S", window: micros("1969-12-31T23:59:50Z"), toy: "a", box: "1"},
			{size: "S", window: -1, toy: "b", box: "2"},
			{size: "S", window: 999_999, toy: "c", box: "3"},
			{size: "S", window: 10_000_000, toy: "d", box: "4"},
			{size: "S", window: 1_000_000, toy: "e", box: "5"},
			{size: "XL", window: -10_000_000, toy: "f", box: "6"},
			{size: "L", window: 0, toy: "g", box: "7"},
			{size: "L", window: 0, toy: "long", digest: true, box: "8"},
		},
		"600 pairs in 4 sizes and 7 windows":              many,
		"600 pairs on 15 lines, ids again on other lines": halls,
	}
	for name, pairs := range shapes {
		for _, parts := range []int{1, 3} {
			s, tables := testSleigh(t, DefaultHTTPConfig(), parts, "")
			load(t, tables, pairs)
			for _, q := range []struct {
				query string
				keep  func(testPair) bool
			}{
				{"", func(testPair) bool { return true }},
				{"size=S", func(p testPair) bool { return p.size == "S" }},
				{"window=1970-01-01T00:00:00Z", func(p testPair) bool { return p.window == 0 }},
				{"size=M&window=2026-12-24T10:00:00Z", func(p testPair) bool { return p.size == "M" && p.window == micros("2026-12-24T10:00:00Z") }},
				{"line=M", func(p testPair) bool { return p.size == "M" && p.hall == "" }},
				{"line=M/hall-1", func(p testPair) bool { return p.line() == "M/hall-1" }},
				{"size=S&line=S/hall-10", func(p testPair) bool { return p.line() == "S/hall-10" }},
				{"line=L/a&window=1970-01-01T00:00:10Z", func(p testPair) bool { return p.line() == "L/a" && p.window == 10_000_000 }},
				{"window=1970-01-01T00:00:10Z", func(p testPair) bool { return p.window == 10_000_000 }},
				{"size=S&window=1970-01-01T00:00:30Z", func(p testPair) bool { return p.size == "S" && p.window == 30_000_000 }},
			} {
				var want []listed
				sorted := slices.Clone(pairs)
				slices.SortFunc(sorted, manifestOrder)
				for _, p := range sorted {
					if q.keep(p) {
						want = append(want, p.listed())
					}
				}
				for _, limit := range []int{1, 2, 7, 1000} {
					first := "/manifest?" + q.query + "&limit=" + strconv.Itoa(limit)
					got := pageThrough(t, s.Handler(), first, limit)
					if !slices.Equal(got, want) {
						t.Errorf("%s, %d partitions, %s: listed\n%v\nwant\n%v", name, parts, first, got, want)
					}
				}
			}
		}
	}
}

// TestPageCounts: the first page's total counts the pairs of the query,
// without a limit it lists DefaultLimit pairs, and the last one has no next.
func TestPageCounts(t *testing.T) {
	s, tables := testSleigh(t, DefaultHTTPConfig(), 2, "")
	var pairs []testPair
	for i := range DefaultLimit + 1 {
		pairs = append(pairs, testPair{size: "L", window: 0, toy: fmt.Sprintf("t%05d", i), box: "b"})
	}
	load(t, tables, append(pairs, testPair{size: "S", window: 0, toy: "x", box: "y"}))
	_, body := get(t, s.Handler(), "/manifest?size=L")
	var d pageDoc
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		t.Fatal(err)
	}
	if d.Total != DefaultLimit+1 || d.Pairs != DefaultLimit || !d.Complete || !strings.HasPrefix(d.Next, "/manifest?cursor=") || !strings.Contains(d.Next, "size=L") {
		t.Errorf("first page: total %d, %d pairs, complete %v, next %q", d.Total, d.Pairs, d.Complete, d.Next)
	}
	_, body = get(t, s.Handler(), d.Next)
	d = pageDoc{}
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		t.Fatal(err)
	}
	if d.Pairs != 1 || d.Next != "" || d.Sizes[0].Lines[0].Windows[0].Pairs[0].ToyID != pairs[DefaultLimit].toy {
		t.Errorf("last page: %s", body)
	}
}

// TestPageWritesIDsAsJSON: ids with quotes, backslashes, control and
// non-ASCII characters come back as they were, and cut ids with their cuts.
func TestPageWritesIDsAsJSON(t *testing.T) {
	s, tables := testSleigh(t, DefaultHTTPConfig(), 1, "")
	odd := results.Packed{ToyID: "t\"q\\\u0001é<&>", BoxID: "b\u2028", Line: "S", Size: "S", WindowStart: record.FormatMicros(0)}
	cut := results.Packed{ToyID: "tttt", BoxID: "bbbb", Line: "S", Size: "S", WindowStart: record.FormatMicros(0),
		ToyIDCut: results.Cut{Bytes: 300, SHA256: "ab"}, BoxIDCut: results.Cut{Bytes: 400, SHA256: "cd"}}
	for key, p := range map[string]results.Packed{"S|0|" + odd.ToyID: odd, "S|0#digest": cut} {
		v, _ := json.Marshal(p)
		if err := tables[0].Set(key, v); err != nil {
			t.Fatal(err)
		}
	}
	_, body := get(t, s.Handler(), "/manifest")
	var d pageDoc
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	want := []Pair{{ToyID: odd.ToyID, BoxID: odd.BoxID}, {ToyID: "tttt", BoxID: "bbbb", ToyIDCut: cut.ToyIDCut, BoxIDCut: cut.BoxIDCut}}
	if len(d.Sizes) != 1 || !slices.Equal(d.Sizes[0].Lines[0].Windows[0].Pairs, want) {
		t.Errorf("page %s, want pairs %+v", body, want)
	}
}

// TestCursorAcrossInserts: pairs that arrive between two pages are listed on
// a later page when they sort after the cursor, and not at all when before
// it; no pair is listed twice, none that was there at the start is missed.
func TestCursorAcrossInserts(t *testing.T) {
	s, tables := testSleigh(t, DefaultHTTPConfig(), 3, "")
	var pairs []testPair
	for i := range 100 {
		pairs = append(pairs, testPair{size: "M", window: int64(i / 10), toy: fmt.Sprintf("t%03d", i), box: "b"})
	}
	load(t, tables, pairs)
	seen := map[string]int{}
	target := "/manifest?limit=10"
	var late []testPair
	for page := 0; target != ""; page++ {
		_, body := get(t, s.Handler(), target)
		var d pageDoc
		if err := json.Unmarshal([]byte(body), &d); err != nil {
			t.Fatal(err)
		}
		d.each(func(line, window string, p Pair) { seen[line+window+p.ToyID]++ })
		if d.Next == "" {
			break
		}
		// Behind the cursor (never listed now) and ahead of it (listed later).
		behind := testPair{size: "M", window: int64(page), toy: fmt.Sprintf("t%03d-late", page*10), box: "late"}
		ahead := testPair{size: "XL", window: int64(page), toy: fmt.Sprintf("late-%d", page), box: "late"}
		add := []testPair{behind, ahead}
		if page == 0 { // a line of M, after the M pairs: ahead while the cursor is in them
			add = append(add, testPair{size: "M", hall: "h", window: 0, toy: "late", box: "late"})
		}
		late = append(late, add...)
		load(t, tables, add)
		target = d.Next
	}
	for _, p := range pairs {
		if n := seen[p.line()+record.FormatMicros(p.window)+p.toy]; n != 1 {
			t.Errorf("%s listed %d times", p.key(), n)
		}
	}
	for _, p := range late {
		n := seen[p.line()+record.FormatMicros(p.window)+p.toy]
		if want := map[string]int{"M": 0, "M/h": 1, "XL": 1}[p.line()]; n != want {
			t.Errorf("%s, put in between pages: listed %d times, want %d", p.key(), n, want)
		}
	}
}

// TestBadParameters: every wrong parameter is a 400 that says what is
// allowed, all of them at once, before the sleigh is even running.
func TestBadParameters(t *testing.T) {
	c := DefaultConfig()
	c.Kafka = kafkaconf.Config{Brokers: []string{"k:9092"}}
	notRunning, err := New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	running, tables := testSleigh(t, DefaultHTTPConfig(), 1, "")
	load(t, tables, []testPair{{size: "S", window: 0, toy: "a", box: "b"}, {size: "S", window: 0, toy: "c", box: "d"}})
	_, body := get(t, running.Handler(), "/manifest?size=S&limit=1")
	var d pageDoc
	if err := json.Unmarshal([]byte(body), &d); err != nil || d.Next == "" {
		t.Fatalf("first page: %v, %s", err, body)
	}
	next, _ := url.Parse(d.Next)
	cursorS := next.Query().Get("cursor")
	for _, tc := range []struct{ target, want string }{
		{"/manifest?size=XXL", `size "XXL" is not a size class: want one of S, M, L, XL`},
		{"/manifest?size=m", `size "m" is not a size class`},
		{"/manifest?size=", `size "" is not a size class`},
		{"/manifest?limit=0", `limit "0" is not a number of pairs from 1 to 10000`},
		{"/manifest?limit=10001", `limit "10001" is not a number of pairs from 1 to 10000`},
		{"/manifest?limit=ten", `limit "ten" is not a number of pairs`},
		{"/manifest?window=yesterday", `window "yesterday" is not a window start (RFC 3339`},
		{"/manifest?window=2026-12-24T10:00:00.0000001Z", `a window starts on a whole microsecond`},
		{"/manifest?cursor=%25%25", "cursor is not one this sleigh gave out"},
		{"/manifest?cursor=AAAA", "cursor is not one this sleigh gave out"},
		{"/manifest?size=M&cursor=" + cursorS, "cursor is not in this size class, line and window"},
		{"/manifest?line=S/h&cursor=" + cursorS, "cursor is not in this size class, line and window"},
		{"/manifest?window=1970-01-01T00:00:10Z&cursor=" + cursorS, "cursor is not in this size class, line and window"},
		{"/manifest?page=2", `parameter "page" is not one this URL takes: want size, line, window, limit, cursor`},
		{"/manifest?line=M/", `line "M/" is not a packing line`},
		{"/manifest?line=M/a/b", `line "M/a/b" is not a packing line`},
		{"/manifest?line=M/Hall", `line "M/Hall" is not a packing line`},
		{"/manifest?line=M/" + strings.Repeat("a", 33), `is not a packing line: want a size class alone (M) or a size class, a slash and a hall of 1 to 32 characters`},
		{"/manifest?line=XXL/h", `line "XXL/h" is not a packing line`},
		{"/manifest?line=", `line "" is not a packing line`},
		{"/manifest?size=S&line=M/h", `line "M/h" is not of size S`},
		{"/manifest?line=M&line=S", `parameter "line" is given 2 times`},
		{"/manifest?size=S&size=M", `parameter "size" is given 2 times`},
		{"/manifest?size=XXL&limit=0&sort=asc", `size "XXL"`},
		{"/manifest?size=XXL&limit=0&sort=asc", `limit "0"`},
		{"/manifest?size=XXL&limit=0&sort=asc", `parameter "sort"`},
		{"/manifest/summary?size=XXL", `size "XXL" is not a size class`},
		{"/manifest/summary?limit=5", `parameter "limit" is not one this URL takes: want size, line`},
		{"/manifest/summary?line=M/", `line "M/" is not a packing line`},
		{"/manifest/summary?size=L&line=M", `line "M" is not of size L`},
	} {
		for name, s := range map[string]*Sleigh{"running": running, "not running": notRunning} {
			if res, body := get(t, s.Handler(), tc.target); res.StatusCode != http.StatusBadRequest || !strings.Contains(body, tc.want) {
				t.Errorf("%s: GET %s: %d %q, want 400 and %q", name, tc.target, res.StatusCode, body, tc.want)
			}
		}
	}
	for _, target := range []string{"/manifest", "/manifest/summary?size=M"} {
		if res, body := get(t, notRunning.Handler(), target); res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") != "1" || !strings.Contains(body, "not running") {
			t.Errorf("GET %s on a sleigh not running: %d %q, Retry-After %q", target, res.StatusCode, body, res.Header.Get("Retry-After"))
		}
	}
}

// TestSummary counts pairs per size class, line and window, lines in
// manifest order and windows in time order, and follows deletes.
func TestSummary(t *testing.T) {
	s, tables := testSleigh(t, DefaultHTTPConfig(), 2, "")
	pairs := []testPair{
		{size: "XL", window: 5, toy: "a", box: "1"},
		{size: "S", window: 1_000_000, toy: "a", box: "1"},
		{size: "S", window: -1, toy: "a", box: "1"},
		{size: "S", window: -1, toy: "b", box: "1"},
		{size: "S", window: -1, toy: "c", box: "1"},
		{size: "S", hall: "hall-2", window: -1, toy: "a", box: "2"},
		{size: "S", hall: "hall-10", window: 5, toy: "a", box: "3"},
		{size: "S", hall: "hall-10", window: -1, toy: "a", box: "4"},
	}
	load(t, tables, pairs)
	load(t, tables, pairs[:2]) // again, on the same partitions: no new pairs
	if err := tables[0].Delete(pairs[4].key()); err != nil {
		t.Fatal(err)
	}
	hall10 := LineSummary{Line: "S/hall-10", Pairs: 2, Windows: []WindowSummary{{"1969-12-31T23:59:59.999999Z", 1}, {"1970-01-01T00:00:00.000005Z", 1}}}
	want := Summary{Pairs: 7, Complete: true, Sizes: []SizeSummary{
		{Size: "S", Pairs: 6, Lines: []LineSummary{
			{Line: "S", Pairs: 3, Windows: []WindowSummary{{"1969-12-31T23:59:59.999999Z", 2}, {"1970-01-01T00:00:01Z", 1}}},
			hall10,
			{Line: "S/hall-2", Pairs: 1, Windows: []WindowSummary{{"1969-12-31T23:59:59.999999Z", 1}}},
		}},
		{Size: "XL", Pairs: 1, Lines: []LineSummary{{Line: "XL", Pairs: 1, Windows: []WindowSummary{{"1970-01-01T00:00:00.000005Z", 1}}}}},
	}}
	got, err := s.Summary()
	if err != nil || !equalJSON(got, want) {
		t.Errorf("summary %+v, %v; want %+v", got, err, want)
	}
	for query, want := range map[string]Summary{
		"size=XL":               {Pairs: 1, Complete: true, Sizes: want.Sizes[1:]},
		"line=S/hall-10":        {Pairs: 2, Complete: true, Sizes: []SizeSummary{{Size: "S", Pairs: 2, Lines: []LineSummary{hall10}}}},
		"size=S&line=S/hall-10": {Pairs: 2, Complete: true, Sizes: []SizeSummary{{Size: "S", Pairs: 2, Lines: []LineSummary{hall10}}}},
		"line=M/hall-10":        {Pairs: 0, Complete: true, Sizes: []SizeSummary{}},
	} {
		res, body := get(t, s.Handler(), "/manifest/summary?"+query)
		var one Summary
		if err := json.Unmarshal([]byte(body), &one); err != nil || res.StatusCode != http.StatusOK || !equalJSON(one, want) {
			t.Errorf("GET /manifest/summary?%s: %d %s", query, res.StatusCode, body)
		}
	}
}

// TestKeyFits: the processor loads a pair only under the packer's key for
// it: its line, size and window.
func TestKeyFits(t *testing.T) {
	p := results.Packed{ToyID: "t", BoxID: "b", Line: "M/h1", Size: "M", WindowStart: "1970-01-01T00:00:10Z"}
	for _, tc := range []struct {
		key  string
		line string
		ok   bool
	}{
		{"M/h1|10000000|t", "M/h1", true},
		{"M/h1|10000000#digest", "M/h1", true},
		{"M|10000000|t", "M/h1", false},
		{"M/h2|10000000|t", "M/h1", false},
		{"M/h1|10000000|t", "M", false},
		{"M/h1|10000000|t", "", false},
		{"M/h1|0|t", "M/h1", false},
		{"M/|10000000|t", "M/h1", false},
	} {
		q := p
		q.Line = tc.line
		if err := keyFits(tc.key, &q); (err == nil) != tc.ok {
			t.Errorf("key %q, line %q: %v, want ok %v", tc.key, tc.line, err, tc.ok)
		}
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// TestStorageDirKeepsTheManifest: the view's tables under a storage dir keep
// their pairs and counts when opened again (the view then reads only what
// its changelog got since), and goka reads back its own keys.
func TestStorageDirKeepsTheManifest(t *testing.T) {
	dir := t.TempDir()
	pairs := []testPair{
		{size: "M", window: 10, toy: "b", box: "2"},
		{size: "M", window: -10, toy: "a", box: "1"},
		{size: "S", window: 10, toy: "c", box: "3"},
	}
	t.Run("first run", func(t *testing.T) { // whose cleanup closes the tables
		_, tables := testSleigh(t, DefaultHTTPConfig(), 2, dir)
		load(t, tables, pairs)
	})
	s, tables := testSleigh(t, DefaultHTTPConfig(), 2, dir)
	if sum, _ := s.Summary(); sum.Pairs != 3 {
		t.Errorf("reopened: summary counts %d pairs, want 3", sum.Pairs)
	}
	want := []listed{pairs[2].listed(), pairs[1].listed(), pairs[0].listed()}
	if got := pageThrough(t, s.Handler(), "/manifest?limit=2", 2); !slices.Equal(got, want) {
		t.Errorf("reopened: listed %v, want %v", got, want)
	}
	if v, err := tables[1].Get(pairs[1].key()); err != nil || string(v) != string(pairs[1].value()) {
		t.Errorf("Get(%s) = %s, %v", pairs[1].key(), v, err)
	}
	if ok, err := tables[0].Has(pairs[1].key()); err != nil || ok {
		t.Errorf("Has(%s) on the other partition = %v, %v", pairs[1].key(), ok, err)
	}
	it, err := tables[0].Iterator()
	if err != nil {
		t.Fatal(err)
	}
	defer it.Release()
	var keys []string
	for it.Next() {
		keys = append(keys, string(it.Key()))
	}
	if want := []string{pairs[2].key(), pairs[0].key()}; !slices.Equal(keys, want) {
		t.Errorf("goka's iterator: %q, want %q", keys, want)
	}
	if _, err := tables[0].IteratorWithRange([]byte("M|"), nil); err == nil {
		t.Error("a range of text keys was taken for a range of ordered keys")
	}
}

// TestGate: beyond MaxReaders a request waits for a place, and gets a 503
// with Retry-After when none comes free in time.
func TestGate(t *testing.T) {
	g := newGate(HTTPConfig{MaxReaders: 2, ReaderWait: 0})
	release := make(chan struct{})
	entered := make(chan struct{}, 2)
	h := g.limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
	}))
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/manifest", nil))
		}()
	}
	<-entered
	<-entered
	res, body := get(t, h, "/manifest")
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") != "1" || !strings.Contains(body, "answering 2 manifest requests already") {
		t.Errorf("third request: %d, Retry-After %q, %q", res.StatusCode, res.Header.Get("Retry-After"), body)
	}

	// A patient request gets the place the first one leaves.
	g.wait = 1 << 62
	done := make(chan int, 1)
	go func() {
		res, _ := get(t, h, "/manifest")
		done <- res.StatusCode
	}()
	release <- struct{}{}
	<-entered
	close(release)
	if code := <-done; code != http.StatusOK {
		t.Errorf("a request that waited: %d, want 200", code)
	}
	wg.Wait()
}

// TestHTTPConfigValidate names every wrong limit.
func TestHTTPConfigValidate(t *testing.T) {
	err := HTTPConfig{MaxReaders: 0, ReaderWait: -1, WriteTimeout: 0}.Validate()
	for _, want := range []string{"max readers (0)", "reader wait (-1ns)", "write timeout (0s)"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want %q", err, want)
		}
	}
	if err := DefaultHTTPConfig().Validate(); err != nil {
		t.Error(err)
	}
}

// BenchmarkPage writes pages of DefaultLimit pairs from 100,000 pairs in 4
// partitions, from cursors all over the manifest.
func BenchmarkPage(b *testing.B) {
	t := &testing.T{}
	_, tables := testSleigh(t, DefaultHTTPConfig(), 4, "")
	var pairs []testPair
	for i := range 100_000 {
		pairs = append(pairs, testPair{size: record.Sizes[i%4], window: int64(i/1000) * 10_000_000, toy: fmt.Sprintf("toy-5eed0001-%07d", i), box: fmt.Sprintf("box-5eed0002-%07d", i)})
	}
	for i, p := range pairs {
		if err := tables[i%4].Set(p.key(), p.value()); err != nil {
			b.Fatal(err)
		}
	}
	slices.SortFunc(pairs, manifestOrder)
	i := 0
	for b.Loop() {
		q := query{limit: DefaultLimit, cursor: orderedKey(pairs[(i*7919)%(len(pairs)-DefaultLimit)].key())}
		if err := writePage(io.Discard, tables, q, true, nil, "/manifest"); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// TestConfigValidate names every problem of a sleigh's configuration, its
// HTTP limits' and Kafka's included.
func TestConfigValidate(t *testing.T) {
	good := DefaultConfig()
	good.Kafka.Brokers = []string{"k:9092"}
	for _, tc := range []struct {
		name   string
		change func(*Config)
		want   []string // in the error; none: valid
	}{
		{"default with brokers", func(*Config) {}, nil},
		{"no brokers", func(c *Config) { c.Kafka.Brokers = nil }, []string{"no brokers"}},
		{"no topic", func(c *Config) { c.Topic = "" }, []string{"packed topic must not be empty"}},
		{"every problem at once", func(c *Config) {
			c.Kafka.Brokers, c.Topic, c.Group, c.Partitions, c.HTTP.MaxReaders = nil, "", "", 0, 0
		}, []string{"no brokers", "packed topic must not be empty", "group must not be empty", "partitions (0)", "max readers (0)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.change(&c)
			err := c.Validate()
			if len(tc.want) == 0 && err != nil {
				t.Fatalf("Validate() = %v, want nil", err)
			}
			for _, want := range tc.want {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("Validate() = %v, want it to say %q", err, want)
				}
			}
		})
	}
}

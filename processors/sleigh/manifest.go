package sleigh

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
)

const (
	// DefaultLimit is the pairs of a page when the query names no limit.
	DefaultLimit = 1000
	// MaxLimit bounds a page: what a request costs grows with its page.
	MaxLimit = 10000
)

// pageParams are the query parameters of GET /manifest.
var pageParams = []string{"size", "line", "window", "limit", "cursor"}

// query is one page of the manifest that a client asks for.
type query struct {
	lineFilter
	window    int64
	hasWindow bool
	limit     int
	cursor    []byte // the last key of the page before; nil: the first page
}

// parseQuery reads a page's query parameters, refusing any it does not know
// and every wrong value, all at once.
func parseQuery(v url.Values) (query, error) {
	errs := checkParams(v, pageParams)
	q := query{limit: DefaultLimit}
	var err error
	if q.lineFilter, err = parseLineFilter(v); err != nil {
		errs = append(errs, err)
	}
	if v.Has("window") {
		w := v.Get("window")
		t, err := record.ParseMadeAt(w)
		if err == nil && t.Nanosecond()%1000 != 0 {
			err = errors.New("a window starts on a whole microsecond")
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("window %q is not a window start (RFC 3339, e.g. 2026-12-24T10:00:00Z): %w", w, err))
		}
		q.window, q.hasWindow = t.UnixMicro(), true
	}
	if v.Has("limit") {
		l := v.Get("limit")
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > MaxLimit {
			errs = append(errs, fmt.Errorf("limit %q is not a number of pairs from 1 to %d", l, MaxLimit))
		}
		q.limit = n
	}
	if v.Has("cursor") {
		c, err := decodeCursor(v.Get("cursor"))
		if err != nil {
			errs = append(errs, err)
		} else if !q.holds(c) && len(errs) == 0 {
			errs = append(errs, errors.New("cursor is not in this size class, line and window: pass it back with the size, line and window of the page that gave it"))
		}
		q.cursor = c
	}
	return q, errors.Join(errs...)
}

// checkParams refuses parameters not in allowed and parameters given twice.
func checkParams(v url.Values, allowed []string) []error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(v)) {
		switch {
		case !slices.Contains(allowed, name):
			errs = append(errs, fmt.Errorf("parameter %q is not one this URL takes: want %s", name, strings.Join(allowed, ", ")))
		case len(v[name]) > 1:
			errs = append(errs, fmt.Errorf("parameter %q is given %d times: give it once", name, len(v[name])))
		}
	}
	return errs
}

// lineFilter is the pairs a page or a summary is of: a size class and a
// line, or all of one size class (every line of it), or all.
type lineFilter struct {
	size    string // "": every size class
	line    line
	hasLine bool
}

// parseLineFilter reads the size and line parameters. A line with a size
// must be of that size.
func parseLineFilter(v url.Values) (lineFilter, error) {
	var f lineFilter
	var errs []error
	if v.Has("size") {
		if f.size = v.Get("size"); !record.ValidSize(f.size) {
			errs = append(errs, fmt.Errorf("size %q is not a size class: want one of %s", f.size, strings.Join(record.Sizes, ", ")))
		}
	}
	if v.Has("line") {
		l := v.Get("line")
		if f.line, f.hasLine = parseLine(l); !f.hasLine {
			errs = append(errs, fmt.Errorf("line %q is not a packing line: want a size class alone (M) or a size class, a slash and a hall of 1 to %d characters a-z, 0-9 and '-' (M/hall-7)", l, record.MaxHallLen))
		} else if f.size != "" && f.size != f.line.size() {
			errs = append(errs, fmt.Errorf("line %q is not of size %s", l, f.size))
		}
	}
	return f, errors.Join(errs...)
}

// keeps says whether the filter takes l's pairs.
func (f lineFilter) keeps(l line) bool {
	if f.hasLine {
		return l == f.line
	}
	return f.size == "" || f.size == l.size()
}

// ranges are the ordered keys the query covers, in order: every pair of its
// lines (one, those of one size class, or all) and, with a window, of that
// window only. A window's pairs of several lines are not one range of keys
// (each line's windows lie between them), so such a query takes a range
// for each line that counts pairs in the window: as many as the lines of
// the window, whatever the manifest holds.
func (q query) ranges(counts map[windowID]int64) []keyRange {
	var out []keyRange
	switch {
	case q.hasLine && q.hasWindow:
		out = append(out, prefixRange(windowPrefix(nil, q.line, q.window)))
	case q.hasLine:
		out = append(out, prefixRange(q.line.prefix(nil)))
	case q.hasWindow:
		var lines []line
		for id := range counts {
			if id.window == q.window && q.keeps(id.line) {
				lines = append(lines, id.line)
			}
		}
		slices.SortFunc(lines, line.compare)
		for _, l := range lines {
			out = append(out, prefixRange(windowPrefix(nil, l, q.window)))
		}
	default:
		for rank, size := range record.Sizes {
			if q.size == "" || q.size == size {
				out = append(out, keyRange{start: []byte{byte(rank)}, limit: []byte{byte(rank + 1)}})
			}
		}
	}
	return out
}

func prefixRange(prefix []byte) keyRange {
	r := util.BytesPrefix(prefix)
	return keyRange{start: r.Start, limit: r.Limit}
}

// holds says whether the ordered key k is a pair's the query covers.
func (q query) holds(k []byte) bool {
	pk, ok := decodeOrdered(k)
	return ok && q.keeps(pk.line) && (!q.hasWindow || pk.window == q.window)
}

// total is the number of pairs the query covers, over every page.
func (q query) total(counts map[windowID]int64) int64 {
	var n int64
	for id, c := range counts {
		if q.keeps(id.line) && (!q.hasWindow || id.window == q.window) {
			n += c
		}
	}
	return n
}

// nextURL is the URL of the page after the one that ended at key last.
func (q query) nextURL(path string, last []byte) string {
	v := url.Values{"limit": {strconv.Itoa(q.limit)}, "cursor": {encodeCursor(last)}}
	if q.size != "" {
		v.Set("size", q.size)
	}
	if q.hasLine {
		v.Set("line", q.line.String())
	}
	if q.hasWindow {
		v.Set("window", record.FormatMicros(q.window))
	}
	return path + "?" + v.Encode()
}

// Pair is one toy in one box. An id too long for a Kafka record was cut by
// the packer; its cut says how long it was and its digest.
type Pair struct {
	ToyID    string      `json:"toy_id"`
	BoxID    string      `json:"box_id"`
	ToyIDCut results.Cut `json:"toy_id_cut,omitzero"`
	BoxIDCut results.Cut `json:"box_id_cut,omitzero"`
}

// page writes one page of the manifest as JSON while it reads it, in the
// shape of the whole manifest (sizes, their lines, their windows, their
// pairs) and with the URL of the next page if there is one:
//
//	{"complete":true,"total":N,"sizes":[{"size":"S","lines":[{"line":"S/hall-1","windows":[{"window_start":"...","pairs":[{"toy_id":"...","box_id":"..."}]}],"pairs":n}],"pairs":n}],"pairs":n,"next":"/manifest?..."}
//
// It holds one pair at a time and a buffer of the output, so its memory does
// not grow with the page, nor with the manifest.
type page struct {
	bw            *bufio.Writer
	m             *merged
	q             query
	path          string // of the next URL
	started       bool   // a pair was written
	line          line   // of the pair written last
	window        int64
	n, sizeN, lnN int
	buf           []byte // a pair's JSON
}

// writePage writes the page of q from parts to w; counts are the pairs per
// line and window (for the ranges of a window's lines and the page's total,
// q.total) and path the URL path of the next page's link.
func writePage(w io.Writer, parts []*orderedTable, q query, complete bool, counts map[windowID]int64, path string) error {
	p := &page{bw: bufio.NewWriterSize(w, 32<<10), m: newMerged(parts, q.ranges(counts), q.cursor), q: q, path: path}
	defer p.m.release()
	fmt.Fprintf(p.bw, `{"complete":%t,"total":%d,"sizes":[`, complete, q.total(counts))
	var last []byte
	for p.n < q.limit && p.m.next() {
		if err := p.pair(); err != nil {
			return err
		}
		last = append(last[:0], p.m.key()...)
	}
	more := p.n == q.limit && p.m.next()
	if err := p.m.failed(); err != nil {
		return err
	}
	if p.started {
		fmt.Fprintf(p.bw, `]}],"pairs":%d}],"pairs":%d}`, p.lnN, p.sizeN)
	}
	fmt.Fprintf(p.bw, `],"pairs":%d`, p.n)
	if more {
		next, _ := json.Marshal(q.nextURL(p.path, last))
		fmt.Fprintf(p.bw, `,"next":%s`, next)
	}
	_, _ = p.bw.WriteString("}\n") // bufio keeps the first error for Flush
	if err := p.bw.Flush(); err != nil {
		return fmt.Errorf("sleigh: write a manifest page: %w", err)
	}
	return nil
}

// pair writes the merge's current pair, opening its size, line and window.
func (p *page) pair() error {
	k, ok := decodeOrdered(p.m.key())
	if !ok {
		return fmt.Errorf("sleigh: manifest key %x is not a pair's", p.m.key())
	}
	var v results.Packed
	// json v2 decodes these small objects in about two thirds of v1's time,
	// the larger part of a page's CPU.
	if err := jsonv2.Unmarshal(p.m.value(), &v); err != nil {
		return fmt.Errorf("sleigh: manifest entry %s: %w", k, err)
	}
	// Sizes, lines and RFC 3339 times are plain ASCII, which %q quotes as
	// JSON does.
	switch {
	case !p.started || k.rank != p.line.rank:
		if p.started {
			fmt.Fprintf(p.bw, `]}],"pairs":%d}],"pairs":%d},`, p.lnN, p.sizeN)
		}
		fmt.Fprintf(p.bw, `{"size":%q,"lines":[{"line":%q,"windows":[{"window_start":%q,"pairs":[`, k.size(), k.line.String(), record.FormatMicros(k.window))
		p.sizeN, p.lnN = 0, 0
	case k.line != p.line:
		fmt.Fprintf(p.bw, `]}],"pairs":%d},{"line":%q,"windows":[{"window_start":%q,"pairs":[`, p.lnN, k.line.String(), record.FormatMicros(k.window))
		p.lnN = 0
	case k.window != p.window:
		fmt.Fprintf(p.bw, `]},{"window_start":%q,"pairs":[`, record.FormatMicros(k.window))
	default:
		_ = p.bw.WriteByte(',')
	}
	p.started, p.line, p.window = true, k.line, k.window
	// Pair's JSON, as encoding/json writes it, without its reflection.
	b := append(p.buf[:0], `{"toy_id":`...)
	b, _ = jsontext.AppendQuote(b, v.ToyID) // invalid UTF-8 becomes U+FFFD, as in encoding/json
	b = append(b, `,"box_id":`...)
	b, _ = jsontext.AppendQuote(b, v.BoxID)
	var err error
	if b, err = appendCut(b, "toy_id_cut", v.ToyIDCut); err == nil {
		b, err = appendCut(b, "box_id_cut", v.BoxIDCut)
	}
	if err != nil {
		return fmt.Errorf("sleigh: manifest entry %s: %w", k, err)
	}
	p.buf = append(b, '}')
	_, _ = p.bw.Write(p.buf)
	p.n++
	p.sizeN++
	p.lnN++
	return nil
}

func appendCut(b []byte, name string, c results.Cut) ([]byte, error) {
	if c.IsZero() {
		return b, nil
	}
	j, err := json.Marshal(c)
	return append(append(b, `,"`+name+`":`...), j...), err
}

// Summary counts what is on the sleigh, by size class, line and window,
// without reading the pairs.
type Summary struct {
	Pairs int           `json:"pairs"`
	Sizes []SizeSummary `json:"sizes"`
	// Complete is false while the view is still loading the table.
	Complete bool `json:"complete"`
}

// SizeSummary counts the pairs of one size class, in all and per line
// (the size alone first, then its halls in byte order).
type SizeSummary struct {
	Size  string        `json:"size"`
	Pairs int           `json:"pairs"`
	Lines []LineSummary `json:"lines"`
}

// LineSummary counts the pairs of one line, in all and per window (windows
// in time order).
type LineSummary struct {
	Line    string          `json:"line"`
	Pairs   int             `json:"pairs"`
	Windows []WindowSummary `json:"windows"`
}

// WindowSummary counts the pairs of one window of a line.
type WindowSummary struct {
	WindowStart string `json:"window_start"`
	Pairs       int    `json:"pairs"`
}

// Lines is the number of lines that have pairs.
func (s Summary) Lines() int {
	n := 0
	for _, sz := range s.Sizes {
		n += len(sz.Lines)
	}
	return n
}

// summarize orders counts into a summary of the lines f keeps that have
// pairs.
func summarize(counts map[windowID]int64, f lineFilter) Summary {
	ids := slices.SortedFunc(maps.Keys(counts), func(a, b windowID) int {
		return cmp.Or(a.compare(b.line), cmp.Compare(a.window, b.window))
	})
	s := Summary{Sizes: []SizeSummary{}}
	for _, id := range ids {
		if !f.keeps(id.line) {
			continue
		}
		if len(s.Sizes) == 0 || s.Sizes[len(s.Sizes)-1].Size != id.size() {
			s.Sizes = append(s.Sizes, SizeSummary{Size: id.size()})
		}
		sz := &s.Sizes[len(s.Sizes)-1]
		if name := id.String(); len(sz.Lines) == 0 || sz.Lines[len(sz.Lines)-1].Line != name {
			sz.Lines = append(sz.Lines, LineSummary{Line: name})
		}
		ln := &sz.Lines[len(sz.Lines)-1]
		n := int(counts[id])
		ln.Windows = append(ln.Windows, WindowSummary{WindowStart: record.FormatMicros(id.window), Pairs: n})
		ln.Pairs += n
		sz.Pairs += n
		s.Pairs += n
	}
	return s
}

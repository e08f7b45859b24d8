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
var pageParams = []string{"size", "window", "limit", "cursor"}

// query is one page of the manifest that a client asks for.
type query struct {
	size      string // "": every size class
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
	if v.Has("size") {
		var err error
		if q.size, err = parseSize(v.Get("size")); err != nil {
			errs = append(errs, err)
		}
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
			errs = append(errs, errors.New("cursor is not in this size class and window: pass it back with the size and window of the page that gave it"))
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

func parseSize(s string) (string, error) {
	if !record.ValidSize(s) {
		return "", fmt.Errorf("size %q is not a size class: want one of %s", s, strings.Join(record.Sizes, ", "))
	}
	return s, nil
}

// ranges are the ordered keys the query covers, in order: every pair of its
// size classes (one or all) and, with a window, of that window only.
func (q query) ranges() []keyRange {
	var out []keyRange
	for rank, size := range record.Sizes {
		if q.size != "" && q.size != size {
			continue
		}
		if !q.hasWindow {
			out = append(out, keyRange{start: []byte{byte(rank)}, limit: []byte{byte(rank + 1)}})
			continue
		}
		r := util.BytesPrefix(windowPrefix(nil, rank, q.window))
		out = append(out, keyRange{start: r.Start, limit: r.Limit})
	}
	return out
}

// holds says whether the ordered key k is in one of the query's ranges.
func (q query) holds(k []byte) bool {
	for _, r := range q.ranges() {
		if string(k) >= string(r.start) && string(k) < string(r.limit) {
			return true
		}
	}
	return false
}

// total is the number of pairs the query covers, over every page.
func (q query) total(counts map[windowID]int64) int64 {
	var n int64
	for id, c := range counts {
		if (q.size == "" || record.Sizes[id.rank] == q.size) && (!q.hasWindow || id.window == q.window) {
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
// shape of the whole manifest (sizes, their windows, their pairs) and with
// the URL of the next page if there is one:
//
//	{"complete":true,"total":N,"sizes":[{"size":"S","windows":[{"window_start":"...","pairs":[{"toy_id":"...","box_id":"..."}]}],"pairs":n}],"pairs":n,"next":"/manifest?..."}
//
// It holds one pair at a time and a buffer of the output, so its memory does
// not grow with the page, nor with the manifest.
type page struct {
	bw       *bufio.Writer
	m        *merged
	q        query
	path     string // of the next URL
	rank     int    // of the size class being written, -1 before the first
	window   int64
	n, sizeN int
	buf      []byte // a pair's JSON
}

// writePage writes the page of q from parts to w; path is the URL path of
// the next page's link.
func writePage(w io.Writer, parts []*orderedTable, q query, complete bool, total int64, path string) error {
	p := &page{bw: bufio.NewWriterSize(w, 32<<10), m: newMerged(parts, q.ranges(), q.cursor), q: q, path: path, rank: -1}
	defer p.m.release()
	fmt.Fprintf(p.bw, `{"complete":%t,"total":%d,"sizes":[`, complete, total)
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
	if p.rank >= 0 {
		fmt.Fprintf(p.bw, `]}],"pairs":%d}`, p.sizeN)
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

// pair writes the merge's current pair, opening its size and window.
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
	// Sizes and RFC 3339 times are plain ASCII, which %q quotes as JSON does.
	switch {
	case k.rank != p.rank:
		if p.rank >= 0 {
			fmt.Fprintf(p.bw, `]}],"pairs":%d},`, p.sizeN)
		}
		fmt.Fprintf(p.bw, `{"size":%q,"windows":[{"window_start":%q,"pairs":[`, record.Sizes[k.rank], record.FormatMicros(k.window))
		p.rank, p.window, p.sizeN = k.rank, k.window, 0
	case k.window != p.window:
		fmt.Fprintf(p.bw, `]},{"window_start":%q,"pairs":[`, record.FormatMicros(k.window))
		p.window = k.window
	default:
		_ = p.bw.WriteByte(',')
	}
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
	return nil
}

func appendCut(b []byte, name string, c results.Cut) ([]byte, error) {
	if c.IsZero() {
		return b, nil
	}
	j, err := json.Marshal(c)
	return append(append(b, `,"`+name+`":`...), j...), err
}

// Summary counts what is on the sleigh, by size class and window, without
// reading the pairs.
type Summary struct {
	Pairs int           `json:"pairs"`
	Sizes []SizeSummary `json:"sizes"`
	// Complete is false while the view is still loading the table.
	Complete bool `json:"complete"`
}

// SizeSummary counts the pairs of one size class, in all and per window
// (windows in time order).
type SizeSummary struct {
	Size    string          `json:"size"`
	Pairs   int             `json:"pairs"`
	Windows []WindowSummary `json:"windows"`
}

// WindowSummary counts the pairs of one window of a size class.
type WindowSummary struct {
	WindowStart string `json:"window_start"`
	Pairs       int    `json:"pairs"`
}

// summarize orders counts into a summary of the size classes that have
// pairs ("" for all of them, or one).
func summarize(counts map[windowID]int64, size string) Summary {
	ids := slices.SortedFunc(maps.Keys(counts), func(a, b windowID) int {
		if a.rank != b.rank {
			return a.rank - b.rank
		}
		return cmp.Compare(a.window, b.window)
	})
	s := Summary{Sizes: []SizeSummary{}}
	for _, id := range ids {
		name := record.Sizes[id.rank]
		if size != "" && name != size {
			continue
		}
		if len(s.Sizes) == 0 || s.Sizes[len(s.Sizes)-1].Size != name {
			s.Sizes = append(s.Sizes, SizeSummary{Size: name})
		}
		sz := &s.Sizes[len(s.Sizes)-1]
		n := int(counts[id])
		sz.Windows = append(sz.Windows, WindowSummary{WindowStart: record.FormatMicros(id.window), Pairs: n})
		sz.Pairs += n
		s.Pairs += n
	}
	return s
}

package report

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/app/compare"
	"github.com/northpole-workshop/northpole/internal/contract"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
	"github.com/northpole-workshop/northpole/otel/backend/servicemap"
)

var params = contract.DefaultParams()

func ws(sec int) string { return record.FormatTime(time.Unix(int64(sec), 0)) }

func toy(offset int64, id, size string, sec int) record.Input {
	return record.Input{Stream: record.Toys, Partition: 0, Offset: offset, Key: []byte(size),
		Value: []byte(fmt.Sprintf(`{"toy_id":%q,"size":%q,"made_at":%q}`, id, size, ws(sec)))}
}

// TestLineCounts: without halls no per-line view (the sizes say it all);
// with halls every line is counted, the busiest listed first, at most
// maxLines of them; dead letters, which have no trusted line, are not.
func TestLineCounts(t *testing.T) {
	bare := results.Set{
		Packed: []results.Packed{{ToyID: "t", BoxID: "b", Line: "M", Size: "M", WindowStart: ws(0)}},
		Dead:   []results.Dead{{Stream: "toys", Reason: "bad line"}},
	}
	if l := lineCounts(bare); l.Count != 0 || l.Top != nil {
		t.Errorf("sizes alone: %+v, want no per-line view", l)
	}
	var s results.Set
	for i := range maxLines + 3 {
		line := fmt.Sprintf("S/h%02d", i)
		for j := range i % 4 {
			s.Packed = append(s.Packed, results.Packed{ToyID: fmt.Sprint(j), BoxID: "b", Line: line, Size: "S", WindowStart: ws(0)})
		}
		s.Unpacked = append(s.Unpacked, results.Unpacked{ToyID: "u", Line: line, Size: "S", WindowStart: ws(0)})
	}
	s.Late = append(s.Late, results.Late{Stream: "boxes", ID: "x", Line: "M", Size: "M", MadeAt: ws(1)})
	l := lineCounts(s)
	if l.Count != maxLines+4 || len(l.Top) != maxLines {
		t.Fatalf("%d lines, %d listed; want %d and %d", l.Count, len(l.Top), maxLines+4, maxLines)
	}
	if first := l.Top[0]; first.Line != "S/h03" || first.Packed != 3 || first.Unpacked != 1 {
		t.Errorf("the busiest line: %+v, want S/h03 with 3 packed and 1 unpacked", first)
	}
	for i := 1; i < len(l.Top); i++ {
		if l.Top[i].Packed > l.Top[i-1].Packed {
			t.Errorf("line %s (%d packed) after %s (%d)", l.Top[i].Line, l.Top[i].Packed, l.Top[i-1].Line, l.Top[i-1].Packed)
		}
	}
	var b bytes.Buffer
	if err := Write(&b, Input{Title: "t", Params: params, Set: s}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<tr data-line="S/h03"><td>S/h03</td><td class="n">3</td>`, "16 packing lines (a size alone, or size/hall) have rows; the 12 that packed most are listed"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// TestSizeCounts: each set per size class; a dead letter under the size its
// record claims (a duplicate, a record without an id), any other (a size
// that is not its key) under NoSize.
func TestSizeCounts(t *testing.T) {
	inputs := []record.Input{
		toy(0, "t1", "M", 1), toy(1, "t1", "M", 1), // a duplicate of M
		{Stream: record.Toys, Offset: 2, Key: []byte("M"), Value: []byte(`{"size":"M"}`)},               // no id
		{Stream: record.Toys, Offset: 3, Key: []byte("S"), Value: []byte(`{"toy_id":"t3","size":"M"}`)}, // size not its key
	}
	set := results.Set{
		Packed:   []results.Packed{{ToyID: "t1", BoxID: "b1", Size: "M", WindowStart: ws(0)}},
		Unpacked: []results.Unpacked{{ToyID: "t2", Size: "S", WindowStart: ws(0)}},
		Late:     []results.Late{{Stream: "boxes", ID: "b9", Size: "XL", MadeAt: ws(0)}},
		Dead: []results.Dead{{Stream: "toys", Offset: 1, Reason: "duplicate"}, {Stream: "toys", Offset: 2, Reason: "no id"},
			{Stream: "toys", Offset: 3, Reason: "size not key"}},
	}
	got := map[string]results.Counts{}
	for _, c := range sizeCounts(set, inputs) {
		got[c.Size] = c.Counts
	}
	want := map[string]results.Counts{
		"S": {Unpacked: 1}, "M": {Packed: 1, Dead: 2}, "L": {}, "XL": {Late: 1}, NoSize: {Dead: 1},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("sizeCounts = %v, want %v", got, want)
	}
}

// hostile are ids that are markup, script, attribute breakers and a very
// long id, as any producer may send them (see TestHostileInputs).
var hostile = []string{
	`<script>alert("id")</script>`,
	`"><img src=x onerror=alert(1)>`,
	`</title></style></svg><b>bold</b>`,
	`javascript:alert(1)`,
	"\x00\u2028{{.Title}}",
	strings.Repeat("L", 100_000),
}

// hostileComparison is a comparison whose rows and records carry the
// hostile ids, n differences in all.
func hostileComparison(n int) (results.Set, []record.Input, compare.Comparison) {
	var goka results.Set
	var inputs []record.Input
	for i := range n {
		id := hostile[i%len(hostile)] + fmt.Sprint(i)
		goka.Packed = append(goka.Packed, results.Packed{ToyID: id, BoxID: id, Size: "S", WindowStart: ws(10 * (i % 7))})
		inputs = append(inputs, toy(int64(i), id, "S", 10*(i%7)))
	}
	c := compare.Build(goka, results.Set{}, inputs, params)
	c.SQL = `the engine <i>"x"</i>`
	return goka, inputs, c
}

// TestHostileIDsAreEscapedAndThePageBounded: ids that are markup come out
// as text, never as elements; long ids are cut; and a run with many
// differing rows of 100 KB ids makes a page of bounded size that says how
// many rows it left out.
func TestHostileIDsAreEscapedAndThePageBounded(t *testing.T) {
	goka, inputs, c := hostileComparison(600)
	if len(c.Differences) != 600 {
		t.Fatalf("%d differences, want 600", len(c.Differences))
	}
	ref := []results.Diff{{Set: "packed", OnlyA: []string{hostile[0], hostile[5]}}}
	var b bytes.Buffer
	if err := Write(&b, Input{Title: "t", Goka: hostile[1], Params: params, Set: goka, Inputs: inputs, Reference: ref, SQL: c}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, bad := range []string{"<script", "<img", "<b>bold", "<i>", "onerror=alert(1)>", strings.Repeat("L", maxText+1)} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q unescaped or uncut", bad)
		}
	}
	for _, want := range []string{"&lt;script&gt;", "&lt;img src=x", "550 more differing rows are not listed", "(100001 bytes in all)", "DIFFERENT"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if len(page) > 600_000 {
		t.Errorf("the page is %d bytes for 600 differing rows of long ids", len(page))
	}
}

// TestSelfContained: a page with every part (counts, windows, service map,
// differences) refers to nothing outside itself and has no script, and its
// Content-Security-Policy forbids loading anything.
func TestSelfContained(t *testing.T) {
	goka := results.Set{Packed: []results.Packed{{ToyID: "t", BoxID: "b", Size: "S", WindowStart: ws(0)}}}
	inputs := []record.Input{toy(0, "t", "S", 1)}
	c := compare.Build(goka, results.Set{}, inputs, params)
	g := servicemap.Graph{Nodes: []servicemap.Node{{Name: "a"}, {Name: "b"}, {Name: "kafka", System: true}},
		Edges: []servicemap.Edge{{From: "a", To: "b", Kind: "service", Calls: 1, Errors: 1}, {From: "a", To: "kafka", Kind: "messaging", Calls: 1}}}
	var b bytes.Buffer
	if err := Write(&b, Input{Title: "t", Params: params, Set: goka, Inputs: inputs, SQL: c, ServiceMap: &g}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{`content="default-src 'none'; style-src 'unsafe-inline'"`, `<g class="strip" data-size="S">`, ">kafka</text>", `<div class="diff">`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	for _, bad := range []string{"<script", "src=", "href=", "@import", "url(http", "<link", "<iframe", "<object"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q", bad)
		}
	}
}

// TestServiceMapNoteOnTopics: the page says what a map with topics shows,
// and says nothing of topics under a map without them.
func TestServiceMapNoteOnTopics(t *testing.T) {
	signoz := servicemap.Graph{Nodes: []servicemap.Node{{Name: "a"}, {Name: "kafka", System: true}},
		Edges: []servicemap.Edge{{From: "a", To: "kafka", Kind: "messaging", Calls: 1}}}
	topics := servicemap.Graph{Nodes: []servicemap.Node{{Name: "a"}, {Name: "kafka/toys", Topic: "toys", Messaging: "kafka"}},
		Edges: []servicemap.Edge{{From: "a", To: "kafka/toys", Kind: "produce", Calls: 3}}}
	for _, c := range []struct {
		name string
		g    servicemap.Graph
		note bool
	}{{"SigNoz's map", signoz, false}, {"with topics", topics, true}} {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Write(&b, Input{Title: "t", Params: params, ServiceMap: &c.g}); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(b.String(), "Each Kafka topic is a node"); got != c.note {
				t.Errorf("note on topics: %v, want %v", got, c.note)
			}
		})
	}
}

// TestReusedIDsAndLateCopies: a toy id packed in two windows is two rows,
// each shown with its window and explained by the record of that window
// only; two late copies of one id are two rows, each shown with its
// position and explained by the record there.
func TestReusedIDsAndLateCopies(t *testing.T) {
	late := func(offset int64, sec int) results.Late {
		return results.Late{Stream: "toys", Partition: 0, Offset: offset, ID: "x", Line: "M", Size: "M", MadeAt: ws(sec)}
	}
	inputs := []record.Input{
		toy(0, "t1", "S", 1), toy(1, "t1", "S", 11), // one id, two windows
		toy(2, "t9", "M", 40), toy(3, "x", "M", 1), toy(4, "x", "M", 2), // x late twice
	}
	goka := results.Set{
		Packed: []results.Packed{{ToyID: "t1", BoxID: "b1", Line: "S", Size: "S", WindowStart: ws(0)}, {ToyID: "t1", BoxID: "b2", Line: "S", Size: "S", WindowStart: ws(10)}},
		Late:   []results.Late{late(3, 1), late(4, 2)},
	}
	c := compare.Build(goka, results.Set{}, inputs, params)
	p := Build(Input{Title: "t", Params: params, Set: goka, Inputs: inputs, SQL: c})
	if len(p.Differences) != 4 {
		t.Fatalf("%d differing rows, want the two packed and the two late rows: %+v", len(p.Differences), p.Differences)
	}
	got := map[string][]string{} // fields -> the records that explain the row
	for _, d := range p.Differences {
		var fields []string
		for _, f := range d.Fields {
			fields = append(fields, f.Name+"="+f.Value)
		}
		var recs []string
		for _, r := range d.Records {
			recs = append(recs, fmt.Sprintf("%s/%d@%d", r.Stream, r.Partition, r.Offset))
		}
		got[d.Set+" "+strings.Join(fields, " ")] = recs
	}
	want := map[string][]string{
		"packed toy_id=t1 box_id=b1 line=S window_start=" + ws(0):  {"toys/0@0"},
		"packed toy_id=t1 box_id=b2 line=S window_start=" + ws(10): {"toys/0@1"},
		"late position=toys/0@3 id=x line=M made_at=" + ws(1):      {"toys/0@3"},
		"late position=toys/0@4 id=x line=M made_at=" + ws(2):      {"toys/0@4"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("differing rows and their records:\n  %v\nwant\n  %v", got, want)
	}
	var b bytes.Buffer
	if err := Write(&b, Input{Title: "t", Params: params, Set: goka, Inputs: inputs, SQL: c}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"position <code>toys/0@3</code>", "position <code>toys/0@4</code>",
		`data-set="late">2</td>`, `data-set="packed">2</td>`} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("the page lacks %q", s)
		}
	}
}

// TestTimeline: one bar per window while there are few, windows far apart
// with a break between, and a bounded number of bars for many windows.
func TestTimeline(t *testing.T) {
	packed := func(size string, secs ...int) []results.Packed {
		var out []results.Packed
		for _, s := range secs {
			out = append(out, results.Packed{ToyID: fmt.Sprint(s), BoxID: "b", Size: size, WindowStart: ws(s)})
		}
		return out
	}
	t.Run("few windows and a gap", func(t *testing.T) {
		set := results.Set{
			Packed:   append(packed("S", 0, 0, 10, 10, 10), packed("M", 20, 86400)...),
			Unpacked: []results.Unpacked{{ToyID: "u", Size: "S", WindowStart: ws(10)}, {ToyID: "bad", Size: "S", WindowStart: "yesterday"}},
		}
		tl := newTimeline(set, params)
		if tl.Windows != 4 || tl.PerBar != 1 || len(tl.Breaks) != 1 || tl.Unreadable != 1 {
			t.Fatalf("windows %d, per bar %d, breaks %d, unreadable %d; want 4, 1, 1, 1", tl.Windows, tl.PerBar, len(tl.Breaks), tl.Unreadable)
		}
		s := tl.Strips[0]
		if s.Size != "S" || len(s.Bars) != 2 || s.Pairs != 5 || s.MostPairs != 3 || s.Bars[1].UH == 0 || s.Bars[0].UH != 0 {
			t.Errorf("strip S: %+v", s)
		}
		if !strings.Contains(s.Bars[1].Title, "3 pairs, 1 unpacked toys") || s.Bars[1].Label != "3" {
			t.Errorf("bar: %+v", s.Bars[1])
		}
		if tl.Strips[1].Bars[0].X >= tl.Breaks[0].X || tl.Breaks[0].X >= tl.Strips[1].Bars[1].X {
			t.Errorf("the break at %d is not between the M windows %+v", tl.Breaks[0].X, tl.Strips[1].Bars)
		}
	})
	t.Run("many windows", func(t *testing.T) {
		var secs []int
		for i := range 5000 {
			secs = append(secs, 10*i)
		}
		tl := newTimeline(results.Set{Packed: packed("L", secs...)}, params)
		bars := tl.Strips[2].Bars
		if tl.PerBar < 2 || len(bars) > maxBars || len(bars) < maxBars/2 || tl.Strips[2].Pairs != 5000 {
			t.Errorf("per bar %d, %d bars, %d pairs", tl.PerBar, len(bars), tl.Strips[2].Pairs)
		}
		if bars[0].Label != "" && bars[0].W < 28 {
			t.Errorf("a narrow bar has a label: %+v", bars[0])
		}
	})
}

// TestCheckDir: a missing directory is made; a file, or a directory under
// a file, is refused.
func TestCheckDir(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "afile")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckDir(filepath.Join(dir, "new", "deeper")); err != nil {
		t.Errorf("a new directory: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "new", "deeper")); len(entries) != 0 {
		t.Errorf("the check left %d files behind", len(entries))
	}
	for _, bad := range []string{file, filepath.Join(file, "sub")} {
		if err := CheckDir(bad); err == nil || !strings.Contains(err.Error(), "output directory") {
			t.Errorf("CheckDir(%s) = %v", bad, err)
		}
	}
}

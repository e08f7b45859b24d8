// Package report makes report.html, the page a person opens after a demo or
// a comparison: per size class the counts of the five result sets as a
// chart (and, with halls, the busiest packing lines), the windows along
// event time with the pairs each held, the service map, and the verdict of
// Goka against the batch reference and a SQL engine (and of the demo's
// service map and metrics against the records read back), with the
// differing rows and the input records behind them
// (compare.Build's explanations). The page is one self-contained file: inline
// CSS and SVG, no script, nothing fetched: its Content-Security-Policy loads
// nothing, and browser_test.go opens it in headless Chromium.
//
// What it shows is bounded whatever the run: every id and text is cut to a
// bounded length and the differing rows listed are capped (report.go); the
// count chart (chart.go) and the windows along event time (timeline.go) are
// geometry computed here, long gaps without a window drawn as a break;
// html.go fills the embedded html/template (page.html.tmpl), which escapes
// everything. CheckDir is the early check of an --out directory.
package report

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"unicode/utf8"

	"github.com/northpole-workshop/northpole/app/compare"
	"github.com/northpole-workshop/northpole/internal/contract"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
	"github.com/northpole-workshop/northpole/otel/backend/servicemap"
)

// Input is what a page is made of.
type Input struct {
	// Title names the run ("northpole demo").
	Title string
	// Goka says where Goka's results came from.
	Goka   string
	Params contract.Params
	// Set is Goka's five result sets, Inputs the records of both input
	// topics they were computed from.
	Set    results.Set
	Inputs []record.Input
	// Reference are Goka's differences from the batch reference (none:
	// equal).
	Reference []results.Diff
	// SQL is Goka against a SQL engine (compare.Build), its SQL naming the
	// engine.
	SQL compare.Comparison
	// ServiceMap, when not nil, is drawn.
	ServiceMap *servicemap.Graph
	// MapCheck, when not nil, is the service map's edges against the
	// records read back (the demo's), shown after the other verdicts.
	MapCheck *Verdict
	// MetricsCheck, when not nil, is the OpenTelemetry metrics' counts
	// against the records read back (the demo's), shown last.
	MetricsCheck *Verdict
}

// FromCompare is the page of `northpole compare`.
func FromCompare(r compare.Result) Input {
	return Input{Title: "northpole compare", Goka: r.Comparison.Goka, Params: r.Params, Set: r.Goka, Inputs: r.Inputs,
		Reference: r.Reference, SQL: r.Comparison}
}

// Bounds of the page for large runs: the rows listed, and the length of
// any one id or value shown.
const (
	maxDifferences = 50
	maxReference   = 20
	maxText        = 200
)

// NoSize is the size class of dead letters that have no valid size.
const NoSize = "no size"

// Page is what the template shows.
type Page struct {
	Title, Goka, SQL string
	Window, Lateness string
	Toys, Boxes      int // records read back from each input topic
	Sizes            []SizeCounts
	Lines            Lines
	Total            results.Counts
	Chart            barChart
	Timeline         timeline
	ServiceMap       *serviceMap
	Verdicts         []Verdict
	Equal            bool
	Differences      []DiffRow
	DifferencesLeft  int // differing rows not listed
	Reference        []RefRow
	ReferenceLeft    int
}

// SizeCounts are the rows of each set of one size class. Dead letters are
// counted under the size of the record when it is valid (a duplicate), else
// under NoSize.
type SizeCounts struct {
	Size string
	results.Counts
}

// maxLines bounds the lines listed on the page: with many halls the busiest
// ones, and how many there are.
const maxLines = 12

// Lines is the per-line view, only when some row's line has a hall (with
// keys that are sizes alone, a line is its size and the size table says
// it all).
type Lines struct {
	Count int          // lines that have a row of packed, unpacked, spare or late
	Top   []LineCounts // the busiest, most packed first, at most maxLines
}

// LineCounts are the rows of each set of one line (dead letters have no
// trusted line, so none are counted here).
type LineCounts struct {
	Line string
	results.Counts
}

// lineCounts counts each set per line, when some line has a hall.
func lineCounts(s results.Set) Lines {
	by := map[string]results.Counts{}
	halls := false
	bump := func(line string, f func(*results.Counts)) {
		c := by[line]
		f(&c)
		by[line] = c
		if _, _, ok := record.SplitLine(line); ok {
			halls = true
		}
	}
	for _, r := range s.Packed {
		bump(r.Line, func(c *results.Counts) { c.Packed++ })
	}
	for _, r := range s.Unpacked {
		bump(r.Line, func(c *results.Counts) { c.Unpacked++ })
	}
	for _, r := range s.Spare {
		bump(r.Line, func(c *results.Counts) { c.Spare++ })
	}
	for _, r := range s.Late {
		bump(r.Line, func(c *results.Counts) { c.Late++ })
	}
	if !halls {
		return Lines{}
	}
	out := Lines{Count: len(by)}
	for line, c := range by {
		out.Top = append(out.Top, LineCounts{Line: abridge(line), Counts: c})
	}
	slices.SortFunc(out.Top, func(a, b LineCounts) int {
		return cmp.Or(cmp.Compare(b.Packed, a.Packed), cmp.Compare(a.Line, b.Line))
	})
	if len(out.Top) > maxLines {
		out.Top = out.Top[:maxLines]
	}
	return out
}

// Verdict is one check: Goka against the reference, or against the SQL; or
// the service map or the metrics against the records read back.
type Verdict struct {
	Check  string
	Equal  bool
	Detail string
}

// DiffRow is a row one side only has, with its input records. Its Fields
// are what identifies it: a packed, unpacked or spare row's ids, line and
// window (an id can come back in another window or on another line, as
// another item), a late or dead row's position.
type DiffRow struct {
	Set, OnlyIn, Size string
	Fields            []Field
	Records           []compare.RecordNote
}

// Field is one column of a row.
type Field struct{ Name, Value string }

// RefRow is a row only Goka or only the reference has.
type RefRow struct{ Set, OnlyIn, Row string }

// Build makes the page of in.
func Build(in Input) Page {
	p := Page{
		Title: in.Title, Goka: in.Goka, SQL: in.SQL.SQL,
		Window: in.Params.Window.String(), Lateness: in.Params.Lateness.String(),
		Total: in.Set.Counts(),
	}
	for _, r := range in.Inputs {
		if r.Stream == record.Toys {
			p.Toys++
		} else {
			p.Boxes++
		}
	}
	p.Sizes = sizeCounts(in.Set, in.Inputs)
	p.Lines = lineCounts(in.Set)
	p.Chart = newBarChart(p.Sizes)
	p.Timeline = newTimeline(in.Set, in.Params)
	if in.ServiceMap != nil {
		p.ServiceMap = newServiceMap(*in.ServiceMap)
	}
	refOnly := [2]int{}
	for _, d := range in.Reference {
		refOnly[0] += len(d.OnlyA)
		refOnly[1] += len(d.OnlyB)
		for _, side := range []struct {
			name string
			rows []string
		}{{"Goka", d.OnlyA}, {"the reference", d.OnlyB}} {
			for _, row := range side.rows {
				if len(p.Reference) == maxReference {
					p.ReferenceLeft++
					continue
				}
				p.Reference = append(p.Reference, RefRow{Set: d.Set, OnlyIn: side.name, Row: abridge(row)})
			}
		}
	}
	ref := Verdict{Check: "Goka vs the batch reference (contract.Compute)", Equal: len(in.Reference) == 0, Detail: "the same rows in all five sets"}
	if !ref.Equal {
		ref.Detail = fmt.Sprintf("%d rows only in Goka, %d only in the reference", refOnly[0], refOnly[1])
	}
	sql := Verdict{Check: "Goka vs " + in.SQL.SQL, Equal: in.SQL.Equal, Detail: "the same rows in all five sets"}
	if !sql.Equal {
		sql.Detail = fmt.Sprintf("%d rows on one side only", len(in.SQL.Differences))
		if in.SQL.GokaConflicts > 0 {
			sql.Detail += fmt.Sprintf("; Goka wrote %d output keys with two different values", in.SQL.GokaConflicts)
		}
	}
	p.Verdicts = []Verdict{ref, sql}
	if in.MapCheck != nil {
		p.Verdicts = append(p.Verdicts, *in.MapCheck)
	}
	if in.MetricsCheck != nil {
		p.Verdicts = append(p.Verdicts, *in.MetricsCheck)
	}
	// The differing rows are Goka's against the others: the map and the
	// metrics have none.
	p.Equal = ref.Equal && sql.Equal
	for _, d := range in.SQL.Differences {
		if len(p.Differences) == maxDifferences {
			p.DifferencesLeft++
			continue
		}
		p.Differences = append(p.Differences, diffRow(d))
	}
	return p
}

// sizeCounts counts each set per size class, dead letters by the size class
// their record claims (record.ClaimedSize, as summary.json's by_size), the
// others under NoSize.
func sizeCounts(s results.Set, inputs []record.Input) []SizeCounts {
	by := s.CountsBySize()
	delete(by, "")
	type pos struct {
		stream    string
		partition int32
		offset    int64
	}
	at := make(map[pos]record.Input, len(s.Dead))
	for _, d := range s.Dead {
		at[pos{d.Stream, d.Partition, d.Offset}] = record.Input{}
	}
	for _, in := range inputs {
		k := pos{string(in.Stream), in.Partition, in.Offset}
		if _, ok := at[k]; ok {
			at[k] = in
		}
	}
	for _, d := range s.Dead {
		size := NoSize
		in := at[pos{d.Stream, d.Partition, d.Offset}]
		if claimed, ok := record.ClaimedSize(in); in.Stream != "" && ok {
			size = claimed
		}
		c := by[size]
		c.Dead++
		by[size] = c
	}
	var out []SizeCounts
	for _, size := range record.Sizes {
		out = append(out, SizeCounts{Size: size, Counts: by[size]})
		delete(by, size)
	}
	// Sizes no valid record has can only come from a result topic someone
	// else wrote; they are shown, not hidden.
	for _, size := range slices.Sorted(maps.Keys(by)) {
		if size != NoSize {
			out = append(out, SizeCounts{Size: abridge(size), Counts: by[size]})
		}
	}
	return append(out, SizeCounts{Size: NoSize, Counts: by[NoSize]})
}

func diffRow(d compare.Difference) DiffRow {
	r := DiffRow{Set: d.Set, OnlyIn: d.OnlyIn, Size: abridge(d.Size)}
	add := func(name, v string) { r.Fields = append(r.Fields, Field{name, abridge(v)}) }
	switch row := d.Row.(type) {
	case results.Packed:
		add("toy_id", row.ToyID)
		add("box_id", row.BoxID)
		add("line", row.Line)
		add("window_start", row.WindowStart)
	case results.Unpacked:
		add("toy_id", row.ToyID)
		add("line", row.Line)
		add("window_start", row.WindowStart)
	case results.Spare:
		add("box_id", row.BoxID)
		add("line", row.Line)
		add("window_start", row.WindowStart)
	case results.Late:
		// A late row is its record's position: two late copies of one id
		// are two rows.
		add("position", fmt.Sprintf("%s/%d@%d", row.Stream, row.Partition, row.Offset))
		add("id", row.ID)
		add("line", row.Line)
		add("made_at", row.MadeAt)
	case results.Dead:
		add("position", fmt.Sprintf("%s/%d@%d", row.Stream, row.Partition, row.Offset))
		add("reason", row.Reason)
	default:
		add("row", fmt.Sprintf("%+v", row))
	}
	for _, n := range d.Records {
		n.Key, n.Value, n.MadeAt = abridge(n.Key), abridge(n.Value), abridge(n.MadeAt)
		n.Goka, n.SQL, n.Reference = abridge(n.Goka), abridge(n.SQL), abridge(n.Reference)
		r.Records = append(r.Records, n)
	}
	return r
}

// abridge bounds what one cell shows: ids may be as long as a Kafka record.
func abridge(s string) string {
	if utf8.RuneCountInString(s) <= maxText {
		return s
	}
	return fmt.Sprintf("%s… (%d bytes in all)", string([]rune(s)[:maxText]), len(s))
}

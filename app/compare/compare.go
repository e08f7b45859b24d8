// Package compare compares the Goka packer's five result sets with a SQL
// engine's, row for row, and explains every row only one side has with the
// input records behind it: where they are, their key and made_at, and what
// Goka, the SQL engine and the batch reference made of each. Run is
// `northpole compare`: it reads Goka's side and the input records from Kafka
// (app/harness) and the SQL side from the embedded SQLite, a PostgreSQL
// it loads, or the result relations of any PostgreSQL-protocol server
// (RisingWave). The demo uses Build and EmbeddedSQL on its own run.
package compare

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/northpole-workshop/northpole/internal/contract"
	"github.com/northpole-workshop/northpole/internal/english"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
	"github.com/northpole-workshop/northpole/internal/sqlengine"
)

// SetCounts are the rows of one set (of one size) on each side.
type SetCounts struct {
	Goka     int `json:"goka"`
	SQL      int `json:"sql"`
	Equal    int `json:"equal"`
	OnlyGoka int `json:"only_goka"`
	OnlySQL  int `json:"only_sql"`
}

// RecordNote is one input record that explains a Difference, with what each
// side (and the reference) made of it.
type RecordNote struct {
	Stream    string `json:"stream"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Key       string `json:"key"`
	MadeAt    string `json:"made_at,omitempty"`
	Value     string `json:"value"`
	Goka      string `json:"goka"`
	SQL       string `json:"sql"`
	Reference string `json:"reference"`
}

// Difference is a row that only one side has (as many times more as it has
// it more often), with the input records that explain it: those carrying its
// ids in its line and window (packed, unpacked, spare; an id can come back in
// another window, or on another line, as another item), or the one at its
// position (late, dead).
type Difference struct {
	Set     string       `json:"set"`
	OnlyIn  string       `json:"only_in"` // "goka" or "sql"
	Size    string       `json:"size,omitempty"`
	Line    string       `json:"line,omitempty"`
	Row     any          `json:"row"`
	Records []RecordNote `json:"records"`
}

// Comparison is the whole comparison: counts per size and set, and every
// Difference. Its JSON is what northpole compare --json prints.
type Comparison struct {
	Equal    bool   `json:"equal"`
	Goka     string `json:"goka"`
	SQL      string `json:"sql"`
	Window   string `json:"window"`
	Lateness string `json:"lateness"`
	Inputs   int    `json:"inputs"`
	// GokaConflicts counts output keys Goka wrote with two different values.
	GokaConflicts int                             `json:"goka_conflicting_keys"`
	Counts        map[string]map[string]SetCounts `json:"counts"` // size ("all" for dead) -> set -> counts
	Differences   []Difference                    `json:"differences"`
	// PartitionSpread lists every (stream, line) whose records are in more
	// than one partition of the input topics (Spreads): the contract's
	// order, and with it the comparison, is then not defined for them.
	PartitionSpread []Spread `json:"partition_spread"`
}

// Err is nil when both sides have the same rows, else an error that says
// how many rows differ and, when the inputs are mis-partitioned, that the
// comparison is not defined for them.
func (c Comparison) Err() error {
	if c.Equal {
		return nil
	}
	why := ""
	if len(c.PartitionSpread) > 0 {
		why = "; the input topics hold records of one (stream, line) in more than one partition (partition_spread), which the contract does not allow: see the warning"
	}
	return fmt.Errorf("the results of Goka and %s differ on %s (%d conflicting Goka keys)%s", c.SQL, english.Count(len(c.Differences), "row"), c.GokaConflicts, why)
}

// Build compares Goka's sets with the SQL engine's, set by set (as
// multisets: a row reported twice by one side and once by the other is a
// difference), and explains every differing row with the input records behind
// it (for packed, unpacked and spare the records that carry its ids in its
// line and window, for late and dead the record at its position), and what
// the batch reference (contract.Compute in mode ClosedOnly, as the SQL
// computes) made of each. Its Goka and SQL say nothing yet of where
// the sides came from: Run fills them in.
func Build(goka, sqlSet results.Set, inputs []record.Input, p contract.Params) Comparison {
	goka, sqlSet = results.Matched(goka, sqlSet)
	c := Comparison{
		Equal: true, Window: p.Window.String(), Lateness: p.Lateness.String(), Inputs: len(inputs),
		Counts: map[string]map[string]SetCounts{}, Differences: []Difference{},
		PartitionSpread: Spreads(inputs),
	}
	ref := contract.Compute(inputs, p, contract.ClosedOnly)
	ex := newExplainer(inputs, goka, sqlSet, ref, p)
	for _, set := range results.SetNames {
		g, s := goka.Rows(set), sqlSet.Rows(set)
		remaining := map[string]int{}
		for _, r := range s {
			remaining[r.Key]++
		}
		bump := func(size string, f func(*SetCounts)) {
			if c.Counts[size] == nil {
				c.Counts[size] = map[string]SetCounts{}
			}
			sc := c.Counts[size][set]
			f(&sc)
			c.Counts[size][set] = sc
		}
		for _, r := range g {
			size := countedSize(r)
			bump(size, func(sc *SetCounts) { sc.Goka++ })
			if remaining[r.Key] > 0 {
				remaining[r.Key]--
				bump(size, func(sc *SetCounts) { sc.Equal++ })
				continue
			}
			bump(size, func(sc *SetCounts) { sc.OnlyGoka++ })
			c.Differences = append(c.Differences, Difference{Set: set, OnlyIn: "goka", Size: size, Line: r.Line, Row: r.Value, Records: ex.explain(r.Value)})
		}
		for _, r := range s {
			size := countedSize(r)
			bump(size, func(sc *SetCounts) { sc.SQL++ })
			if remaining[r.Key] > 0 {
				remaining[r.Key]--
				bump(size, func(sc *SetCounts) { sc.OnlySQL++ })
				c.Differences = append(c.Differences, Difference{Set: set, OnlyIn: "sql", Size: size, Line: r.Line, Row: r.Value, Records: ex.explain(r.Value)})
			}
		}
	}
	c.Equal = len(c.Differences) == 0
	return c
}

// countedSize is the size a row is counted under: dead rows, which have no
// trusted size, under "all".
func countedSize(r results.Row) string {
	if r.Size == "" {
		return "all"
	}
	return r.Size
}

// explainer finds the input records behind a result row and says what each
// side made of them. A row of packed, unpacked or spare is its items' ids in
// its (line, window): the same id in another window or on another line is
// another item, so only the records of the row's line and window explain it. A late row is its record's
// position.
type explainer struct {
	w                    int64                     // W in µs
	byID                 map[string][]record.Input // "stream|id": every record carrying the id, valid or not
	byPos                map[string]record.Input   // "stream/partition@offset"
	goka, sql, reference sideIndex
}

func posKey(stream string, partition int32, offset int64) string {
	return fmt.Sprintf("%s/%d@%d", stream, partition, offset)
}

// item is what a row of packed, unpacked or spare is identified by: its line,
// its window (windowOf's form) and one of its ids.
type item struct{ line, window, id string }

// windowOf is a window_start in one form, FormatTime's, so that a row and a
// record's window compare whatever fractional digits or offset the row was
// written with; a window_start that is not RFC 3339 stays as it is (and
// matches no record).
func windowOf(ws string) string {
	t, err := time.Parse(time.RFC3339Nano, ws)
	if err != nil {
		return ws
	}
	return record.FormatTime(t)
}

func newExplainer(inputs []record.Input, goka, sqlSet, ref results.Set, p contract.Params) *explainer {
	w := p.Window.Microseconds()
	ex := &explainer{w: w, byID: map[string][]record.Input{}, byPos: map[string]record.Input{},
		goka: indexSide(goka, w), sql: indexSide(sqlSet, w), reference: indexSide(ref, w)}
	for _, in := range inputs {
		ex.byPos[posKey(string(in.Stream), in.Partition, in.Offset)] = in
		// Normalize reads the id whether or not the record is valid, so that
		// a record one side wrongly took for valid is found too.
		if n := sqlengine.Normalize(in); n.ID != nil {
			k := string(in.Stream) + "|" + string(n.ID)
			ex.byID[k] = append(ex.byID[k], in)
		}
	}
	for _, ins := range ex.byID {
		slices.SortFunc(ins, func(a, b record.Input) int {
			return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
		})
	}
	return ex
}

// recordItem is the (line, window, id) the record claims, its line being
// its key, whether or not it is valid; ok is false when it has no id, no
// size or no made_at that parses (it is then no item of any window).
func recordItem(in record.Input, w int64) (item, bool) {
	n := sqlengine.Normalize(in)
	if n.ID == nil || n.Size == nil || n.MadeAt == nil || w <= 0 {
		return item{}, false
	}
	t, err := record.ParseMadeAt(*n.MadeAt)
	if err != nil {
		return item{}, false
	}
	us := t.UnixMicro()
	start := us / w * w
	if us%w != 0 && us < 0 {
		start -= w // floor, also before 1970
	}
	return item{line: string(in.Key), window: record.FormatMicros(start), id: string(n.ID)}, true
}

// maxRecordsPerRow bounds the records listed for one row (an id repeated many
// times by duplicates).
const maxRecordsPerRow = 8

func (ex *explainer) explain(row any) []RecordNote {
	var ins []record.Input
	// inWindow adds the records of stream that carry id in the row's line
	// and window.
	inWindow := func(stream record.Stream, line, windowStart, id string) {
		want := item{line: line, window: windowOf(windowStart), id: id}
		for _, in := range ex.byID[string(stream)+"|"+id] {
			if it, ok := recordItem(in, ex.w); ok && it == want {
				ins = append(ins, in)
			}
		}
	}
	atPos := func(stream string, partition int32, offset int64) {
		if in, ok := ex.byPos[posKey(stream, partition, offset)]; ok {
			ins = append(ins, in)
		}
	}
	switch r := row.(type) {
	case results.Packed:
		inWindow(record.Toys, r.Line, r.WindowStart, r.ToyID)
		inWindow(record.Boxes, r.Line, r.WindowStart, r.BoxID)
	case results.Unpacked:
		inWindow(record.Toys, r.Line, r.WindowStart, r.ToyID)
	case results.Spare:
		inWindow(record.Boxes, r.Line, r.WindowStart, r.BoxID)
	case results.Late:
		atPos(r.Stream, r.Partition, r.Offset)
	case results.Dead:
		atPos(r.Stream, r.Partition, r.Offset)
	}
	notes := []RecordNote{}
	for i, in := range ins {
		if i == maxRecordsPerRow {
			break
		}
		n := sqlengine.Normalize(in)
		note := RecordNote{
			Stream: string(in.Stream), Partition: in.Partition, Offset: in.Offset,
			Key: printable(in.Key), Value: abridge(printable(in.Value), 160),
			Goka: ex.goka.classify(in), SQL: ex.sql.classify(in), Reference: ex.reference.classify(in),
		}
		if n.MadeAt != nil {
			note.MadeAt = *n.MadeAt
		}
		notes = append(notes, note)
	}
	return notes
}

// sideIndex is one side's results, indexed to classify input records: dead
// and late rows by their record's position, the others by (line, window,
// id).
type sideIndex struct {
	w                    int64             // W in µs
	dead                 map[string]string // position -> reason
	late                 map[string]bool   // position
	packedToy, packedBox map[item]results.Packed
	unpacked, spare      map[item]string // -> window_start as the row has it
}

func indexSide(s results.Set, w int64) sideIndex {
	x := sideIndex{w: w, dead: map[string]string{}, late: map[string]bool{}, packedToy: map[item]results.Packed{},
		packedBox: map[item]results.Packed{}, unpacked: map[item]string{}, spare: map[item]string{}}
	for _, d := range s.Dead {
		x.dead[posKey(d.Stream, d.Partition, d.Offset)] = d.Reason
	}
	for _, r := range s.Late {
		x.late[posKey(r.Stream, r.Partition, r.Offset)] = true
	}
	for _, r := range s.Packed {
		ws := windowOf(r.WindowStart)
		x.packedToy[item{r.Line, ws, r.ToyID}] = r
		x.packedBox[item{r.Line, ws, r.BoxID}] = r
	}
	for _, r := range s.Unpacked {
		x.unpacked[item{r.Line, windowOf(r.WindowStart), r.ToyID}] = r.WindowStart
	}
	for _, r := range s.Spare {
		x.spare[item{r.Line, windowOf(r.WindowStart), r.BoxID}] = r.WindowStart
	}
	return x
}

// classify says what this side reported for the record: a dead letter or a
// late row at its position, or the row of its line and window that holds its
// id. (A duplicate's id is that of an earlier record of its window, so
// only its dead row is its own.)
func (x sideIndex) classify(in record.Input) string {
	pos := posKey(string(in.Stream), in.Partition, in.Offset)
	if reason, ok := x.dead[pos]; ok {
		return "dead (" + reason + ")"
	}
	if x.late[pos] {
		return "late"
	}
	it, ok := recordItem(in, x.w)
	if !ok {
		return "no row"
	}
	if in.Stream == record.Toys {
		if p, ok := x.packedToy[it]; ok {
			return fmt.Sprintf("packed with box %q in window %s", p.BoxID, p.WindowStart)
		}
		if w, ok := x.unpacked[it]; ok {
			return "unpacked in window " + w
		}
	} else {
		if p, ok := x.packedBox[it]; ok {
			return fmt.Sprintf("holds toy %q in window %s", p.ToyID, p.WindowStart)
		}
		if w, ok := x.spare[it]; ok {
			return "spare in window " + w
		}
	}
	return "no row"
}

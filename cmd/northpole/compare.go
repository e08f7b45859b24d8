package main

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/northpole-workshop/northpole/internal/contract"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
	"github.com/northpole-workshop/northpole/internal/sqlengine"
	"github.com/northpole-workshop/northpole/internal/topicread"
	"github.com/northpole-workshop/northpole/processors/packer"
	"github.com/northpole-workshop/northpole/risingwave"
)

type compareOptions struct {
	kafka            kafkaOptions
	topics           packer.Topics
	window, lateness time.Duration
	sql              string
	load             bool
	schema           string
	json             bool
	rows             int
	printRisingWave  bool
	timeout          time.Duration
}

func newCompareCmd() *cobra.Command {
	def := packer.DefaultConfig()
	o := compareOptions{topics: def.Topics, window: def.Window, lateness: def.Lateness, schema: "public", rows: 10, timeout: 5 * time.Minute}
	cmd := &cobra.Command{
		Use:   "compare",
		Short: "Compare Goka's five result topics with a SQL engine's five result relations",
		Long: `compare reads what the Goka packer wrote (the topics packed, unpacked, spare,
late and dead-letters, deduplicated by key) and the five result relations of a
SQL engine that ran the contract's shared SQL text (risingwave/sql/contract),
and prints, per size class, the rows of each set on each side, the equal rows,
and the rows only one side has. Each differing row comes with the input records
that explain it: where they are (partition, offset), their key and made_at, and
what Goka, the SQL engine and the batch reference made of each.

The SQL side is one of:
  (no --sql)             the embedded SQLite: the input topics are read and the
                         shared SQL runs in process, no server needed
  --sql postgres://...   the relations np_packed, np_unpacked, np_spare, np_late
                         and np_dead in --schema of a PostgreSQL-protocol server:
                         RisingWave's materialized views (risingwave/risingwave.sql,
                         e.g. --sql postgres://root@localhost:4566/dev), or a
                         PostgreSQL loaded earlier
  --sql ... --load       PostgreSQL: load the input topics into tables in
                         --schema (dropping northpole's np_* tables there first),
                         run the shared SQL, then compare

--window and --lateness must be those Goka ran with; the embedded and loaded
engines use them, and the reference uses them to explain differences. (A
RisingWave script has them written in; see --risingwave-sql.)

--risingwave-sql prints the RisingWave script for --window, --lateness, the
topics and --brokers (RisingWave's view of Kafka) and exits.

Exit status: 0 when both sides have the same rows, 3 when they differ, 1 on
error, 2 on bad flags.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCompare(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	o.kafka.bind(f, "Kafka bootstrap brokers, host:port[,host:port] (default $NORTHPOLE_BROKERS)")
	t := &o.topics
	f.StringVar(&t.Toys, "toys-topic", t.Toys, "input topic of toys")
	f.StringVar(&t.Boxes, "boxes-topic", t.Boxes, "input topic of boxes")
	f.StringVar(&t.Packed, "packed-topic", t.Packed, "Goka's packed topic")
	f.StringVar(&t.Unpacked, "unpacked-topic", t.Unpacked, "Goka's unpacked topic")
	f.StringVar(&t.Spare, "spare-topic", t.Spare, "Goka's spare topic")
	f.StringVar(&t.Late, "late-topic", t.Late, "Goka's late topic")
	f.StringVar(&t.Dead, "dead-topic", t.Dead, "Goka's dead-letter topic")
	f.DurationVar(&o.window, "window", o.window, "window width W Goka ran with")
	f.DurationVar(&o.lateness, "lateness", o.lateness, "allowed lateness L Goka ran with")
	f.StringVar(&o.sql, "sql", "", "DSN of a PostgreSQL-protocol server holding the result relations (RisingWave or PostgreSQL); default: the embedded SQLite")
	f.BoolVar(&o.load, "load", false, "with --sql: load the input topics into PostgreSQL and run the shared SQL there first")
	f.StringVar(&o.schema, "schema", o.schema, "schema of the result relations (and of the tables --load creates)")
	f.BoolVar(&o.json, "json", false, "print the comparison as JSON")
	f.IntVar(&o.rows, "rows", o.rows, "differing rows shown per set and side in the text output (all are in --json)")
	f.BoolVar(&o.printRisingWave, "risingwave-sql", false, "print the RisingWave script (sources and materialized views) and exit")
	f.DurationVar(&o.timeout, "timeout", o.timeout, "give up after this long")
	return cmd
}

func runCompare(ctx context.Context, o compareOptions, stdout io.Writer) error {
	p := contract.Params{Window: o.window, Lateness: o.lateness}
	if err := p.Validate(); err != nil {
		return usageErr("%w", err)
	}
	if o.load && o.sql == "" {
		return usageErr("--load needs --sql (the PostgreSQL to load into)")
	}
	if err := sqlengine.ValidSchema(o.schema); err != nil {
		return usageErr("--schema: %w", err)
	}
	if o.timeout <= 0 {
		return usageErr("--timeout must be positive, got %v", o.timeout)
	}
	if o.rows < 0 {
		return usageErr("--rows must be >= 0, got %d", o.rows)
	}
	if o.printRisingWave {
		so := risingwave.ScriptOptions{Brokers: o.kafka.brokers, ToysTopic: o.topics.Toys, BoxesTopic: o.topics.Boxes, Params: p}
		if so.Brokers == "" {
			so.Brokers = risingwave.DefaultScriptOptions().Brokers
		}
		s, err := risingwave.Script(so)
		if err != nil {
			return usageErr("%w", err)
		}
		_, err = io.WriteString(stdout, s)
		return err
	}
	kc, err := o.kafka.config("northpole-compare")
	if err != nil {
		return err
	}
	if len(kc.Brokers) == 0 {
		return usageErr("no Kafka: give --brokers or set $NORTHPOLE_BROKERS")
	}
	if err := kc.Validate(); err != nil {
		return usageErr("%w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()

	toys, err := topicread.Inputs(ctx, kc, o.topics.Toys, record.Toys)
	if err != nil {
		return fmt.Errorf("read input topic %s: %w", o.topics.Toys, err)
	}
	boxes, err := topicread.Inputs(ctx, kc, o.topics.Boxes, record.Boxes)
	if err != nil {
		return fmt.Errorf("read input topic %s: %w", o.topics.Boxes, err)
	}
	inputs := slices.Concat(toys, boxes)
	goka, raw, err := packer.ReadResults(ctx, kc, o.topics)
	if err != nil {
		return fmt.Errorf("read Goka's result topics: %w", err)
	}
	sqlSet, engine, err := sqlSide(ctx, o, inputs, p)
	if err != nil {
		return err
	}
	c := buildComparison(goka, sqlSet, inputs, p)
	// A key Goka wrote with two different values (a toy in two boxes) is
	// a fault even if the first values read happen to match the SQL.
	c.GokaConflicts = raw.Conflicts
	c.Equal = c.Equal && raw.Conflicts == 0
	c.Goka = fmt.Sprintf("Goka (topics %s, %s, %s, %s, %s at %s)", o.topics.Packed, o.topics.Unpacked, o.topics.Spare,
		o.topics.Late, o.topics.Dead, strings.Join(kc.Brokers, ","))
	c.SQL = engine
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(c); err != nil {
			return fmt.Errorf("write JSON: %w", err)
		}
	} else {
		printComparison(stdout, c, o.rows)
	}
	if !c.Equal {
		return &exitError{code: 3, err: fmt.Errorf("Goka and %s differ on %d rows (%d conflicting Goka keys)", engine, len(c.Differences), c.GokaConflicts)}
	}
	return nil
}

// sqlSide computes or reads the SQL engine's five sets, and describes the
// engine.
func sqlSide(ctx context.Context, o compareOptions, inputs []record.Input, p contract.Params) (results.Set, string, error) {
	switch {
	case o.sql == "":
		set, err := embeddedSQL(ctx, inputs, p)
		return set, "the embedded SQLite (the shared contract SQL on the input topics)", err
	case o.load:
		e, err := sqlengine.OpenPostgres(ctx, o.sql, o.schema, slog.Default())
		if err != nil {
			return results.Set{}, "", err
		}
		defer e.Close()
		set, err := e.Compute(ctx, inputs, p)
		return set, fmt.Sprintf("PostgreSQL at %s (the input topics loaded into schema %s, the shared contract SQL run there)", dsnHost(o.sql), o.schema), err
	default:
		db, err := sqlengine.OpenReader(ctx, o.sql)
		if err != nil {
			return results.Set{}, "", err
		}
		defer db.Close()
		set, err := sqlengine.ReadResults(ctx, db, o.schema)
		if err != nil {
			return results.Set{}, "", fmt.Errorf("%w (did the RisingWave script, or compare --load, create them in schema %s?)", err, o.schema)
		}
		return set, fmt.Sprintf("the result relations in schema %s at %s (%s)", o.schema, dsnHost(o.sql), serverName(ctx, db)), nil
	}
}

// embeddedSQL runs the shared SQL on the embedded SQLite: what the demo and
// compare without --sql do.
func embeddedSQL(ctx context.Context, inputs []record.Input, p contract.Params) (results.Set, error) {
	e, err := sqlengine.OpenSQLite(ctx, slog.Default())
	if err != nil {
		return results.Set{}, err
	}
	defer e.Close()
	return e.Compute(ctx, inputs, p)
}

// dsnHost is the DSN without its password, for people.
func dsnHost(dsn string) string {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return "(unparsable DSN)"
	}
	return fmt.Sprintf("%s:%d/%s", cfg.Host, cfg.Port, cfg.Database)
}

// serverName says which server answered: RisingWave's version() names it.
func serverName(ctx context.Context, db *sql.DB) string {
	var v string
	if err := db.QueryRowContext(ctx, "SELECT version()").Scan(&v); err != nil {
		return "server version unknown"
	}
	if len(v) > 60 {
		v = v[:60] + "..."
	}
	return v
}

// Sets in display order; dead rows have no trusted size and are counted
// under "all".
var setNames = []string{"packed", "unpacked", "spare", "late", "dead"}

type setCounts struct {
	Goka     int `json:"goka"`
	SQL      int `json:"sql"`
	Equal    int `json:"equal"`
	OnlyGoka int `json:"only_goka"`
	OnlySQL  int `json:"only_sql"`
}

// recordNote is one input record that explains a difference, with what each
// side (and the reference) made of it.
type recordNote struct {
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

type difference struct {
	Set     string       `json:"set"`
	OnlyIn  string       `json:"only_in"` // "goka" or "sql"
	Size    string       `json:"size,omitempty"`
	Row     any          `json:"row"`
	Records []recordNote `json:"records"`
}

type comparison struct {
	Equal    bool   `json:"equal"`
	Goka     string `json:"goka"`
	SQL      string `json:"sql"`
	Window   string `json:"window"`
	Lateness string `json:"lateness"`
	Inputs   int    `json:"inputs"`
	// GokaConflicts counts output keys Goka wrote with two different values.
	GokaConflicts int                             `json:"goka_conflicting_keys"`
	Counts        map[string]map[string]setCounts `json:"counts"` // size ("all" for dead) -> set -> counts
	Differences   []difference                    `json:"differences"`
}

// keyedRow is a result row with its comparison key (dead rows: the position
// only, as the contract says) and its size.
type keyedRow struct {
	key, size string
	row       any
}

func rowsOf(s results.Set, set string) []keyedRow {
	var out []keyedRow
	switch set {
	case "packed":
		for _, r := range s.Packed {
			out = append(out, keyedRow{fmt.Sprintf("%+v", r), r.Size, r})
		}
	case "unpacked":
		for _, r := range s.Unpacked {
			out = append(out, keyedRow{fmt.Sprintf("%+v", r), r.Size, r})
		}
	case "spare":
		for _, r := range s.Spare {
			out = append(out, keyedRow{fmt.Sprintf("%+v", r), r.Size, r})
		}
	case "late":
		for _, r := range s.Late {
			out = append(out, keyedRow{fmt.Sprintf("%+v", r), r.Size, r})
		}
	case "dead":
		for _, r := range s.Dead {
			out = append(out, keyedRow{fmt.Sprintf("%s/%d@%d", r.Stream, r.Partition, r.Offset), "all", r})
		}
	}
	return out
}

// buildComparison compares the two sides set by set (as multisets: a row
// reported twice by one side and once by the other is a difference) and
// explains every differing row with the input records behind it.
func buildComparison(goka, sqlSet results.Set, inputs []record.Input, p contract.Params) comparison {
	c := comparison{
		Equal: true, Window: p.Window.String(), Lateness: p.Lateness.String(), Inputs: len(inputs),
		Counts: map[string]map[string]setCounts{}, Differences: []difference{},
	}
	ref := contract.Compute(inputs, p, contract.ClosedOnly)
	ex := newExplainer(inputs, goka, sqlSet, ref)
	for _, set := range setNames {
		g, s := rowsOf(goka, set), rowsOf(sqlSet, set)
		remaining := map[string]int{}
		for _, r := range s {
			remaining[r.key]++
		}
		bump := func(size string, f func(*setCounts)) {
			if c.Counts[size] == nil {
				c.Counts[size] = map[string]setCounts{}
			}
			sc := c.Counts[size][set]
			f(&sc)
			c.Counts[size][set] = sc
		}
		for _, r := range g {
			bump(r.size, func(sc *setCounts) { sc.Goka++ })
			if remaining[r.key] > 0 {
				remaining[r.key]--
				bump(r.size, func(sc *setCounts) { sc.Equal++ })
				continue
			}
			bump(r.size, func(sc *setCounts) { sc.OnlyGoka++ })
			c.Differences = append(c.Differences, difference{Set: set, OnlyIn: "goka", Size: r.size, Row: r.row, Records: ex.explain(r.row)})
		}
		for _, r := range s {
			bump(r.size, func(sc *setCounts) { sc.SQL++ })
			if remaining[r.key] > 0 {
				remaining[r.key]--
				bump(r.size, func(sc *setCounts) { sc.OnlySQL++ })
				c.Differences = append(c.Differences, difference{Set: set, OnlyIn: "sql", Size: r.size, Row: r.row, Records: ex.explain(r.row)})
			}
		}
	}
	c.Equal = len(c.Differences) == 0
	return c
}

// explainer finds the input records behind a result row and says what each
// side made of them.
type explainer struct {
	byID                 map[string][]record.Input // "stream|id": every record carrying the id, valid or not
	byPos                map[string]record.Input   // "stream/partition@offset"
	goka, sql, reference sideIndex
}

func posKey(stream string, partition int32, offset int64) string {
	return fmt.Sprintf("%s/%d@%d", stream, partition, offset)
}

func newExplainer(inputs []record.Input, goka, sqlSet, ref results.Set) *explainer {
	ex := &explainer{byID: map[string][]record.Input{}, byPos: map[string]record.Input{},
		goka: indexSide(goka), sql: indexSide(sqlSet), reference: indexSide(ref)}
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

// maxRecordsPerRow bounds the records listed for one row (an id repeated many
// times by duplicates).
const maxRecordsPerRow = 8

func (ex *explainer) explain(row any) []recordNote {
	var ins []record.Input
	byID := func(stream record.Stream, id string) {
		ins = append(ins, ex.byID[string(stream)+"|"+id]...)
	}
	switch r := row.(type) {
	case results.Packed:
		byID(record.Toys, r.ToyID)
		byID(record.Boxes, r.BoxID)
	case results.Unpacked:
		byID(record.Toys, r.ToyID)
	case results.Spare:
		byID(record.Boxes, r.BoxID)
	case results.Late:
		byID(record.Stream(r.Stream), r.ID)
	case results.Dead:
		if in, ok := ex.byPos[posKey(r.Stream, r.Partition, r.Offset)]; ok {
			ins = append(ins, in)
		}
	}
	notes := []recordNote{}
	for i, in := range ins {
		if i == maxRecordsPerRow {
			break
		}
		n := sqlengine.Normalize(in)
		note := recordNote{
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

// sideIndex is one side's results, indexed to classify input records.
type sideIndex struct {
	dead                 map[string]string // position -> reason
	late                 map[string]string // "stream|size|id" -> made_at
	packedToy, packedBox map[string]results.Packed
	unpacked, spare      map[string]string // "size|id" -> window_start
}

func indexSide(s results.Set) sideIndex {
	x := sideIndex{dead: map[string]string{}, late: map[string]string{}, packedToy: map[string]results.Packed{},
		packedBox: map[string]results.Packed{}, unpacked: map[string]string{}, spare: map[string]string{}}
	for _, d := range s.Dead {
		x.dead[posKey(d.Stream, d.Partition, d.Offset)] = d.Reason
	}
	for _, r := range s.Late {
		x.late[r.Stream+"|"+r.Size+"|"+r.ID] = r.MadeAt
	}
	for _, r := range s.Packed {
		x.packedToy[r.Size+"|"+r.ToyID] = r
		x.packedBox[r.Size+"|"+r.BoxID] = r
	}
	for _, r := range s.Unpacked {
		x.unpacked[r.Size+"|"+r.ToyID] = r.WindowStart
	}
	for _, r := range s.Spare {
		x.spare[r.Size+"|"+r.BoxID] = r.WindowStart
	}
	return x
}

// classify says what this side reported for the record: a dead letter at its
// position, or the row its id and size appear in. (A duplicate's id is that
// of an earlier record, so only its dead row is its own.)
func (x sideIndex) classify(in record.Input) string {
	if reason, ok := x.dead[posKey(string(in.Stream), in.Partition, in.Offset)]; ok {
		return "dead (" + reason + ")"
	}
	n := sqlengine.Normalize(in)
	if n.ID == nil || n.Size == nil {
		return "no row"
	}
	id, size := string(n.ID), *n.Size
	if _, ok := x.late[string(in.Stream)+"|"+size+"|"+id]; ok {
		return "late"
	}
	if in.Stream == record.Toys {
		if p, ok := x.packedToy[size+"|"+id]; ok {
			return fmt.Sprintf("packed with box %q in window %s", p.BoxID, p.WindowStart)
		}
		if w, ok := x.unpacked[size+"|"+id]; ok {
			return "unpacked in window " + w
		}
	} else {
		if p, ok := x.packedBox[size+"|"+id]; ok {
			return fmt.Sprintf("holds toy %q in window %s", p.ToyID, p.WindowStart)
		}
		if w, ok := x.spare[size+"|"+id]; ok {
			return "spare in window " + w
		}
	}
	return "no row"
}

// printable shows bytes as text, or quoted with escapes when not UTF-8.
func printable(b []byte) string {
	if b == nil {
		return "(none)"
	}
	if utf8.Valid(b) {
		return string(b)
	}
	return strconv.Quote(string(b))
}

func abridge(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// printComparison writes the side-by-side table and the differences.
func printComparison(w io.Writer, c comparison, maxRows int) {
	fmt.Fprintf(w, "%s\n  vs %s\n  W=%s L=%s, %d input records\n\n", c.Goka, c.SQL, c.Window, c.Lateness, c.Inputs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "size\tset\tgoka\tsql\tequal\tonly goka\tonly sql\t")
	for _, size := range append(slices.Clone(record.Sizes), "all") {
		for _, set := range setNames {
			sc, ok := c.Counts[size][set]
			if (size == "all") != (set == "dead") {
				continue
			}
			if !ok && size == "all" {
				sc = setCounts{}
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t\n", size, set, sc.Goka, sc.SQL, sc.Equal, sc.OnlyGoka, sc.OnlySQL)
		}
	}
	tw.Flush()
	if c.GokaConflicts > 0 {
		fmt.Fprintf(w, "\nGoka wrote %d output keys with two different values (the first of each is compared)\n", c.GokaConflicts)
	}
	if c.Equal {
		fmt.Fprintln(w, "\nequal: Goka and the SQL engine have the same rows in all five sets")
		return
	}
	fmt.Fprintf(w, "\nDIFFERENT: %d rows are on one side only\n", len(c.Differences))
	shown := map[string]int{}
	for _, d := range c.Differences {
		k := d.Set + "|" + d.OnlyIn
		shown[k]++
		if shown[k] > maxRows {
			if shown[k] == maxRows+1 {
				fmt.Fprintf(w, "\n%s, only in %s: more rows not shown (--rows, or --json for all)\n", d.Set, d.OnlyIn)
			}
			continue
		}
		fmt.Fprintf(w, "\n%s, only in %s: %s\n", d.Set, d.OnlyIn, rowText(d.Row))
		if len(d.Records) == 0 {
			fmt.Fprintln(w, "  no input record carries this row's id or position")
		}
		for _, n := range d.Records {
			at := ""
			if n.MadeAt != "" {
				at = " made_at " + n.MadeAt
			}
			fmt.Fprintf(w, "  %s/%d@%d key %s%s\n    value: %s\n", n.Stream, n.Partition, n.Offset, n.Key, at, abridge(n.Value, 100))
			fmt.Fprintf(w, "    goka: %s\n    sql: %s\n    reference: %s\n", n.Goka, n.SQL, n.Reference)
		}
	}
}

func rowText(row any) string {
	switch r := row.(type) {
	case results.Packed:
		return fmt.Sprintf("toy %q in box %q, %s, window %s", r.ToyID, r.BoxID, r.Size, r.WindowStart)
	case results.Unpacked:
		return fmt.Sprintf("toy %q, %s, window %s", r.ToyID, r.Size, r.WindowStart)
	case results.Spare:
		return fmt.Sprintf("box %q, %s, window %s", r.BoxID, r.Size, r.WindowStart)
	case results.Late:
		return fmt.Sprintf("%s %q, %s, made_at %s", r.Stream, r.ID, r.Size, r.MadeAt)
	case results.Dead:
		return fmt.Sprintf("%s/%d@%d (%s)", r.Stream, r.Partition, r.Offset, r.Reason)
	}
	return fmt.Sprintf("%+v", row)
}

// writeSQLFiles writes the SQL engine's five sets as DIR/sql/*.jsonl, the
// same files as DIR/goka/.
func writeSQLFiles(dir string, s results.Set) error {
	if err := os.MkdirAll(filepath.Join(dir, "sql"), 0o755); err != nil {
		return fmt.Errorf("create output directory: %w", err)
	}
	for _, f := range []struct {
		name string
		rows any
	}{
		{"packed", s.Packed}, {"unpacked", s.Unpacked}, {"spare", s.Spare}, {"late", s.Late}, {"dead", s.Dead},
	} {
		if err := writeJSONL(filepath.Join(dir, "sql", f.name+".jsonl"), f.rows); err != nil {
			return err
		}
	}
	return nil
}

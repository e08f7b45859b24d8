package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/northpole-workshop/northpole/app/compare"
	"github.com/northpole-workshop/northpole/app/harness"
	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
	"github.com/northpole-workshop/northpole/internal/sqlengine"
	"github.com/northpole-workshop/northpole/internal/testsupport/testkafka"
	"github.com/northpole-workshop/northpole/internal/testsupport/testpostgres"
	"github.com/northpole-workshop/northpole/internal/topicread"
	"github.com/northpole-workshop/northpole/processors/packer"
	"github.com/northpole-workshop/northpole/producers"
)

// packedRun is a finished Goka run on its own topics: elves wrote, the packer
// consumed everything and stopped.
type packedRun struct {
	kc  kafkaconf.Config
	cfg packer.Config
}

func runPacker(t *testing.T, ctx context.Context) packedRun {
	t.Helper()
	c := harness.Named(testkafka.Unique("cmp"))
	c.Kafka = testkafka.Config(t)
	c.Packer.Partitions = 2
	for _, e := range []*producers.Config{&c.Toys, &c.Boxes} {
		e.Count, e.Seed = 300, 7
		e.LateRate, e.DupRate, e.BadRate, e.Disorder = 0.05, 0.05, 0.05, 3*time.Second
	}
	p, err := harness.New(c, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	return packedRun{kc: c.Kafka, cfg: p.Config().Packer}
}

// args are the compare flags naming the run's Kafka and topics.
func (r packedRun) args(extra ...string) []string {
	t := r.cfg.Topics
	return append([]string{"compare", "--brokers", strings.Join(r.kc.Brokers, ","),
		"--toys-topic", t.Toys, "--boxes-topic", t.Boxes, "--packed-topic", t.Packed, "--unpacked-topic", t.Unpacked,
		"--spare-topic", t.Spare, "--late-topic", t.Late, "--dead-topic", t.Dead}, extra...)
}

// runCLI runs the northpole command line and returns its output and exit
// code (0, or the code main would exit with).
func runCLI(t *testing.T, ctx context.Context, args ...string) (string, int) {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return out.String(), 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return out.String() + "\nerror: " + err.Error(), ee.code
	}
	return out.String() + "\nerror: " + err.Error(), 1
}

func decodeComparison(t *testing.T, out string) compare.Comparison {
	t.Helper()
	// The JSON document ends where the error line (if any) begins.
	out, _, _ = strings.Cut(out, "\nerror: ")
	var c compare.Comparison
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("compare --json printed something that is not a comparison: %v\n%s", err, out)
	}
	return c
}

// TestCompareReportsAnExtraRecord: compare on a finished run is equal (exit
// 0); then two records are appended to the toys topic that Goka never sees
// (its packer has stopped) while the embedded SQL, which reads the topics,
// does: a malformed value and a late toy. compare must report exactly those
// two rows, only in SQL, with the records that explain them, and exit 3.
func TestCompareReportsAnExtraRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := runPacker(t, ctx)

	out, code := runCLI(t, ctx, r.args("--json")...)
	if code != 0 {
		t.Fatalf("compare on an untouched run: exit %d, want 0\n%s", code, out)
	}
	if c := decodeComparison(t, out); !c.Equal || len(c.Differences) != 0 || c.Counts["all"]["dead"].Goka == 0 {
		t.Fatalf("compare on an untouched run: equal %v, %d differences, counts %v", c.Equal, len(c.Differences), c.Counts)
	}

	// Append after the last toy of size M, in its partition.
	toys, err := topicread.Inputs(ctx, r.kc, r.cfg.Topics.Toys, record.Toys)
	if err != nil {
		t.Fatal(err)
	}
	part := int32(-1)
	for _, in := range toys {
		if string(in.Key) == "M" {
			part = in.Partition
		}
	}
	if part < 0 {
		t.Fatal("no toy of size M in the run")
	}
	late := `{"toy_id":"extra-late","kind":"kite","size":"M","elf":"test","made_at":"2026-12-23T23:00:00Z"}`
	offsets := produceTo(t, r.kc, r.cfg.Topics.Toys, part, []string{`{"toy_id": "broken`, late})

	out, code = runCLI(t, ctx, r.args("--json")...)
	if code != 3 {
		t.Fatalf("compare with two records Goka never saw: exit %d, want 3\n%s", code, out)
	}
	c := decodeComparison(t, out)
	var got []string
	for _, d := range c.Differences {
		got = append(got, fmt.Sprintf("%s only in %s: %s", d.Set, d.OnlyIn, canonJSON(t, d.Row)))
	}
	slices.Sort(got)
	want := []string{
		"dead only in sql: " + canonJSON(t, results.Dead{Stream: "toys", Partition: part, Offset: offsets[0], Reason: "malformed json"}),
		"late only in sql: " + canonJSON(t, results.Late{Stream: "toys", Partition: part, Offset: offsets[1], ID: "extra-late", Line: "M", Size: "M", MadeAt: "2026-12-23T23:00:00Z"}),
	}
	if !slices.Equal(got, want) {
		t.Fatalf("differences:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	for _, d := range c.Differences {
		if len(d.Records) != 1 {
			t.Fatalf("%s row explained by %d records, want the one appended: %+v", d.Set, len(d.Records), d.Records)
		}
		n := d.Records[0]
		wantOff := offsets[0]
		wantSQL := "dead (malformed json)"
		if d.Set == "late" {
			wantOff, wantSQL = offsets[1], "late"
		}
		if n.Partition != part || n.Offset != wantOff || n.Goka != "no row" || n.SQL != wantSQL || n.Reference != wantSQL {
			t.Errorf("%s row explained by %+v, want toys/%d@%d with goka %q, sql and reference %q", d.Set, n, part, wantOff, "no row", wantSQL)
		}
	}
	if m := c.Counts["M"]["late"]; m.OnlySQL != 1 || m.OnlyGoka != 0 || m.SQL != m.Goka+1 {
		t.Errorf("counts of M/late: %+v, want one row only in SQL", m)
	}

	// The text output names the same rows and the records' positions.
	out, code = runCLI(t, ctx, r.args()...)
	t.Logf("compare's text output:\n%s", out)
	for _, s := range []string{"DIFFERENT: 2 rows", fmt.Sprintf("late, only in sql: toys/%d@%d, id \"extra-late\", line M", part, offsets[1]), "goka: no row",
		fmt.Sprintf("toys/%d@%d key M made_at 2026-12-23T23:00:00Z", part, offsets[1])} {
		if !strings.Contains(out, s) {
			t.Errorf("text output lacks %q:\n%s", s, out)
		}
	}
	if code != 3 {
		t.Errorf("text compare: exit %d, want 3", code)
	}

	// The page shows the verdict and the differing rows with their records.
	dir := t.TempDir()
	out, code = runCLI(t, ctx, r.args("--out", dir)...)
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if code != 3 || err != nil {
		t.Fatalf("compare --out: exit %d, %v\n%s", code, err, out)
	}
	for _, s := range []string{"<b>DIFFERENT</b>: Goka vs the embedded SQLite", "2 rows on one side only", "<b>late</b>, only in <b>sql</b>",
		"<code>extra-late</code>", fmt.Sprintf("position <code>toys/%d@%d</code>", part, offsets[1]), "<b>DIFFERENT</b>: Goka vs the batch reference", "0 rows only in Goka, 2 only in the reference"} {
		if !bytes.Contains(page, []byte(s)) {
			t.Errorf("report.html lacks %q", s)
		}
	}
	if !strings.Contains(out, "wrote "+dir+"/report.html") {
		t.Errorf("compare --out did not say where it wrote the page:\n%s", out)
	}
}

// canonJSON is v as JSON with its keys sorted, so that a row decoded from
// compare's output (a map) and a result struct compare equal.
func canonJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	b, err = json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// produceTo appends values (key M) to one partition and returns their offsets.
func produceTo(t *testing.T, kc kafkaconf.Config, topic string, part int32, values []string) []int64 {
	t.Helper()
	p, err := kgo.NewClient(append(kc.Kgo(), kgo.SeedBrokers(kc.Brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var offs []int64
	for _, v := range values {
		r := &kgo.Record{Topic: topic, Partition: part, Key: []byte("M"), Value: []byte(v)}
		if err := p.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
		offs = append(offs, r.Offset)
	}
	return offs
}

// TestCompareReadsSQLRelations: the --sql path (as for RisingWave) on
// PostgreSQL. --load fills a schema and compares (equal); then one packed row
// is deleted from np_packed, and compare reading the relations must report
// exactly that row, only in Goka, and exit 3.
func TestCompareReadsSQLRelations(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	dsn := testpostgres.DSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := runPacker(t, ctx)
	schema := testpostgres.Schema("np_cmp")
	db, err := sqlengine.OpenReader(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	defer func() {
		if err := sqlengine.DropSchema(context.Background(), db, schema); err != nil {
			t.Error(err)
		}
	}()

	out, code := runCLI(t, ctx, r.args("--sql", dsn, "--load", "--schema", schema)...)
	if code != 0 || !strings.Contains(out, "equal: Goka and the SQL engine have the same rows") {
		t.Fatalf("compare --load: exit %d, want 0\n%s", code, out)
	}
	var removed results.Packed
	var toy, box []byte
	var ws int64
	if err := db.QueryRowContext(ctx, "SELECT toy_id, box_id, line, size, window_start FROM "+schema+".np_packed ORDER BY toy_id LIMIT 1").
		Scan(&toy, &box, &removed.Line, &removed.Size, &ws); err != nil {
		t.Fatal(err)
	}
	removed.ToyID, removed.BoxID, removed.WindowStart = string(toy), string(box), record.FormatMicros(ws)
	// A toy id is unique within its line and window only: the row is those
	// three.
	if _, err := db.ExecContext(ctx, "DELETE FROM "+schema+".np_packed WHERE toy_id = $1 AND line = $2 AND window_start = $3", toy, removed.Line, ws); err != nil {
		t.Fatal(err)
	}

	out, code = runCLI(t, ctx, r.args("--sql", dsn, "--schema", schema, "--json")...)
	if code != 3 {
		t.Fatalf("compare after deleting a packed row: exit %d, want 3\n%s", code, out)
	}
	c := decodeComparison(t, out)
	if len(c.Differences) != 1 {
		t.Fatalf("%d differences, want the one deleted row: %+v", len(c.Differences), c.Differences)
	}
	d := c.Differences[0]
	if b, wantRow := canonJSON(t, d.Row), canonJSON(t, removed); d.Set != "packed" || d.OnlyIn != "goka" || b != wantRow {
		t.Fatalf("difference %s only in %s: %s, want packed only in goka: %s", d.Set, d.OnlyIn, b, wantRow)
	}
	// Its two records: the toy and the box, each packed on Goka's side only.
	if len(d.Records) != 2 {
		t.Fatalf("the deleted row is explained by %d records, want the toy and the box: %+v", len(d.Records), d.Records)
	}
	for _, n := range d.Records {
		if !strings.HasPrefix(n.Goka, "packed with box") && !strings.HasPrefix(n.Goka, "holds toy") || n.SQL != "no row" {
			t.Errorf("record %s/%d@%d: goka %q, sql %q; want packed on Goka's side and no row on SQL's", n.Stream, n.Partition, n.Offset, n.Goka, n.SQL)
		}
	}
}

// TestDemoWritesSQLFiles: the demo runs the embedded comparison, says so, and
// with --out writes DIR/sql/*.jsonl beside DIR/goka/*.jsonl (that they hold
// the same rows is app/demo's TestRun), and the map check's verdict in
// summary.json and report.html.
func TestDemoWritesSQLFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	out, code := runCLI(t, ctx, "demo", "--toys", "300", "--boxes", "300", "--out", dir)
	if code != 0 {
		t.Fatalf("demo: exit %d\n%s", code, out)
	}
	if !strings.Contains(out, "SQL check: the contract's SQL on the embedded SQLite gives the same rows as Goka") {
		t.Errorf("the demo did not report the SQL check:\n%s", out)
	}
	if !strings.Contains(out, "wrote "+dir+"/{input,goka,sql}/*.jsonl") {
		t.Errorf("the demo did not say where it wrote its files:\n%s", out)
	}
	for _, set := range results.SetNames {
		for _, side := range []string{"goka", "sql"} {
			if st, err := os.Stat(filepath.Join(dir, side, set+".jsonl")); err != nil || st.Size() == 0 && set == "packed" {
				t.Errorf("%s/%s.jsonl: %v", side, set, err)
			}
		}
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil || !strings.Contains(out, "wrote "+dir+"/report.html") {
		t.Fatalf("report.html: %v\n%s", err, out)
	}
	for _, s := range []string{"<b>equal</b>: Goka vs the embedded SQLite", ">packer</text>", `<tr data-size="S">`,
		"<b>equal</b>: the service map vs the records read back"} {
		if !bytes.Contains(page, []byte(s)) {
			t.Errorf("report.html lacks %q", s)
		}
	}
	var summary struct {
		MapCheck string `json:"map_check"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, "summary.json")); err != nil || json.Unmarshal(b, &summary) != nil || summary.MapCheck != "equal" {
		t.Errorf("summary.json: map_check %q (%v), want equal", summary.MapCheck, err)
	}
}

// TestCompareWarnsOfMisPartitionedInputs: toys of size M appended to the
// other partition than the elves' (as kcat without -X
// topic.partitioner=fnv1a would) make compare exit 3, and it must say why:
// the (stream, size) and its partitions, and how to fix the producer.
func TestCompareWarnsOfMisPartitionedInputs(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := runPacker(t, ctx)
	toys, err := topicread.Inputs(ctx, r.kc, r.cfg.Topics.Toys, record.Toys)
	if err != nil {
		t.Fatal(err)
	}
	part, n := int32(-1), 0 // the valid toys of size M, and their partition
	for _, in := range toys {
		if r, err := record.Parse(in.Stream, in.Key, in.Value); err == nil && r.Size == "M" {
			part = in.Partition
			n++
		}
	}
	if part < 0 {
		t.Fatal("no toy of size M in the run")
	}
	other := 1 - part // runPacker's topics have two partitions
	var stray []string
	for i := range 4 {
		stray = append(stray, fmt.Sprintf(`{"toy_id":"stray-%d","kind":"kite","size":"M","elf":"kcat","made_at":"2026-12-24T00:00:0%dZ"}`, i, i))
	}
	produceTo(t, r.kc, r.cfg.Topics.Toys, other, stray)

	out, code := runCLI(t, ctx, r.args()...)
	if code != 3 {
		t.Fatalf("compare on mis-partitioned toys: exit %d, want 3\n%s", code, out)
	}
	first, second := fmt.Sprintf("partition %d: %d records", part, n), fmt.Sprintf("partition %d: 4 records", other)
	if other < part {
		first, second = second, first
	}
	for _, s := range []string{"WARNING: the input topics are mis-partitioned",
		"toys of line M: " + first + ", " + second, "-X topic.partitioner=fnv1a", "error: the results of Goka and",
		"in more than one partition (partition_spread)"} {
		if !strings.Contains(out, s) {
			t.Errorf("compare's output lacks %q:\n%s", s, out)
		}
	}
	out, code = runCLI(t, ctx, r.args("--json")...)
	c := decodeComparison(t, out)
	if code != 3 || len(c.PartitionSpread) != 1 || c.PartitionSpread[0].Line != "M" || len(c.PartitionSpread[0].Partitions) != 2 {
		t.Errorf("compare --json: exit %d, partition_spread %+v; want exit 3 and toys M over two partitions", code, c.PartitionSpread)
	}
}

// TestDemoOnABrokerUsesFreshTopics: two demos on one Kafka (--brokers) each
// get topics of their own, say which, and neither counts the other's records
// (the second would exit 3 on shared topics).
func TestDemoOnABrokerUsesFreshTopics(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kc := testkafka.Config(t)
	var prefixes []string
	for range 2 {
		dir := t.TempDir()
		out, code := runCLI(t, ctx, "demo", "--brokers", strings.Join(kc.Brokers, ","), "--toys", "200", "--boxes", "200",
			"--servicemap=false", "--out", dir)
		if code != 0 {
			t.Fatalf("demo --brokers: exit %d\n%s", code, out)
		}
		_, rest, ok := strings.Cut(out, "topics demo-")
		prefix, _, _ := strings.Cut(rest, "-{toys,")
		if !ok || prefix == "" {
			t.Fatalf("the demo did not say which topics it used:\n%s", out)
		}
		prefixes = append(prefixes, "demo-"+prefix)
		b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			Topics map[string]string `json:"topics"`
			Inputs map[string]struct {
				Records int `json:"records"`
			} `json:"inputs"`
		}
		if err := json.Unmarshal(b, &s); err != nil || s.Topics["toys"] != "demo-"+prefix+"-toys" {
			t.Errorf("summary.json topics %v (%v), want %s-toys", s.Topics, err, "demo-"+prefix)
		}
		if s.Inputs["toys"].Records != 200 || s.Inputs["boxes"].Records != 200 {
			t.Errorf("the demo read back %+v, want the 200 toys and 200 boxes it made", s.Inputs)
		}
	}
	if prefixes[0] == prefixes[1] {
		t.Errorf("both demos used the topics %s-*", prefixes[0])
	}
}

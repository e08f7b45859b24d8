package compare

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/contract"
	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
)

// TestBuildComparison checks the counting rules without Kafka: rows compared
// as multisets, dead rows by position only, each difference explained by the
// records carrying its id or position.
func TestBuildComparison(t *testing.T) {
	p := contract.Params{Window: 10 * time.Second, Lateness: 5 * time.Second}
	inputs := []record.Input{
		{Stream: record.Toys, Topic: "toys", Partition: 1, Offset: 0, Key: []byte("M"), Value: []byte(`{"toy_id":"t1","size":"M","made_at":"2026-12-24T10:00:01Z"}`)},
		{Stream: record.Boxes, Topic: "boxes", Partition: 1, Offset: 0, Key: []byte("M"), Value: []byte(`{"box_id":"b1","size":"M","made_at":"2026-12-24T10:00:02Z"}`)},
		{Stream: record.Toys, Topic: "toys", Partition: 1, Offset: 1, Key: []byte("M"), Value: []byte(`[]`)},
	}
	packed := results.Packed{ToyID: "t1", BoxID: "b1", Line: "M", Size: "M", WindowStart: "2026-12-24T10:00:00Z"}
	dead := results.Dead{Stream: "toys", Partition: 1, Offset: 1, Reason: "malformed json"}
	cases := []struct {
		name       string
		goka, sql  results.Set
		wantDiffs  []string // set/only_in/size
		wantRecord []string // per difference: stream/partition@offset of its first record
	}{
		{name: "equal", goka: results.Set{Packed: []results.Packed{packed}, Dead: []results.Dead{dead}},
			sql: results.Set{Packed: []results.Packed{packed}, Dead: []results.Dead{dead}}},
		{name: "dead rows are compared on position only",
			goka: results.Set{Dead: []results.Dead{dead}},
			sql:  results.Set{Dead: []results.Dead{{Stream: "toys", Partition: 1, Offset: 1, Reason: "bad size"}}}},
		{name: "a row only in goka", goka: results.Set{Packed: []results.Packed{packed}},
			wantDiffs: []string{"packed/goka/M"}, wantRecord: []string{"toys/1@0"}},
		{name: "a row twice in sql, once in goka", goka: results.Set{Packed: []results.Packed{packed}},
			sql:       results.Set{Packed: []results.Packed{packed, packed}},
			wantDiffs: []string{"packed/sql/M"}, wantRecord: []string{"toys/1@0"}},
		{name: "a dead row only in sql", sql: results.Set{Dead: []results.Dead{dead}},
			wantDiffs: []string{"dead/sql/all"}, wantRecord: []string{"toys/1@1"}},
		// The packer cuts an id too long for a Kafka record; SQL has it whole.
		{name: "an id goka cut equals the whole id", goka: results.Set{Packed: []results.Packed{cutToy(packed, 1)}},
			sql: results.Set{Packed: []results.Packed{packed}}},
		{name: "a cut id whose digest is another's differs", goka: results.Set{Packed: []results.Packed{cutOther(packed)}},
			sql:       results.Set{Packed: []results.Packed{packed}},
			wantDiffs: []string{"packed/goka/M", "packed/sql/M"}, wantRecord: []string{"boxes/1@0", "toys/1@0"}}, // no record has the cut id: the box explains
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Build(c.goka, c.sql, inputs, p)
			if got.Equal != (len(c.wantDiffs) == 0) {
				t.Errorf("Equal = %v with %d differences", got.Equal, len(got.Differences))
			}
			if len(got.Differences) != len(c.wantDiffs) {
				t.Fatalf("%d differences %+v, want %v", len(got.Differences), got.Differences, c.wantDiffs)
			}
			for i, d := range got.Differences {
				if k := d.Set + "/" + d.OnlyIn + "/" + d.Size; k != c.wantDiffs[i] {
					t.Errorf("difference %d is %s, want %s", i, k, c.wantDiffs[i])
				}
				if len(d.Records) == 0 {
					t.Fatalf("difference %d has no record", i)
				}
				r := d.Records[0]
				if k := posKey(r.Stream, r.Partition, r.Offset); k != c.wantRecord[i] {
					t.Errorf("difference %d explained by %s, want %s", i, k, c.wantRecord[i])
				}
			}
			for _, size := range []string{"M", "all"} {
				for set, sc := range got.Counts[size] {
					if sc.Equal+sc.OnlyGoka != sc.Goka || sc.Equal+sc.OnlySQL != sc.SQL {
						t.Errorf("%s/%s counts do not add up: %+v", size, set, sc)
					}
				}
			}
		})
	}
}

// TestWriteText: the text names every difference up to maxRows per set and
// side, says how to see the others, and says so when the sides are equal.
func TestWriteText(t *testing.T) {
	p := contract.Params{Window: 10 * time.Second, Lateness: 5 * time.Second}
	in := record.Input{Stream: record.Toys, Topic: "toys", Partition: 2, Offset: 7, Key: []byte("M"), Value: []byte("\xff not utf-8")}
	dead := results.Dead{Stream: "toys", Partition: 2, Offset: 7, Reason: "malformed json"}
	var b strings.Builder
	WriteText(&b, Build(results.Set{Dead: []results.Dead{dead}}, results.Set{Dead: []results.Dead{dead}}, []record.Input{in}, p), 1, "see more")
	if !strings.Contains(b.String(), "equal: Goka and the SQL engine have the same rows in all five sets") {
		t.Errorf("equal sides:\n%s", b.String())
	}
	late := []results.Late{{Stream: "toys", Partition: 2, Offset: 3, ID: "a", Line: "M", Size: "M", MadeAt: "2026-12-24T10:00:00Z"},
		{Stream: "toys", Partition: 2, Offset: 4, ID: "b", Line: "M", Size: "M", MadeAt: "2026-12-24T10:00:01Z"}}
	b.Reset()
	WriteText(&b, Build(results.Set{}, results.Set{Late: late, Dead: []results.Dead{dead}}, []record.Input{in}, p), 1, "see more")
	out := b.String()
	for _, want := range []string{
		"DIFFERENT: 3 rows are on one side only",
		`late, only in sql: toys/2@3, id "a", line M, made_at 2026-12-24T10:00:00Z`,
		"late, only in sql: more rows not shown (see more)",
		"dead, only in sql: toys/2@7 (malformed json)",
		`toys/2@7 key M`, `value: "\xff not utf-8"`, "goka: no row", "sql: dead (malformed json)",
		"no input record carries this row's ids in its line and window, or is at its position",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the text lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, `id "b"`) {
		t.Errorf("more than one late row shown:\n%s", out)
	}
}

// TestBuildExplainsAnIDReusedInTwoWindows: ids are unique within a window
// only, so toy t1 of window 10:00:00 and toy t1 of window 10:00:10 are two
// items, each packed. A packed row only one side has is explained by the
// records of its own window, and each record is classified by the row of its
// window, not by another window's row with the same id.
func TestBuildExplainsAnIDReusedInTwoWindows(t *testing.T) {
	p := contract.Params{Window: 10 * time.Second, Lateness: 5 * time.Second}
	in := func(stream record.Stream, off int64, value string) record.Input {
		return record.Input{Stream: stream, Topic: string(stream), Partition: 0, Offset: off, Key: []byte("M"), Value: []byte(value)}
	}
	inputs := []record.Input{
		in(record.Toys, 0, `{"toy_id":"t1","size":"M","made_at":"2026-12-24T10:00:01Z"}`),
		in(record.Boxes, 0, `{"box_id":"b1","size":"M","made_at":"2026-12-24T10:00:02Z"}`),
		in(record.Toys, 1, `{"toy_id":"t1","size":"M","made_at":"2026-12-24T10:00:11Z"}`),
		in(record.Boxes, 1, `{"box_id":"b2","size":"M","made_at":"2026-12-24T10:00:12Z"}`),
	}
	first := results.Packed{ToyID: "t1", BoxID: "b1", Line: "M", Size: "M", WindowStart: "2026-12-24T10:00:00Z"}
	second := results.Packed{ToyID: "t1", BoxID: "b2", Line: "M", Size: "M", WindowStart: "2026-12-24T10:00:10Z"}
	if ref := contract.Compute(inputs, p, contract.ClosedOnly); len(results.Compare(ref, results.Set{Packed: []results.Packed{first, second}})) > 0 {
		t.Fatalf("the reference packed %+v, want t1 in both windows", ref.Packed)
	}

	both := results.Set{Packed: []results.Packed{first, second}}
	if c := Build(both, both, inputs, p); !c.Equal || c.Counts["M"]["packed"].Equal != 2 {
		t.Fatalf("the same two rows on both sides: equal %v, counts %+v", c.Equal, c.Counts["M"])
	}

	c := Build(both, results.Set{Packed: []results.Packed{first}}, inputs, p)
	if len(c.Differences) != 1 {
		t.Fatalf("%d differences %+v, want the second window's row", len(c.Differences), c.Differences)
	}
	d := c.Differences[0]
	if d.Set != "packed" || d.OnlyIn != "goka" || d.Row != any(second) {
		t.Fatalf("difference %s only in %s: %+v, want packed only in goka: %+v", d.Set, d.OnlyIn, d.Row, second)
	}
	var got []string
	for _, n := range d.Records {
		got = append(got, fmt.Sprintf("%s goka=%s sql=%s reference=%s", posKey(n.Stream, n.Partition, n.Offset), n.Goka, n.SQL, n.Reference))
	}
	want := []string{
		`toys/0@1 goka=packed with box "b2" in window 2026-12-24T10:00:10Z sql=no row reference=packed with box "b2" in window 2026-12-24T10:00:10Z`,
		`boxes/0@1 goka=holds toy "t1" in window 2026-12-24T10:00:10Z sql=no row reference=holds toy "t1" in window 2026-12-24T10:00:10Z`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("the row is explained by\n  %s\nwant the records of its window only:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}

	// The first window's toy is still packed with b1 on both sides.
	ex := newExplainer(inputs, both, results.Set{Packed: []results.Packed{first}}, both, p)
	if g, s := ex.goka.classify(inputs[0]), ex.sql.classify(inputs[0]); g != s || !strings.Contains(g, `"b1"`) {
		t.Errorf("toy t1 of the first window: goka %q, sql %q; want packed with b1 on both", g, s)
	}

	// An unpacked and a spare row are windowed the same way.
	u := results.Unpacked{ToyID: "t1", Line: "M", Size: "M", WindowStart: "2026-12-24T10:00:10Z"}
	sp := results.Spare{BoxID: "b1", Line: "M", Size: "M", WindowStart: "2026-12-24T10:00:10Z"} // no b1 in that window
	c = Build(results.Set{Unpacked: []results.Unpacked{u}, Spare: []results.Spare{sp}}, results.Set{}, inputs, p)
	if len(c.Differences) != 2 {
		t.Fatalf("%d differences, want the unpacked and the spare row: %+v", len(c.Differences), c.Differences)
	}
	for _, d := range c.Differences {
		switch d.Set {
		case "unpacked":
			if len(d.Records) != 1 || posKey(d.Records[0].Stream, d.Records[0].Partition, d.Records[0].Offset) != "toys/0@1" {
				t.Errorf("unpacked t1 of window 10:00:10 explained by %+v, want toys/0@1 only", d.Records)
			}
		case "spare":
			if len(d.Records) != 0 {
				t.Errorf("spare b1 of window 10:00:10, where no b1 was made, explained by %+v, want no record", d.Records)
			}
		}
	}
}

// TestBuildExplainsTwoLateCopiesOfOneID: two late records with one id are two
// late rows, told apart by position; the one only Goka has is explained by
// its own record, which is late on Goka's side and no row on the SQL's, and
// TestBuildExplainsAnIDReusedOnTwoLines: ids are unique within a line's
// window only, so the same toy and box ids packed on two lines of one size
// in one window are two rows, each explained by the records of its own line.
func TestBuildExplainsAnIDReusedOnTwoLines(t *testing.T) {
	p := contract.Params{Window: 10 * time.Second, Lateness: 5 * time.Second}
	in := func(stream record.Stream, part int32, line string, value string) record.Input {
		return record.Input{Stream: stream, Topic: string(stream), Partition: part, Offset: 0, Key: []byte(line), Value: []byte(value)}
	}
	inputs := []record.Input{
		in(record.Toys, 0, "M/h1", `{"toy_id":"t1","size":"M","made_at":"2026-12-24T10:00:01Z"}`),
		in(record.Boxes, 0, "M/h1", `{"box_id":"b1","size":"M","made_at":"2026-12-24T10:00:02Z"}`),
		in(record.Toys, 1, "M/h2", `{"toy_id":"t1","size":"M","made_at":"2026-12-24T10:00:03Z"}`),
		in(record.Boxes, 1, "M/h2", `{"box_id":"b1","size":"M","made_at":"2026-12-24T10:00:04Z"}`),
	}
	h1 := results.Packed{ToyID: "t1", BoxID: "b1", Line: "M/h1", Size: "M", WindowStart: "2026-12-24T10:00:00Z"}
	h2 := results.Packed{ToyID: "t1", BoxID: "b1", Line: "M/h2", Size: "M", WindowStart: "2026-12-24T10:00:00Z"}
	both := results.Set{Packed: []results.Packed{h1, h2}}
	if ref := contract.Compute(inputs, p, contract.ClosedOnly); len(results.Compare(ref, both)) > 0 {
		t.Fatalf("the reference packed %+v, want t1 on both lines", ref.Packed)
	}
	c := Build(both, results.Set{Packed: []results.Packed{h1}}, inputs, p)
	if len(c.Differences) != 1 || c.Differences[0].Row != any(h2) || c.Differences[0].Line != "M/h2" {
		t.Fatalf("differences %+v, want the row of M/h2 only in goka", c.Differences)
	}
	var got []string
	for _, n := range c.Differences[0].Records {
		got = append(got, fmt.Sprintf("%s goka=%s sql=%s", posKey(n.Stream, n.Partition, n.Offset), n.Goka, n.SQL))
	}
	want := []string{
		`toys/1@0 goka=packed with box "b1" in window 2026-12-24T10:00:00Z sql=no row`,
		`boxes/1@0 goka=holds toy "t1" in window 2026-12-24T10:00:00Z sql=no row`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("the row is explained by\n  %s\nwant the records of its line only:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	var b bytes.Buffer
	WriteText(&b, c, 10, "")
	if want := `packed, only in goka: toy "t1" in box "b1", line M/h2, window 2026-12-24T10:00:00Z`; !strings.Contains(b.String(), want) {
		t.Errorf("the text lacks %q:\n%s", want, b.String())
	}
}

// the text shows where it is.
func TestBuildExplainsTwoLateCopiesOfOneID(t *testing.T) {
	p := contract.Params{Window: 10 * time.Second, Lateness: 5 * time.Second}
	in := func(off int64, value string) record.Input {
		return record.Input{Stream: record.Toys, Topic: "toys", Partition: 3, Offset: off, Key: []byte("M"), Value: []byte(value)}
	}
	inputs := []record.Input{
		in(0, `{"toy_id":"t0","size":"M","made_at":"2026-12-24T10:00:30Z"}`),
		in(1, `{"toy_id":"x","size":"M","made_at":"2026-12-24T10:00:01Z"}`), // late
		in(2, `{"toy_id":"x","size":"M","made_at":"2026-12-24T10:00:02Z"}`), // late again: late comes before duplicate
	}
	late1 := results.Late{Stream: "toys", Partition: 3, Offset: 1, ID: "x", Line: "M", Size: "M", MadeAt: "2026-12-24T10:00:01Z"}
	late2 := results.Late{Stream: "toys", Partition: 3, Offset: 2, ID: "x", Line: "M", Size: "M", MadeAt: "2026-12-24T10:00:02Z"}
	goka := results.Set{Late: []results.Late{late1, late2}}
	if ref := contract.Compute(inputs, p, contract.ClosedOnly); len(results.Compare(ref, goka)) > 0 {
		t.Fatalf("the reference: %+v, want both copies late", ref)
	}
	c := Build(goka, results.Set{Late: []results.Late{late1}}, inputs, p)
	if len(c.Differences) != 1 {
		t.Fatalf("%d differences %+v, want the second late copy", len(c.Differences), c.Differences)
	}
	d := c.Differences[0]
	if d.Set != "late" || d.OnlyIn != "goka" || d.Row != any(late2) {
		t.Fatalf("difference %s only in %s: %+v, want late only in goka: %+v", d.Set, d.OnlyIn, d.Row, late2)
	}
	if len(d.Records) != 1 {
		t.Fatalf("the late row is explained by %d records %+v, want the one at its position", len(d.Records), d.Records)
	}
	if n := d.Records[0]; posKey(n.Stream, n.Partition, n.Offset) != "toys/3@2" || n.Goka != "late" || n.SQL != "no row" || n.Reference != "late" {
		t.Errorf("the late row is explained by %+v, want toys/3@2, late on Goka's side and the reference's, no row on SQL's", n)
	}
	if sc := c.Counts["M"]["late"]; sc != (SetCounts{Goka: 2, SQL: 1, Equal: 1, OnlyGoka: 1}) {
		t.Errorf("counts of M/late: %+v", sc)
	}
	// The first copy is late on both sides.
	if n := newExplainer(inputs, goka, results.Set{Late: []results.Late{late1}}, goka, p); n.sql.classify(inputs[1]) != "late" || n.sql.classify(inputs[2]) != "no row" {
		t.Errorf("SQL's side classifies the copies %q and %q, want late and no row", n.sql.classify(inputs[1]), n.sql.classify(inputs[2]))
	}
	var b strings.Builder
	WriteText(&b, c, 10, "")
	for _, want := range []string{`late, only in goka: toys/3@2, id "x", line M, made_at 2026-12-24T10:00:02Z`, "toys/3@2 key M made_at 2026-12-24T10:00:02Z"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the text lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "toys/3@1") {
		t.Errorf("the text shows the first copy, which both sides have:\n%s", b.String())
	}
}

// cutToy is p as the packer writes it when only keep bytes of its toy id fit.
func cutToy(p results.Packed, keep int) results.Packed {
	p.ToyIDCut = results.CutOf([]byte(p.ToyID))
	p.ToyID = p.ToyID[:keep]
	return p
}

// cutOther is p with a cut toy id that starts like p's but is another id.
func cutOther(p results.Packed) results.Packed {
	p.ToyIDCut = results.CutOf([]byte(p.ToyID[:1] + "x"))
	p.ToyID = p.ToyID[:1]
	return p
}

// TestConfigValidate names every problem of a comparison's configuration.
func TestConfigValidate(t *testing.T) {
	good := Config{Kafka: kafkaconf.Config{Brokers: []string{"k:9092"}}, Params: contract.DefaultParams(), Schema: "public"}
	if err := good.Validate(); err != nil {
		t.Fatalf("Validate() = %v, want nil", err)
	}
	for _, c := range []struct {
		name string
		cfg  Config
		want []string
	}{
		{"everything wrong", Config{Load: true, Schema: "no schema"},
			[]string{"window must be positive", "load needs a DSN", "no schema", "no brokers"}},
		{"not a DSN", Config{Kafka: good.Kafka, Params: good.Params, Schema: "public", DSN: "foo://x"},
			[]string{"compare: sql:", "foo://x"}},
		{"a URL with a bad port", Config{Kafka: good.Kafka, Params: good.Params, Schema: "public", DSN: "postgres://h:port/db"},
			[]string{"compare: sql:"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Validate()
			for _, want := range c.want {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("Validate() = %v, want it to say %q", err, want)
				}
			}
		})
	}
}

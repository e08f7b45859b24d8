package compare

import (
	"strings"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/contract"
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
	packed := results.Packed{ToyID: "t1", BoxID: "b1", Size: "M", WindowStart: "2026-12-24T10:00:00Z"}
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
	late := []results.Late{{Stream: "toys", ID: "a", Size: "M", MadeAt: "2026-12-24T10:00:00Z"}, {Stream: "toys", ID: "b", Size: "M", MadeAt: "2026-12-24T10:00:01Z"}}
	b.Reset()
	WriteText(&b, Build(results.Set{}, results.Set{Late: late, Dead: []results.Dead{dead}}, []record.Input{in}, p), 1, "see more")
	out := b.String()
	for _, want := range []string{
		"DIFFERENT: 3 rows are on one side only",
		`late, only in sql: toys "a", M, made_at 2026-12-24T10:00:00Z`,
		"late, only in sql: more rows not shown (see more)",
		"dead, only in sql: toys/2@7 (malformed json)",
		`toys/2@7 key M`, `value: "\xff not utf-8"`, "goka: no row", "sql: dead (malformed json)",
		"no input record carries this row's id or position",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the text lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, `toys "b"`) {
		t.Errorf("more than one late row shown:\n%s", out)
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

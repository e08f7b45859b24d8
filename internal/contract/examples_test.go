package contract

import (
	"cmp"
	"fmt"
	"slices"
	"testing"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
)

// The worked examples of docs/SEMANTICS.md, so that the document stays true
// to the code. Keep the two in step: same records, same results.

func TestSemanticsExample1UnequalCounts(t *testing.T) {
	in := []record.Input{
		toy(0, "t1", "M", at("10:00:01")),
		toy(1, "t2", "M", at("10:00:07")),
		toy(2, "t3", "M", at("10:00:04")),
		toy(3, "t4", "M", at("10:00:12")),
		box(0, "b1", "M", at("10:00:03")),
		box(1, "b2", "M", at("10:00:15")),
		box(2, "b3", "M", at("10:00:18")),
	}
	want := results.Set{
		Packed:   []results.Packed{packed("t1", "b1", "M", at("10:00:00")), packed("t4", "b2", "M", at("10:00:10"))},
		Unpacked: []results.Unpacked{unpacked("t2", "M", at("10:00:00")), unpacked("t3", "M", at("10:00:00"))},
		Spare:    []results.Spare{spare("b3", "M", at("10:00:10"))},
	}
	if d := diffSets(Compute(in, DefaultParams(), Literal), want); d != "" {
		t.Fatal(d)
	}
}

func TestSemanticsExample2LateAndDuplicate(t *testing.T) {
	in := []record.Input{
		toy(0, "a", "M", at("10:00:02")),
		toy(1, "b", "M", at("10:00:14")),
		toy(2, "c", "M", at("10:00:05")),
		toy(3, "b", "M", at("10:00:15")),
		toy(4, "d", "M", at("10:00:08")),
		box(0, "box1", "M", at("10:00:03")),
	}
	want := results.Set{
		Packed:   []results.Packed{packed("a", "box1", "M", at("10:00:00"))},
		Unpacked: []results.Unpacked{unpacked("c", "M", at("10:00:00")), unpacked("b", "M", at("10:00:10"))},
		Late:     []results.Late{late(T, 4, "d", "M", at("10:00:08"))},
		Dead:     []results.Dead{dead(T, 1, 3, record.ReasonDuplicate)},
	}
	if d := diffSets(Compute(in, DefaultParams(), Literal), want); d != "" {
		t.Fatal(d)
	}
}

func TestSemanticsExample3HeartbeatClosesAWindow(t *testing.T) {
	in := []record.Input{
		toy(0, "t1", "M", at("10:00:01")),
		box(0, "b1", "M", at("10:00:02")),
		toy(1, "t2", "M", at("10:00:03")),
		hb(T, 2, "M", at("10:00:15")),
		hb(B, 1, "M", at("10:00:16")),
		toy(3, "t3", "M", at("10:00:06")),
	}
	p := DefaultParams()
	pk := []results.Packed{packed("t1", "b1", "M", at("10:00:00"))}
	steps := []results.Set{
		{},           // after t1
		{Packed: pk}, // after b1: packed at once
		{Packed: pk}, // after t2: rank 2, no box of rank 2 yet, window open
		{Packed: pk}, // after the toys heartbeat: toys watermark 10:00:10, boxes 09:59:57
		{Packed: pk, Unpacked: []results.Unpacked{unpacked("t2", "M", at("10:00:00"))}}, // boxes heartbeat: closed
		{Packed: pk, Unpacked: []results.Unpacked{unpacked("t2", "M", at("10:00:00"))}, // t3 is late
			Late: []results.Late{late(T, 3, "t3", "M", at("10:00:06"))}},
	}
	for i, want := range steps {
		if d := diffSets(Compute(in[:i+1], p, ClosedOnly), want); d != "" {
			t.Fatalf("after %d records:%s", i+1, d)
		}
	}
}

func TestSemanticsExample4DeadLettersAndHeartbeatIDs(t *testing.T) {
	in := []record.Input{
		raw(T, 0, "M", `{"toy_id": "x", "size": "M", "made_at": "2026-12-24 10:00:30"}`),
		raw(T, 1, "M", `{"heartbeat": true, "toy_id": "x", "size": "M", "made_at": "2026-12-24T10:00:01Z"}`),
		toy(2, "x", "M", at("10:00:02")),
		raw(T, 3, "M", `{"toy_id": "z", "size": "L", "made_at": "2026-12-24T10:00:40Z"}`),
		toy(4, "y", "M", at("10:00:04")),
		box(0, "b1", "M", at("10:00:05")),
	}
	want := results.Set{
		Packed:   []results.Packed{packed("x", "b1", "M", at("10:00:00"))},
		Unpacked: []results.Unpacked{unpacked("y", "M", at("10:00:00"))},
		Dead:     []results.Dead{dead(T, 1, 0, record.ReasonBadMadeAt), dead(T, 1, 3, record.ReasonSizeNotKey)},
	}
	if d := diffSets(Compute(in, DefaultParams(), Literal), want); d != "" {
		t.Fatal(d)
	}
}

// The examples of "What changed in version 2": Compute gives the version 2
// rows; version1Classes checks the document's "version 1" column.

func TestSemanticsExample5ResentAfterItsWindowClosed(t *testing.T) {
	in := []record.Input{
		toy(0, "a", "M", at("10:00:01")),
		toy(1, "a", "M", at("10:00:01")),
		toy(2, "y", "M", at("10:00:20")),
		toy(3, "a", "M", at("10:00:01")),
		box(0, "b1", "M", at("10:00:02")),
	}
	want := results.Set{
		Packed:   []results.Packed{packed("a", "b1", "M", at("10:00:00"))},
		Unpacked: []results.Unpacked{unpacked("y", "M", at("10:00:20"))},
		Late:     []results.Late{late(T, 3, "a", "M", at("10:00:01"))},
		Dead:     []results.Dead{dead(T, 1, 1, record.ReasonDuplicate)},
	}
	if d := diffSets(Compute(in, DefaultParams(), Literal), want); d != "" {
		t.Fatal(d)
	}
	checkVersion1(t, in, map[string]string{
		"toys@0": "item", "toys@1": "duplicate", "toys@2": "item", "toys@3": "duplicate", "boxes@0": "item",
	})
}

func TestSemanticsExample6IDReusedInALaterWindow(t *testing.T) {
	in := []record.Input{
		toy(0, "a", "M", at("10:00:01")),
		toy(1, "a", "M", at("10:00:12")),
		toy(2, "a", "M", at("10:00:13")),
		box(0, "b1", "M", at("10:00:02")),
		box(1, "b2", "M", at("10:00:14")),
	}
	want := results.Set{
		Packed: []results.Packed{packed("a", "b1", "M", at("10:00:00")), packed("a", "b2", "M", at("10:00:10"))},
		Dead:   []results.Dead{dead(T, 1, 2, record.ReasonDuplicate)},
	}
	if d := diffSets(Compute(in, DefaultParams(), Literal), want); d != "" {
		t.Fatal(d)
	}
	checkVersion1(t, in, map[string]string{
		"toys@0": "item", "toys@1": "duplicate", "toys@2": "duplicate", "boxes@0": "item", "boxes@1": "item",
	})
}

func TestSemanticsExample7TwoLateCopiesOfOneID(t *testing.T) {
	in := []record.Input{
		box(0, "a", "M", at("10:00:01")),
		box(1, "z", "M", at("10:00:21")),
		box(2, "c", "M", at("10:00:04")),
		box(3, "c", "M", at("10:00:04")),
		box(4, "a", "M", at("10:00:01")),
		toy(0, "t", "M", at("10:00:03")),
	}
	want := results.Set{
		Packed: []results.Packed{packed("t", "a", "M", at("10:00:00"))},
		Spare:  []results.Spare{spare("z", "M", at("10:00:20"))},
		Late: []results.Late{
			late(B, 2, "c", "M", at("10:00:04")),
			late(B, 3, "c", "M", at("10:00:04")),
			late(B, 4, "a", "M", at("10:00:01")),
		},
	}
	if d := diffSets(Compute(in, DefaultParams(), Literal), want); d != "" {
		t.Fatal(d)
	}
	checkVersion1(t, in, map[string]string{
		"boxes@0": "item", "boxes@1": "item", "boxes@2": "late", "boxes@3": "duplicate", "boxes@4": "duplicate", "toys@0": "item",
	})
}

// checkVersion1 compares version1Classes with what the document says
// version 1 made of each record (by "stream@offset").
func checkVersion1(t *testing.T, in []record.Input, want map[string]string) {
	t.Helper()
	got := version1Classes(in, DefaultParams())
	for k, w := range want {
		if got[k] != w {
			t.Errorf("version 1: %s is %q, the document says %q", k, got[k], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("version 1 classified %v, the document %v", got, want)
	}
}

// version1Classes is the first version of the contract's classification,
// kept only to check the document's "version 1" columns: first match wins,
// heartbeat, duplicate (any earlier toy or box of the (stream, size) with the
// id, however old), late, item. Valid records after 1970 only: enough for
// the examples.
func version1Classes(in []record.Input, p Params) map[string]string {
	in = slices.Clone(in)
	slices.SortFunc(in, func(a, b record.Input) int {
		return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
	type streamSize struct{ stream, size string }
	W, L := p.Window.Microseconds(), p.Lateness.Microseconds()
	clock := map[streamSize]int64{}
	ids := map[streamSize]map[string]bool{}
	out := map[string]string{}
	for _, x := range in {
		rec, err := record.Parse(x.Stream, x.Key, x.Value)
		if err != nil {
			continue
		}
		k := streamSize{string(x.Stream), rec.Size}
		made := rec.MadeAtMicros()
		end := made/W*W + W // made_at after 1970
		prior, seen := clock[k]
		class := "item"
		switch {
		case rec.Heartbeat:
			class = "heartbeat"
		case ids[k][rec.ID]:
			class = "duplicate"
		case seen && prior-L >= end:
			class = "late"
		}
		if !rec.Heartbeat {
			if ids[k] == nil {
				ids[k] = map[string]bool{}
			}
			ids[k][rec.ID] = true
		}
		if !seen || made > prior {
			clock[k] = made
		}
		out[fmt.Sprintf("%s@%d", x.Stream, x.Offset)] = class
	}
	return out
}

package contract

import (
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
		toy(3, "a", "M", at("10:00:15")),
		toy(4, "d", "M", at("10:00:08")),
		box(0, "box1", "M", at("10:00:03")),
	}
	want := results.Set{
		Packed:   []results.Packed{packed("a", "box1", "M", at("10:00:00"))},
		Unpacked: []results.Unpacked{unpacked("c", "M", at("10:00:00")), unpacked("b", "M", at("10:00:10"))},
		Late:     []results.Late{late(T, "d", "M", at("10:00:08"))},
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
			Late: []results.Late{late(T, "t3", "M", at("10:00:06"))}},
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

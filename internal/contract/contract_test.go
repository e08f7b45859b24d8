package contract

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
)

const (
	T = record.Toys
	B = record.Boxes
)

// Every case below is computed by hand from the contract. Unless a case sets
// params, W = 10 s and L = 5 s, so the windows are [10:00:00, 10:00:10),
// [10:00:10, 10:00:20), ... and a record of window [s, s+10) is late once
// its stream-and-size has seen a made_at >= s+15. Size M lives in partition 1,
// S in 0, L in 2, XL in 3 (see part).
type computeCase struct {
	name   string
	params *Params
	mode   Mode
	inputs []record.Input
	want   results.Set
}

func computeCases() []computeCase {
	return []computeCase{
		{
			name: "no input, no rows",
		},
		{
			// t1 at 10:00:09.999999 is the last microsecond of [10:00:00, 10:00:10);
			// t2 at exactly 10:00:10 is the first of the next window. Neither is
			// late: t2 comes second and t1's made_at - 5 s is far below 10:00:20.
			// Boxes likewise: b1 opens window 10:00:00, b2 is the last µs of 10:00:10.
			name: "window boundaries: start belongs to the new window, end-1µs to the old",
			inputs: []record.Input{
				toy(0, "t1", "M", at("10:00:09.999999")),
				toy(1, "t2", "M", at("10:00:10")),
				box(0, "b1", "M", at("10:00:00")),
				box(1, "b2", "M", at("10:00:19.999999")),
			},
			want: results.Set{Packed: []results.Packed{
				packed("t1", "b1", "M", at("10:00:00")),
				packed("t2", "b2", "M", at("10:00:10")),
			}},
		},
		{
			// 10:00:09.999999999 is 1 ns before the boundary: still window 10:00:00
			// (flooring to whole µs never moves a record across a boundary, since
			// boundaries are whole µs). b2 1 ns after 10:00:10 is in window 10:00:10,
			// where there is no toy: spare.
			name: "nanoseconds next to a boundary",
			inputs: []record.Input{
				toy(0, "t1", "M", at("10:00:09.999999999")),
				box(0, "b1", "M", at("10:00:00.000000001")),
				box(1, "b2", "M", at("10:00:10.000000001")),
			},
			want: results.Set{
				Packed: []results.Packed{packed("t1", "b1", "M", at("10:00:00"))},
				Spare:  []results.Spare{spare("b2", "M", at("10:00:10"))},
			},
		},
		{
			// b belongs to [10:00:00, 10:00:10); prior_max = 10:00:15 (a), and
			// 10:00:15 - 5 s = 10:00:10 >= window_end 10:00:10: late, by exactly L.
			// The late row keeps b's made_at to the microsecond.
			name: "late by exactly L",
			inputs: []record.Input{
				toy(0, "a", "M", at("10:00:15")),
				toy(1, "b", "M", at("10:00:09.999999")),
			},
			want: results.Set{
				Unpacked: []results.Unpacked{unpacked("a", "M", at("10:00:10"))},
				Late:     []results.Late{late(T, 1, "b", "M", at("10:00:09.999999"))},
			},
		},
		{
			// prior_max = 10:00:14.999999: minus 5 s is 10:00:09.999999 < 10:00:10,
			// so b is an item of window 10:00:00.
			name: "1µs short of late is not late",
			inputs: []record.Input{
				toy(0, "a", "M", at("10:00:14.999999")),
				toy(1, "b", "M", at("10:00:09.999999")),
			},
			want: results.Set{Unpacked: []results.Unpacked{
				unpacked("b", "M", at("10:00:00")),
				unpacked("a", "M", at("10:00:10")),
			}},
		},
		{
			// prior_max = 10:00:14.999999999 (1 ns short of the bound). In ns,
			// 10:00:09.999999999 < 10:00:10: not late; in µs (floored),
			// 10:00:09.999999 < 10:00:10: not late either.
			name: "1ns short of late is not late",
			inputs: []record.Input{
				toy(0, "a", "M", at("10:00:14.999999999")),
				toy(1, "b", "M", at("10:00:00")),
			},
			want: results.Set{Unpacked: []results.Unpacked{
				unpacked("b", "M", at("10:00:00")),
				unpacked("a", "M", at("10:00:10")),
			}},
		},
		{
			// With L = 0 a record is late as soon as its stream has seen its window's
			// end: b (window 10:00:00) after a at 10:00:10 is late; c, back in
			// window 10:00:10, is not.
			name:   "zero lateness",
			params: &Params{Window: 10 * time.Second},
			inputs: []record.Input{
				toy(0, "a", "M", at("10:00:10")),
				toy(1, "b", "M", at("10:00:09.999999")),
				toy(2, "c", "M", at("10:00:10.5")),
			},
			want: results.Set{
				Unpacked: []results.Unpacked{unpacked("a", "M", at("10:00:10")), unpacked("c", "M", at("10:00:10"))},
				Late:     []results.Late{late(T, 1, "b", "M", at("10:00:09.999999"))},
			},
		},
		{
			// prior_max is per (stream, size): toys M at 10:00:30 makes neither box
			// b1 (boxes, M) nor toy s1 (toys, S) late, though both are 25 s older.
			name: "the lateness clock is per stream and size",
			inputs: []record.Input{
				toy(0, "t1", "M", at("10:00:30")),
				box(0, "b1", "M", at("10:00:05")),
				toy(0, "s1", "S", at("10:00:05")),
			},
			want: results.Set{
				Unpacked: []results.Unpacked{unpacked("t1", "M", at("10:00:30")), unpacked("s1", "S", at("10:00:00"))},
				Spare:    []results.Spare{spare("b1", "M", at("10:00:00"))},
			},
		},
		{
			// The heartbeat at 10:00:16 raises prior_max for t2: 10:00:16 - 5 s =
			// 10:00:11 >= 10:00:10, so t2 (window 10:00:00) is late. t1 is packed
			// with b1; the heartbeat itself is in no set.
			name: "a heartbeat advances the clock and makes a later record late",
			inputs: []record.Input{
				toy(0, "t1", "M", at("10:00:01")),
				hb(T, 1, "M", at("10:00:16")),
				toy(2, "t2", "M", at("10:00:02")),
				box(0, "b1", "M", at("10:00:03")),
			},
			want: results.Set{
				Packed: []results.Packed{packed("t1", "b1", "M", at("10:00:00"))},
				Late:   []results.Late{late(T, 2, "t2", "M", at("10:00:02"))},
			},
		},
		{
			// A heartbeat is never an item: the toys heartbeat does not fill b1.
			name: "a heartbeat is not a toy",
			inputs: []record.Input{
				hb(T, 0, "M", at("10:00:01")),
				box(0, "b1", "M", at("10:00:02")),
			},
			want: results.Set{Spare: []results.Spare{spare("b1", "M", at("10:00:00"))}},
		},
		{
			// "heartbeat": true wins over toy_id "x"; heartbeats take no part in
			// duplicate detection, so the toy x after it is an item, not a duplicate.
			name: "a heartbeat with a toy_id is a heartbeat and makes no duplicate",
			inputs: []record.Input{
				raw(T, 0, "M", `{"heartbeat": true, "toy_id": "x", "size": "M", "made_at": "`+at("10:00:01")+`"}`),
				toy(1, "x", "M", at("10:00:02")),
				box(0, "b1", "M", at("10:00:03")),
			},
			want: results.Set{Packed: []results.Packed{packed("x", "b1", "M", at("10:00:00"))}},
		},
		{
			// Nor is a heartbeat a duplicate of an earlier toy with the same id.
			name: "a heartbeat after a toy with its id is not a duplicate",
			inputs: []record.Input{
				toy(0, "x", "M", at("10:00:01")),
				raw(T, 1, "M", `{"heartbeat": true, "toy_id": "x", "size": "M", "made_at": "`+at("10:00:02")+`"}`),
				box(0, "b1", "M", at("10:00:03")),
			},
			want: results.Set{Packed: []results.Packed{packed("x", "b1", "M", at("10:00:00"))}},
		},
		{
			// "heartbeat": false (or a string "true") is not a heartbeat: with an id,
			// these are ordinary toys.
			name: "heartbeat false or non-boolean with an id is a toy",
			inputs: []record.Input{
				raw(T, 0, "M", `{"heartbeat": false, "toy_id": "x", "size": "M", "made_at": "`+at("10:00:01")+`"}`),
				raw(T, 1, "M", `{"heartbeat": "true", "toy_id": "y", "size": "M", "made_at": "`+at("10:00:02")+`"}`),
				box(0, "b1", "M", at("10:00:03")),
				box(1, "b2", "M", at("10:00:04")),
			},
			want: results.Set{Packed: []results.Packed{
				packed("x", "b1", "M", at("10:00:00")),
				packed("y", "b2", "M", at("10:00:00")),
			}},
		},
		{
			// The second "a" (offset 1) is a duplicate: dead, and no rank. So b1
			// gets a (rank 1) and b2 has no toy of rank 2: spare.
			name: "duplicate of an item",
			inputs: []record.Input{
				toy(0, "a", "M", at("10:00:01")),
				toy(1, "a", "M", at("10:00:02")),
				box(0, "b1", "M", at("10:00:03")),
				box(1, "b2", "M", at("10:00:04")),
			},
			want: results.Set{
				Packed: []results.Packed{packed("a", "b1", "M", at("10:00:00"))},
				Spare:  []results.Spare{spare("b2", "M", at("10:00:00"))},
				Dead:   []results.Dead{dead(T, 1, 1, record.ReasonDuplicate)},
			},
		},
		{
			// Window 10:00:00 is still open for (toys, M) when a comes again at
			// offset 2: the clock is 10:00:12, 10:00:12 - 5 s < 10:00:10. Same
			// window, same id: a duplicate, as in version 1.
			name: "a repeat within the same open window is a duplicate",
			inputs: []record.Input{
				toy(0, "a", "M", at("10:00:01")),
				toy(1, "z", "M", at("10:00:12")),
				toy(2, "a", "M", at("10:00:09")),
				box(0, "b1", "M", at("10:00:03")),
				box(1, "b2", "M", at("10:00:04")),
			},
			want: results.Set{
				Packed:   []results.Packed{packed("a", "b1", "M", at("10:00:00"))},
				Unpacked: []results.Unpacked{unpacked("z", "M", at("10:00:10"))},
				Spare:    []results.Spare{spare("b2", "M", at("10:00:00"))},
				Dead:     []results.Dead{dead(T, 1, 2, record.ReasonDuplicate)},
			},
		},
		{
			// x at offset 1 is late (prior_max 10:00:20 - 5 >= 10:00:10). The x at
			// offset 2 is in window 10:00:20, where no earlier record had id x: an
			// item (version 1 made it a duplicate of the late x).
			name: "a late record makes no later record a duplicate",
			inputs: []record.Input{
				toy(0, "y", "M", at("10:00:20")),
				toy(1, "x", "M", at("10:00:01")),
				toy(2, "x", "M", at("10:00:22")),
			},
			want: results.Set{
				Unpacked: []results.Unpacked{unpacked("x", "M", at("10:00:20")), unpacked("y", "M", at("10:00:20"))},
				Late:     []results.Late{late(T, 1, "x", "M", at("10:00:01"))},
			},
		},
		{
			// The first a is the item; the second and third are both duplicates
			// (the third has an earlier same-id record twice over).
			name: "triple occurrence",
			inputs: []record.Input{
				box(0, "a", "M", at("10:00:01")),
				box(1, "a", "M", at("10:00:02")),
				box(2, "a", "M", at("10:00:03")),
			},
			want: results.Set{
				Spare: []results.Spare{spare("a", "M", at("10:00:00"))},
				Dead:  []results.Dead{dead(B, 1, 1, record.ReasonDuplicate), dead(B, 1, 2, record.ReasonDuplicate)},
			},
		},
		{
			// Ids are unique within a window only. Toy a of window 10:00:00 and toy
			// a of window 10:00:10 are two items, each packed in its own window, as
			// are the two boxes b; neither is late (the clock never passes
			// 10:00:13). The third a (offset 2) repeats the second in window
			// 10:00:10: a duplicate of that one, not of the first. Version 1 made
			// the second a and the second b duplicates too.
			name: "an id reused in a later window is an item in each window",
			inputs: []record.Input{
				toy(0, "a", "M", at("10:00:01")),
				toy(1, "a", "M", at("10:00:12")),
				toy(2, "a", "M", at("10:00:13")),
				box(0, "b", "M", at("10:00:02")),
				box(1, "b", "M", at("10:00:13")),
			},
			want: results.Set{
				Packed: []results.Packed{packed("a", "b", "M", at("10:00:00")), packed("a", "b", "M", at("10:00:10"))},
				Dead:   []results.Dead{dead(T, 1, 2, record.ReasonDuplicate)},
			},
		},
		{
			// The elf re-sends toy a (the same record) at offset 2, after y at
			// 10:00:20 has closed window 10:00:00 for (toys, M): 10:00:20 - 5 s >=
			// 10:00:10. Late comes before duplicate, so the re-sent a is a late
			// row with its own partition and offset; the first a stays packed.
			// Version 1 made it a dead duplicate.
			name: "a re-sent record arriving after its window closed is late",
			inputs: []record.Input{
				toy(0, "a", "M", at("10:00:01")),
				toy(1, "y", "M", at("10:00:20")),
				toy(2, "a", "M", at("10:00:01")),
				box(0, "b1", "M", at("10:00:02")),
			},
			want: results.Set{
				Packed:   []results.Packed{packed("a", "b1", "M", at("10:00:00"))},
				Unpacked: []results.Unpacked{unpacked("y", "M", at("10:00:20"))},
				Late:     []results.Late{late(T, 2, "a", "M", at("10:00:01"))},
			},
		},
		{
			// The a at offset 2 repeats the id of an item of its window (a
			// duplicate) and comes after the clock 10:00:30 closed that window
			// (late): late comes first, so it is a late row, not dead. Version 1
			// said duplicate.
			name: "late wins over duplicate",
			inputs: []record.Input{
				toy(0, "a", "M", at("10:00:01")),
				toy(1, "z", "M", at("10:00:30")),
				toy(2, "a", "M", at("10:00:02")),
			},
			want: results.Set{
				Unpacked: []results.Unpacked{unpacked("a", "M", at("10:00:00")), unpacked("z", "M", at("10:00:30"))},
				Late:     []results.Late{late(T, 2, "a", "M", at("10:00:02"))},
			},
		},
		{
			// The same, on the lateness bound: z at exactly 10:00:15 closes window
			// 10:00:00 for (boxes, M) (10:00:15 - 5 s >= 10:00:10), so the repeated
			// a is late.
			name: "a repeat is late once its window closed, by exactly L",
			inputs: []record.Input{
				box(0, "a", "M", at("10:00:01")),
				box(1, "z", "M", at("10:00:15")),
				box(2, "a", "M", at("10:00:02")),
			},
			want: results.Set{
				Spare: []results.Spare{spare("a", "M", at("10:00:00")), spare("z", "M", at("10:00:10"))},
				Late:  []results.Late{late(B, 2, "a", "M", at("10:00:02"))},
			},
		},
		{
			// 1 µs earlier, z at 10:00:14.999999 leaves window 10:00:00 open, so
			// the repeated a is still a duplicate: an engine must remember the
			// window's ids until the window closes for their stream, not before.
			name: "a repeat 1µs before its window closes is a duplicate",
			inputs: []record.Input{
				box(0, "a", "M", at("10:00:01")),
				box(1, "z", "M", at("10:00:14.999999")),
				box(2, "a", "M", at("10:00:02")),
			},
			want: results.Set{
				Spare: []results.Spare{spare("a", "M", at("10:00:00")), spare("z", "M", at("10:00:10"))},
				Dead:  []results.Dead{dead(B, 1, 2, record.ReasonDuplicate)},
			},
		},
		{
			// Box a is re-sent twice after window 10:00:00 closed for (boxes, M):
			// each copy is a late row of its own, told apart by offset. Box c was
			// never an item: its two copies after the clock passed are two late
			// rows as well. Version 1 had one late row per id at most (the first
			// late c, then a duplicate), and the copies of a were duplicates.
			name: "two late copies of one id are two late rows",
			inputs: []record.Input{
				box(0, "a", "M", at("10:00:01")),
				box(1, "z", "M", at("10:00:21")),
				box(2, "a", "M", at("10:00:01")),
				box(3, "a", "M", at("10:00:01")),
				box(4, "c", "M", at("10:00:04")),
				box(5, "c", "M", at("10:00:04")),
				toy(0, "t", "M", at("10:00:03")),
			},
			want: results.Set{
				Packed: []results.Packed{packed("t", "a", "M", at("10:00:00"))},
				Spare:  []results.Spare{spare("z", "M", at("10:00:20"))},
				Late: []results.Late{
					late(B, 2, "a", "M", at("10:00:01")),
					late(B, 3, "a", "M", at("10:00:01")),
					late(B, 4, "c", "M", at("10:00:04")),
					late(B, 5, "c", "M", at("10:00:04")),
				},
			},
		},
		{
			// The duplicate at 10:00:19 (same window as the a at 10:00:11) still
			// counts in prior_max: b (window 10:00:00) is then late, 10:00:19 - 5 s
			// >= 10:00:10. Without it the clock would be 10:00:11 and b an item.
			name: "a duplicate advances the clock",
			inputs: []record.Input{
				toy(0, "a", "M", at("10:00:11")),
				toy(1, "a", "M", at("10:00:19")),
				toy(2, "b", "M", at("10:00:02")),
			},
			want: results.Set{
				Unpacked: []results.Unpacked{unpacked("a", "M", at("10:00:10"))},
				Late:     []results.Late{late(T, 2, "b", "M", at("10:00:02"))},
				Dead:     []results.Dead{dead(T, 1, 1, record.ReasonDuplicate)},
			},
		},
		{
			// Duplicates are within (stream, size): toy a of size S and toy a of
			// size M are two items, each packed in its own size.
			name: "same id on different sizes is not a duplicate",
			inputs: []record.Input{
				toy(0, "a", "S", at("10:00:01")),
				toy(0, "a", "M", at("10:00:01")),
				box(0, "b1", "S", at("10:00:02")),
				box(0, "b2", "M", at("10:00:02")),
			},
			want: results.Set{Packed: []results.Packed{
				packed("a", "b2", "M", at("10:00:00")),
				packed("a", "b1", "S", at("10:00:00")),
			}},
		},
		{
			// Toy ids and box ids are different namespaces.
			name: "same id on toys and boxes is not a duplicate",
			inputs: []record.Input{
				toy(0, "a", "M", at("10:00:01")),
				box(0, "a", "M", at("10:00:02")),
			},
			want: results.Set{Packed: []results.Packed{packed("a", "a", "M", at("10:00:00"))}},
		},
		{
			// Ids compare after JSON decoding: "\u0061" is "a".
			name: "ids are compared after JSON unescaping",
			inputs: []record.Input{
				toy(0, "a", "M", at("10:00:01")),
				raw(T, 1, "M", `{"toy_id": "\u0061", "size": "M", "made_at": "`+at("10:00:02")+`"}`),
			},
			want: results.Set{
				Unpacked: []results.Unpacked{unpacked("a", "M", at("10:00:00"))},
				Dead:     []results.Dead{dead(T, 1, 1, record.ReasonDuplicate)},
			},
		},
		deadLetterCase(),
		{
			// The dead letters at 10:00:30 (bad size; size L under key M) do not
			// count in prior_max of (toys, M) or (toys, L): b is not late. The
			// boxes dead letter (bad made_at) is not a box: b2 has rank 1.
			name: "dead letters take no part",
			inputs: []record.Input{
				toy(0, "a", "M", at("10:00:01")),
				raw(T, 1, "M", `{"toy_id": "x", "size": "XXL", "made_at": "`+at("10:00:30")+`"}`),
				raw(T, 2, "M", `{"toy_id": "y", "size": "L", "made_at": "`+at("10:00:30")+`"}`),
				toy(3, "b", "M", at("10:00:02")),
				toy(0, "c", "L", at("10:00:03")),
				raw(B, 0, "M", `{"box_id": "b1", "size": "M", "made_at": "2026-12-24 10:00:03"}`),
				box(1, "b2", "M", at("10:00:04")),
			},
			want: results.Set{
				Packed:   []results.Packed{packed("a", "b2", "M", at("10:00:00"))},
				Unpacked: []results.Unpacked{unpacked("c", "L", at("10:00:00")), unpacked("b", "M", at("10:00:00"))},
				Dead: []results.Dead{
					dead(B, 1, 0, record.ReasonBadMadeAt),
					dead(T, 1, 1, record.ReasonBadSize),
					dead(T, 1, 2, record.ReasonSizeNotKey),
				},
			},
		},
		{
			// Ranks follow offsets, not made_at: t2 is older than t1 but comes
			// second, so t1 (rank 1) gets b1 and t2, t3 (ranks 2, 3) find no box.
			name: "more toys than boxes",
			inputs: []record.Input{
				toy(0, "t1", "M", at("10:00:05")),
				toy(1, "t2", "M", at("10:00:01")),
				toy(2, "t3", "M", at("10:00:09")),
				box(0, "b1", "M", at("10:00:08")),
			},
			want: results.Set{
				Packed:   []results.Packed{packed("t1", "b1", "M", at("10:00:00"))},
				Unpacked: []results.Unpacked{unpacked("t2", "M", at("10:00:00")), unpacked("t3", "M", at("10:00:00"))},
			},
		},
		{
			name: "more boxes than toys",
			inputs: []record.Input{
				box(0, "b1", "M", at("10:00:07")),
				box(1, "b2", "M", at("10:00:02")),
				box(2, "b3", "M", at("10:00:03")),
				toy(0, "t1", "M", at("10:00:09")),
			},
			want: results.Set{
				Packed: []results.Packed{packed("t1", "b1", "M", at("10:00:00"))},
				Spare:  []results.Spare{spare("b2", "M", at("10:00:00")), spare("b3", "M", at("10:00:00"))},
			},
		},
		{
			// Each (size, window) packs on its own: m1 (M, 10:00:10) and sb2
			// (S, 10:00:10) share a window but not a size, so they are not packed.
			name: "several sizes and windows",
			inputs: []record.Input{
				toy(0, "s1", "S", at("10:00:01")),
				box(0, "sb1", "S", at("10:00:02")),
				box(1, "sb2", "S", at("10:00:12")),
				toy(0, "m1", "M", at("10:00:11")),
				box(0, "x1", "XL", at("10:00:03")),
				toy(0, "l1", "L", at("10:00:04")),
				toy(1, "l2", "L", at("10:00:14")),
				box(0, "lb1", "L", at("10:00:12")), // 10:00:12 - 5 s < 10:00:10: lb2 is not late
				box(1, "lb2", "L", at("10:00:05")),
			},
			want: results.Set{
				Packed: []results.Packed{
					packed("l1", "lb2", "L", at("10:00:00")),
					packed("l2", "lb1", "L", at("10:00:10")),
					packed("s1", "sb1", "S", at("10:00:00")),
				},
				Unpacked: []results.Unpacked{unpacked("m1", "M", at("10:00:10"))},
				Spare:    []results.Spare{spare("sb2", "S", at("10:00:10")), spare("x1", "XL", at("10:00:00"))},
			},
		},
		{
			// Windows 10:00:10 and 10:00:20 hold nothing: no rows for them.
			name: "empty windows produce no rows",
			inputs: []record.Input{
				toy(0, "t1", "M", at("10:00:01")),
				toy(1, "t2", "M", at("10:00:31")),
				box(0, "b1", "M", at("10:00:02")),
				box(1, "b2", "M", at("10:00:33")),
			},
			want: results.Set{Packed: []results.Packed{
				packed("t1", "b1", "M", at("10:00:00")),
				packed("t2", "b2", "M", at("10:00:30")),
			}},
		},
		{
			// made_at -5 s (23:59:55): floor(-5/10)*10 = -10 s, window 23:59:50;
			// truncation would say 1970-01-01T00:00:00. t2 at -100 ns is -1 µs when
			// floored (not 0), so also window 23:59:50, rank 2. t3 at
			// 23:59:44.999999 is in window 23:59:40 (end -10 s); prior_max is -1 µs,
			// and -1 µs - 5 s >= -10 s: late. b1 at 0 opens window 1970-01-01T00:00:00;
			// b2 at exactly -10 s is the start of window 23:59:50 and not late
			// (0 - 5 s < 0 s).
			name: "times before 1970 use floor, not truncation",
			inputs: []record.Input{
				toy(0, "t1", "M", "1969-12-31T23:59:55Z"),
				toy(1, "t2", "M", "1969-12-31T23:59:59.9999999Z"),
				toy(2, "t3", "M", "1969-12-31T23:59:44.999999Z"),
				box(0, "b1", "M", "1970-01-01T00:00:00Z"),
				box(1, "b2", "M", "1969-12-31T23:59:50Z"),
			},
			want: results.Set{
				Packed:   []results.Packed{packed("t1", "b2", "M", "1969-12-31T23:59:50Z")},
				Unpacked: []results.Unpacked{unpacked("t2", "M", "1969-12-31T23:59:50Z")},
				Spare:    []results.Spare{spare("b1", "M", "1970-01-01T00:00:00Z")},
				Late:     []results.Late{late(T, 2, "t3", "M", "1969-12-31T23:59:44.999999Z")},
			},
		},
		{
			// made_at in any offset is the same instant: 11:00:05+01:00 is
			// 10:00:05Z. The late row is printed in UTC and keeps all 9 fractional
			// digits; windows are printed in UTC.
			name: "offsets and nanoseconds in the output",
			inputs: []record.Input{
				toy(0, "t1", "M", "2026-12-24T11:00:05+01:00"),
				box(0, "b1", "M", "2026-12-24T04:30:06-05:30"),
				box(1, "b2", "M", at("10:00:20")),
				box(2, "b3", "M", "2026-12-24T10:00:01.123456789+00:00"),
			},
			want: results.Set{
				Packed: []results.Packed{packed("t1", "b1", "M", at("10:00:00"))},
				Spare:  []results.Spare{spare("b2", "M", at("10:00:20"))},
				Late:   []results.Late{late(B, 2, "b3", "M", at("10:00:01.123456789"))},
			},
		},
		{
			// W = 7.5 ms, L = 2.5 ms: windows start at multiples of 7500 µs since
			// the epoch. 10:00:00 is 1798106400 s, a multiple of 7.5 ms, so windows
			// are [.0000, .0075), [.0075, .0150), ... t1 at .0074 and b1 at .0001
			// share window .0000; t2 at .0075 opens the next one. b2 at .0049 is
			// in window .0000, prior_max .0100 - .0025 = .0075 >= .0075: late.
			name:   "sub-second window and lateness",
			params: &Params{Window: 7500 * time.Microsecond, Lateness: 2500 * time.Microsecond},
			inputs: []record.Input{
				toy(0, "t1", "M", at("10:00:00.0074")),
				toy(1, "t2", "M", at("10:00:00.0075")),
				box(0, "b1", "M", at("10:00:00.0001")),
				box(1, "b3", "M", at("10:00:00.01")),
				box(2, "b2", "M", at("10:00:00.0049")),
			},
			want: results.Set{
				Packed: []results.Packed{
					packed("t1", "b1", "M", at("10:00:00")),
					packed("t2", "b3", "M", at("10:00:00.0075")),
				},
				Late: []results.Late{late(B, 2, "b2", "M", at("10:00:00.0049"))},
			},
		},
		{
			// Offsets, not the order of the input slice, decide: t0 (offset 0) at
			// 10:00:20 comes before t1 (offset 1), which is therefore late, even
			// though the slice lists t1 first. Same for boxes and rank.
			name: "offset order, not input order",
			inputs: []record.Input{
				toy(1, "t1", "M", at("10:00:01")),
				box(1, "b1", "M", at("10:00:21")),
				toy(0, "t0", "M", at("10:00:20")),
				box(0, "b0", "M", at("10:00:22")),
			},
			want: results.Set{
				Packed: []results.Packed{packed("t0", "b0", "M", at("10:00:20"))},
				Spare:  []results.Spare{spare("b1", "M", at("10:00:20"))},
				Late:   []results.Late{late(T, 1, "t1", "M", at("10:00:01"))},
			},
		},
		{
			// Normally one (topic, size) has one partition. If it had two, we order
			// by (partition, offset): partition 0 offset 7 comes before partition 1
			// offset 0, so "p0" is rank 1.
			name: "several partitions of one size: partition, then offset",
			inputs: []record.Input{
				toy(0, "p1", "M", at("10:00:01")),
				func() record.Input { in := toy(7, "p0", "M", at("10:00:02")); in.Partition = 0; return in }(),
				box(0, "b1", "M", at("10:00:03")),
			},
			want: results.Set{
				Packed:   []results.Packed{packed("p0", "b1", "M", at("10:00:00"))},
				Unpacked: []results.Unpacked{unpacked("p1", "M", at("10:00:00"))},
			},
		},
		{
			// Literal definitions (ClosedOnly false): t2 is unpacked and b2 spare
			// even though the toys' watermark (10:00:02 - 5 s) has not reached
			// either window's end.
			name: "open windows, literal definitions",
			inputs: []record.Input{
				toy(0, "t1", "M", at("10:00:01")),
				toy(1, "t2", "M", at("10:00:02")),
				box(0, "b1", "M", at("10:00:03")),
				box(1, "b2", "M", at("10:00:25")),
			},
			want: results.Set{
				Packed:   []results.Packed{packed("t1", "b1", "M", at("10:00:00"))},
				Unpacked: []results.Unpacked{unpacked("t2", "M", at("10:00:00"))},
				Spare:    []results.Spare{spare("b2", "M", at("10:00:20"))},
			},
		},
		{
			// Same input, ClosedOnly: watermark(toys, M) = 10:00:02 - 5 s < 10:00:10,
			// so neither window 10:00:00 nor 10:00:20 is closed (though the boxes'
			// watermark 10:00:20 passed 10:00:10). Packed is reported, unpacked and
			// spare are not.
			name: "ClosedOnly without final heartbeats",
			mode: ClosedOnly,
			inputs: []record.Input{
				toy(0, "t1", "M", at("10:00:01")),
				toy(1, "t2", "M", at("10:00:02")),
				box(0, "b1", "M", at("10:00:03")),
				box(1, "b2", "M", at("10:00:25")),
			},
			want: results.Set{Packed: []results.Packed{packed("t1", "b1", "M", at("10:00:00"))}},
		},
		{
			// Final heartbeats at 10:00:35 on both streams: both watermarks are
			// 10:00:30, which reaches the end of window 10:00:20 exactly (and of
			// 10:00:00): both windows closed, t2 unpacked and b2 spare are final.
			name: "ClosedOnly with final heartbeats",
			mode: ClosedOnly,
			inputs: []record.Input{
				toy(0, "t1", "M", at("10:00:01")),
				toy(1, "t2", "M", at("10:00:02")),
				hb(T, 2, "M", at("10:00:35")),
				box(0, "b1", "M", at("10:00:03")),
				box(1, "b2", "M", at("10:00:25")),
				hb(B, 2, "M", at("10:00:35")),
			},
			want: results.Set{
				Packed:   []results.Packed{packed("t1", "b1", "M", at("10:00:00"))},
				Unpacked: []results.Unpacked{unpacked("t2", "M", at("10:00:00"))},
				Spare:    []results.Spare{spare("b2", "M", at("10:00:20"))},
			},
		},
		{
			// The toys' final heartbeat is 1 µs short: watermark(toys, M) =
			// 10:00:29.999999 closes window 10:00:00 (end 10:00:10) but not window
			// 10:00:20 (end 10:00:30). So t2 is reported, b2 not yet.
			name: "ClosedOnly with a final heartbeat 1µs short",
			mode: ClosedOnly,
			inputs: []record.Input{
				toy(0, "t1", "M", at("10:00:01")),
				toy(1, "t2", "M", at("10:00:02")),
				hb(T, 2, "M", at("10:00:34.999999")),
				box(0, "b1", "M", at("10:00:03")),
				box(1, "b2", "M", at("10:00:25")),
				hb(B, 2, "M", at("10:00:35")),
			},
			want: results.Set{
				Packed:   []results.Packed{packed("t1", "b1", "M", at("10:00:00"))},
				Unpacked: []results.Unpacked{unpacked("t2", "M", at("10:00:00"))},
			},
		},
		{
			// (boxes, S) has no valid record: its watermark is minus infinity and
			// no S window ever closes, whatever the boxes of size M do. s0's window
			// ends before 1970, so a watermark wrongly taken as 0 would close it.
			name: "ClosedOnly: a stream with no record of the size closes nothing",
			mode: ClosedOnly,
			inputs: []record.Input{
				toy(0, "s0", "S", "1969-12-31T23:59:30Z"),
				toy(1, "s1", "S", at("10:00:01")),
				hb(T, 2, "S", at("10:01:00")),
				hb(B, 0, "M", at("10:01:00")),
			},
		},
		{
			// ClosedOnly changes neither late nor dead rows: b is late and the second
			// a a duplicate, while window 10:00:20 (a) stays open.
			name: "ClosedOnly keeps late and dead rows",
			mode: ClosedOnly,
			inputs: []record.Input{
				toy(0, "a", "M", at("10:00:20")),
				toy(1, "b", "M", at("10:00:01")),
				toy(2, "a", "M", at("10:00:21")),
				raw(T, 3, "M", `{}`),
			},
			want: results.Set{
				Late: []results.Late{late(T, 1, "b", "M", at("10:00:01"))},
				Dead: []results.Dead{dead(T, 1, 2, record.ReasonDuplicate), dead(T, 1, 3, record.ReasonBadMadeAt)},
			},
		},
		// Contract version 3: every record's key is its packing line, and
		// everything is decided per (stream, line).
		{
			// Three lines of size M, one window: a toy goes only into a box of
			// its own line. The same ids on two lines are two items each.
			name: "lines: toys go only into boxes of their own line",
			inputs: []record.Input{
				toy(0, "t1", "M/h1", at("10:00:01")),
				toy(1, "t2", "M/h1", at("10:00:02")),
				box(0, "b1", "M/h2", at("10:00:01")),
				toy(0, "t1", "M/h2", at("10:00:03")),
				box(0, "b9", "M", at("10:00:04")),
				box(1, "b1", "M/h2", at("10:00:05")), // a duplicate on M/h2
				hb(T, 2, "M/h1", at("10:00:30")),
				hb(B, 0, "M/h1", at("10:00:30")),
				hb(T, 1, "M/h2", at("10:00:30")),
				hb(B, 2, "M/h2", at("10:00:30")),
				hb(T, 0, "M", at("10:00:30")),
				hb(B, 1, "M", at("10:00:30")),
			},
			want: results.Set{
				Packed:   []results.Packed{packed("t1", "b1", "M/h2", at("10:00:00"))},
				Unpacked: []results.Unpacked{unpacked("t1", "M/h1", at("10:00:00")), unpacked("t2", "M/h1", at("10:00:00"))},
				Spare:    []results.Spare{spare("b9", "M", at("10:00:00"))},
				Dead:     []results.Dead{dead(B, part("M/h2"), 1, record.ReasonDuplicate)},
			},
		},
		{
			// Each line has its own clock: M/h1 at 10:01:00 makes its own
			// record of 10:00:01 late, not M/h2's or M's.
			name: "lines: lateness per line",
			inputs: []record.Input{
				toy(0, "a", "M/h1", at("10:01:00")),
				toy(1, "b", "M/h1", at("10:00:01")),
				toy(0, "c", "M/h2", at("10:00:01")),
				toy(0, "d", "M", at("10:00:01")),
			},
			want: results.Set{
				Unpacked: []results.Unpacked{unpacked("a", "M/h1", at("10:01:00")), unpacked("c", "M/h2", at("10:00:00")), unpacked("d", "M", at("10:00:00"))},
				Late:     []results.Late{late(T, 1, "b", "M/h1", at("10:00:01"))},
			},
		},
		{
			// Window (l, w) closes when the watermarks of (toys, l) and
			// (boxes, l) reach its end: M's and M/h2's heartbeats close
			// nothing of M/h1, a hall that went quiet, and its quiet does not
			// hold the other lines back.
			name: "lines: windows close per line",
			mode: ClosedOnly,
			inputs: []record.Input{
				toy(0, "q1", "M/h1", at("10:00:01")),
				toy(1, "q2", "M/h1", at("10:00:02")),
				box(0, "qb", "M/h1", at("10:00:03")),
				toy(0, "t", "M/h2", at("10:00:01")),
				toy(0, "u", "M", at("10:00:01")),
				hb(T, 1, "M/h2", at("10:01:00")),
				hb(B, 0, "M/h2", at("10:01:00")),
				hb(T, 1, "M", at("10:01:00")),
				hb(B, 0, "M", at("10:01:00")),
			},
			want: results.Set{
				Packed:   []results.Packed{packed("q1", "qb", "M/h1", at("10:00:00"))},
				Unpacked: []results.Unpacked{unpacked("t", "M/h2", at("10:00:00")), unpacked("u", "M", at("10:00:00"))},
			},
		},
		{
			// Said outright in version 3: at quiescence a window no heartbeat
			// closed (records made after the elves' final heartbeats) reports
			// its pairs, not its unpacked toys or spare boxes; the windows the
			// final heartbeats closed report theirs.
			name: "lines: a window still open at quiescence reports its pairs only",
			mode: ClosedOnly,
			inputs: []record.Input{
				toy(0, "t1", "L/h", at("10:00:01")),
				toy(1, "t2", "L/h", at("10:00:02")),
				box(0, "b1", "L/h", at("10:00:03")),
				hb(T, 2, "L/h", at("10:00:15")), // the final heartbeats: window 10:00:00 closes
				hb(B, 1, "L/h", at("10:00:15")),
				toy(3, "t3", "L/h", at("10:00:21")), // after them: window 10:00:20 stays open
				toy(4, "t4", "L/h", at("10:00:22")),
				box(2, "b3", "L/h", at("10:00:23")),
				box(3, "b4", "XL/h", at("10:00:23")), // window 10:00:20 of XL/h: open too
			},
			want: results.Set{
				Packed: []results.Packed{
					packed("t1", "b1", "L/h", at("10:00:00")),
					packed("t3", "b3", "L/h", at("10:00:20")),
				},
				Unpacked: []results.Unpacked{unpacked("t2", "L/h", at("10:00:00"))},
			},
		},
	}
}

// deadLetterCase has one input per way of being a dead letter, each with the
// reason record.Parse gives first (malformed json, bad made_at, bad size,
// size not key, bad line, no id), all on partition 1 (key M) unless the key is the point.
func deadLetterCase() computeCase {
	ok := at("10:00:01")
	type bad struct {
		stream record.Stream
		key    string
		value  string
		reason record.Reason
	}
	bads := []bad{
		{T, "M", `{"toy_id": "a", "size": "M"`, record.ReasonMalformedJSON},                                             // truncated
		{T, "M", `["a"]`, record.ReasonMalformedJSON},                                                                   // an array, not an object
		{T, "M", `"a"`, record.ReasonMalformedJSON},                                                                     // a string
		{T, "M", `42`, record.ReasonMalformedJSON},                                                                      // a number
		{T, "M", `null`, record.ReasonMalformedJSON},                                                                    // null
		{T, "M", ``, record.ReasonMalformedJSON},                                                                        // empty value
		{T, "M", "  \n", record.ReasonMalformedJSON},                                                                    // whitespace only
		{T, "M", `{}{}`, record.ReasonMalformedJSON},                                                                    // two objects
		{T, "M", "{\"toy_id\": \"\xff\", \"size\": \"M\", \"made_at\": \"" + ok + "\"}", record.ReasonMalformedJSON},    // invalid UTF-8
		{T, "M", "\ufeff{\"toy_id\": \"a\", \"size\": \"M\", \"made_at\": \"" + ok + "\"}", record.ReasonMalformedJSON}, // BOM
		{T, "M", `{"toy_id": "a", "size": "M"}`, record.ReasonBadMadeAt},                                                // missing
		{T, "M", `{"toy_id": "a", "size": "M", "made_at": 1798106400}`, record.ReasonBadMadeAt},                         // a number
		{T, "M", `{"toy_id": "a", "size": "M", "made_at": null}`, record.ReasonBadMadeAt},                               // null
		{T, "M", `{"toy_id": "a", "size": "M", "made_at": ""}`, record.ReasonBadMadeAt},                                 // empty
		{T, "M", `{"toy_id": "a", "size": "M", "made_at": "2026-12-24 10:00:00"}`, record.ReasonBadMadeAt},              // SQL style
		{T, "M", `{"toy_id": "a", "size": "M", "made_at": "2026-12-24T10:00:00"}`, record.ReasonBadMadeAt},              // no offset
		{T, "M", `{"toy_id": "a", "size": "M", "made_at": "2026-02-30T10:00:00Z"}`, record.ReasonBadMadeAt},             // no such day
		{T, "M", `{"toy_id": "a", "size": "M", "made_at": "2026-12-31T23:59:60Z"}`, record.ReasonBadMadeAt},             // leap second
		{T, "M", `{"toy_id": "a", "size": "M", "made_at": "2026-12-24T10:00:00,5Z"}`, record.ReasonBadMadeAt},           // comma fraction
		{T, "M", `{"toy_id": "a", "size": "XXL", "made_at": "` + ok + `"}`, record.ReasonBadSize},
		{T, "M", `{"toy_id": "a", "size": "m", "made_at": "` + ok + `"}`, record.ReasonBadSize}, // case matters
		{T, "M", `{"toy_id": "a", "made_at": "` + ok + `"}`, record.ReasonBadSize},              // missing
		{T, "M", `{"toy_id": "a", "size": 2, "made_at": "` + ok + `"}`, record.ReasonBadSize},
		{T, "M", `{"toy_id": "a", "size": null, "made_at": "` + ok + `"}`, record.ReasonBadSize},
		{T, "L", `{"toy_id": "a", "size": "M", "made_at": "` + ok + `"}`, record.ReasonSizeNotKey},
		{T, "", `{"toy_id": "a", "size": "M", "made_at": "` + ok + `"}`, record.ReasonSizeNotKey}, // no key
		{T, "m", `{"toy_id": "a", "size": "M", "made_at": "` + ok + `"}`, record.ReasonSizeNotKey},
		{T, "M", `{"size": "M", "made_at": "` + ok + `"}`, record.ReasonNoID},
		{T, "M", `{"toy_id": "", "size": "M", "made_at": "` + ok + `"}`, record.ReasonNoID},
		{T, "M", `{"toy_id": 42, "size": "M", "made_at": "` + ok + `"}`, record.ReasonNoID}, // not a string
		{T, "M", `{"toy_id": null, "size": "M", "made_at": "` + ok + `"}`, record.ReasonNoID},
		{T, "M", `{"toy_id": {"id": "a"}, "size": "M", "made_at": "` + ok + `"}`, record.ReasonNoID},
		{T, "M", `{"heartbeat": false, "size": "M", "made_at": "` + ok + `"}`, record.ReasonNoID},
		{T, "M", `{"heartbeat": "true", "size": "M", "made_at": "` + ok + `"}`, record.ReasonNoID},
		{B, "M", `{"toy_id": "a", "size": "M", "made_at": "` + ok + `"}`, record.ReasonNoID},       // a box needs box_id
		{T, "M", `{"toy_id": "a", "size": "XXL", "made_at": "yesterday"}`, record.ReasonBadMadeAt}, // first rule wins
		{T, "M", `{"size": "XXL", "made_at": "` + ok + `"}`, record.ReasonBadSize},
		{T, "L", `{"heartbeat": true, "size": "M", "made_at": "` + ok + `"}`, record.ReasonSizeNotKey}, // heartbeats must be valid too
		{T, "L/h", `{"toy_id": "a", "size": "M", "made_at": "` + ok + `"}`, record.ReasonSizeNotKey},   // the key's size part is L
		{T, "XL/h", `{"toy_id": "a", "size": "M", "made_at": "` + ok + `"}`, record.ReasonSizeNotKey},  //
		{T, "/h", `{"toy_id": "a", "size": "M", "made_at": "` + ok + `"}`, record.ReasonSizeNotKey},    // an empty size part
		{T, "M/", `{"toy_id": "a", "size": "M", "made_at": "` + ok + `"}`, record.ReasonBadLine},       // an empty hall
		{T, "M/a/b", `{"toy_id": "a", "size": "M", "made_at": "` + ok + `"}`, record.ReasonBadLine},    // a second slash
		{T, "M/Hall", `{"toy_id": "a", "size": "M", "made_at": "` + ok + `"}`, record.ReasonBadLine},   // uppercase
		{T, "M/-x", `{"toy_id": "a", "size": "M", "made_at": "` + ok + `"}`, record.ReasonBadLine},     // a dash first
		{T, "M/" + strings.Repeat("h", 33), `{"toy_id": "a", "size": "M", "made_at": "` + ok + `"}`, record.ReasonBadLine},
		{B, "M/Hall", `{"heartbeat": true, "size": "M", "made_at": "` + ok + `"}`, record.ReasonBadLine},
		{T, "L/Hall", `{"toy_id": "a", "size": "M", "made_at": "` + ok + `"}`, record.ReasonSizeNotKey}, // size not key before bad line
		{T, "M/", `{"size": "M", "made_at": "` + ok + `"}`, record.ReasonBadLine},                       // bad line before no id
	}
	c := computeCase{name: "every kind of dead letter"}
	for i, b := range bads {
		in := raw(b.stream, int64(i), b.key, b.value)
		in.Partition = 1
		c.inputs = append(c.inputs, in)
		c.want.Dead = append(c.want.Dead, dead(b.stream, 1, int64(i), b.reason))
	}
	return c
}

func TestCompute(t *testing.T) {
	for _, c := range computeCases() {
		t.Run(c.name, func(t *testing.T) {
			p := DefaultParams()
			if c.params != nil {
				p = *c.params
			}
			got := Compute(c.inputs, p, c.mode)
			if d := diffSets(got, c.want); d != "" {
				t.Fatalf("Compute differs from the hand-computed result:%s", d)
			}
			if d := diffSets(got, normalize(got)); d != "" || !sorted(got) {
				t.Errorf("Compute's result is not sorted")
			}
			// The order of the input slice never matters.
			r := rand.New(rand.NewPCG(1, uint64(len(c.inputs))))
			for range 5 {
				shuffled := append([]record.Input(nil), c.inputs...)
				r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
				if d := diffSets(Compute(shuffled, p, c.mode), got); d != "" {
					t.Fatalf("shuffling the inputs changed the result:%s", d)
				}
			}
		})
	}
}

func sorted(s results.Set) bool {
	c := s
	c.Packed = append([]results.Packed(nil), s.Packed...)
	c.Unpacked = append([]results.Unpacked(nil), s.Unpacked...)
	c.Spare = append([]results.Spare(nil), s.Spare...)
	c.Late = append([]results.Late(nil), s.Late...)
	c.Dead = append([]results.Dead(nil), s.Dead...)
	c.Sort()
	eq := func(n int, f func(i int) bool) bool {
		for i := range n {
			if !f(i) {
				return false
			}
		}
		return true
	}
	return eq(len(s.Packed), func(i int) bool { return s.Packed[i] == c.Packed[i] }) &&
		eq(len(s.Unpacked), func(i int) bool { return s.Unpacked[i] == c.Unpacked[i] }) &&
		eq(len(s.Spare), func(i int) bool { return s.Spare[i] == c.Spare[i] }) &&
		eq(len(s.Late), func(i int) bool { return s.Late[i] == c.Late[i] }) &&
		eq(len(s.Dead), func(i int) bool { return s.Dead[i] == c.Dead[i] })
}

func TestParamsValidate(t *testing.T) {
	cases := []struct {
		p       Params
		wantErr string // substring; "" means valid
	}{
		{DefaultParams(), ""},
		{Params{Window: time.Microsecond}, ""},
		{Params{Window: time.Hour, Lateness: 0}, ""},
		{Params{Window: 1500 * time.Microsecond, Lateness: 1}, "lateness must be a whole number of microseconds"},
		{Params{Window: 0, Lateness: time.Second}, "window must be positive"},
		{Params{Window: -time.Second, Lateness: time.Second}, "window must be positive"},
		{Params{Window: 10*time.Second + 500*time.Nanosecond, Lateness: time.Second}, "window must be a whole number of microseconds"},
		{Params{Window: 999 * time.Nanosecond}, "window must be a whole number of microseconds"},
		{Params{Window: time.Second, Lateness: -time.Microsecond}, "lateness must not be negative"},
		{Params{Window: time.Second, Lateness: 5*time.Second + 1}, "lateness must be a whole number of microseconds"},
	}
	for _, c := range cases {
		err := c.p.Validate()
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("%+v: unexpected error %v", c.p, err)
		case c.wantErr != "" && err == nil:
			t.Errorf("%+v: no error, want one containing %q", c.p, c.wantErr)
		case c.wantErr != "" && !strings.Contains(err.Error(), c.wantErr):
			t.Errorf("%+v: error %q, want one containing %q", c.p, err, c.wantErr)
		}
	}
	var zero Mode
	if d := DefaultParams(); d != (Params{Window: 10 * time.Second, Lateness: 5 * time.Second}) || zero != Literal {
		t.Errorf("DefaultParams() = %+v and the zero Mode is %v, want W=10s L=5s and the literal definitions", d, zero)
	}
}

func TestComputePanicsOnMisuse(t *testing.T) {
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: no panic", name)
			}
		}()
		f()
	}
	mustPanic("invalid params", func() { Compute(nil, Params{}, Literal) })
	mustPanic("unknown stream", func() {
		in := toy(0, "a", "M", at("10:00:00"))
		in.Stream = "gifts"
		Compute([]record.Input{in}, DefaultParams(), Literal)
	})
}

func TestFloorDiv(t *testing.T) {
	cases := []struct{ a, b, want int64 }{
		{0, 10, 0}, {9, 10, 0}, {10, 10, 1}, {-1, 10, -1}, {-10, 10, -1}, {-11, 10, -2}, {-20, 10, -2},
	}
	for _, c := range cases {
		if got := floorDiv(c.a, c.b); got != c.want {
			t.Errorf("floorDiv(%d, %d) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

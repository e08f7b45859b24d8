package contract

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
)

// at is a made_at (and a window_start) on Christmas Eve: at("10:00:05.5") is
// "2026-12-24T10:00:05.5Z". Window starts are written the same way, since
// record.FormatMicros prints a whole-second start without fraction.
func at(clock string) string { return "2026-12-24T" + clock + "Z" }

// part is the partition of a key (a line) in these tests: one partition per
// (topic, line), as with Kafka keys. A size alone is numbered in record.Sizes
// order; a line with a hall goes to one of partitions 4 to 11, by a hash of
// the key, so that some lines share a partition (as Kafka's hashing makes
// them); any other key to 9.
func part(line string) int32 {
	if i := slices.Index(record.Sizes, line); i >= 0 {
		return int32(i)
	}
	if !strings.Contains(line, "/") {
		return 9
	}
	h := fnv.New32a()
	h.Write([]byte(line))
	return 4 + int32(h.Sum32()%8)
}

// sizeOf is the size part of a line: the key up to its first slash.
func sizeOf(line string) string {
	size, _, _ := strings.Cut(line, "/")
	return size
}

func input(s record.Stream, line string, off int64, v any) record.Input {
	var value []byte
	switch v := v.(type) {
	case string:
		value = []byte(v)
	case []byte:
		value = v
	default:
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		value = b
	}
	return record.Input{Stream: s, Topic: string(s), Partition: part(line), Offset: off, Key: []byte(line), Value: value}
}

// toy, box and hb are records of a line (a size alone, or size/hall), whose
// value's size is the line's size.
func toy(off int64, id, line, madeAt string) record.Input {
	return input(record.Toys, line, off, record.Toy{ToyID: id, Kind: "teddy-bear", Size: sizeOf(line), Elf: "alabaster", MadeAt: madeAt})
}

func box(off int64, id, line, madeAt string) record.Input {
	return input(record.Boxes, line, off, record.Box{BoxID: id, Size: sizeOf(line), Elf: "bushy", MadeAt: madeAt})
}

func hb(s record.Stream, off int64, line, madeAt string) record.Input {
	return input(s, line, off, record.Heartbeat{Heartbeat: true, Size: sizeOf(line), Elf: "pepper", MadeAt: madeAt})
}

// raw is a record with the given key and value text, in the partition of key.
func raw(s record.Stream, off int64, key, value string) record.Input {
	in := input(s, key, off, value)
	return in
}

// packed, unpacked, spare and late are rows of a line, with its size.
func packed(toyID, boxID, line, windowStart string) results.Packed {
	return results.Packed{ToyID: toyID, BoxID: boxID, Line: line, Size: sizeOf(line), WindowStart: windowStart}
}

func unpacked(toyID, line, windowStart string) results.Unpacked {
	return results.Unpacked{ToyID: toyID, Line: line, Size: sizeOf(line), WindowStart: windowStart}
}

func spare(boxID, line, windowStart string) results.Spare {
	return results.Spare{BoxID: boxID, Line: line, Size: sizeOf(line), WindowStart: windowStart}
}

// late is the late row of the record at offset off of (s, line), in the
// partition of line (see part): late rows carry their position.
func late(s record.Stream, off int64, id, line, madeAt string) results.Late {
	return results.Late{Stream: string(s), Partition: part(line), Offset: off, ID: id, Line: line, Size: sizeOf(line), MadeAt: madeAt}
}

func dead(s record.Stream, partition int32, off int64, reason record.Reason) results.Dead {
	return results.Dead{Stream: string(s), Partition: partition, Offset: off, Reason: string(reason)}
}

// normalize sorts a copy of s and turns empty sets into nil, so that two sets
// with the same rows are reflect.DeepEqual.
func normalize(s results.Set) results.Set {
	s = results.Set{
		Packed:   slices.Clone(s.Packed),
		Unpacked: slices.Clone(s.Unpacked),
		Spare:    slices.Clone(s.Spare),
		Late:     slices.Clone(s.Late),
		Dead:     slices.Clone(s.Dead),
	}
	s.Sort()
	if len(s.Packed) == 0 {
		s.Packed = nil
	}
	if len(s.Unpacked) == 0 {
		s.Unpacked = nil
	}
	if len(s.Spare) == 0 {
		s.Spare = nil
	}
	if len(s.Late) == 0 {
		s.Late = nil
	}
	if len(s.Dead) == 0 {
		s.Dead = nil
	}
	return s
}

// diffSets describes how got differs from want, dead reasons included, or
// returns "" when they are equal.
func diffSets(got, want results.Set) string {
	got, want = normalize(got), normalize(want)
	if reflect.DeepEqual(got, want) {
		return ""
	}
	var b strings.Builder
	show := func(name string, g, w any) {
		if !reflect.DeepEqual(g, w) {
			fmt.Fprintf(&b, "\n%s:\n  got  %+v\n  want %+v", name, g, w)
		}
	}
	show("packed", got.Packed, want.Packed)
	show("unpacked", got.Unpacked, want.Unpacked)
	show("spare", got.Spare, want.Spare)
	show("late", got.Late, want.Late)
	show("dead", got.Dead, want.Dead)
	return b.String()
}

func TestNormalizeAndDiff(t *testing.T) {
	a := results.Set{Packed: []results.Packed{packed("t2", "b2", "M", at("10:00:00")), packed("t1", "b1", "M", at("10:00:00"))}, Late: []results.Late{}}
	b := results.Set{Packed: []results.Packed{packed("t1", "b1", "M", at("10:00:00")), packed("t2", "b2", "M", at("10:00:00"))}}
	if d := diffSets(a, b); d != "" {
		t.Errorf("same rows in another order and empty vs nil should be equal:%s", d)
	}
	c := results.Set{Dead: []results.Dead{dead(record.Toys, 1, 0, record.ReasonNoID)}}
	e := results.Set{Dead: []results.Dead{dead(record.Toys, 1, 0, record.ReasonBadSize)}}
	if d := diffSets(c, e); d == "" {
		t.Errorf("dead rows with different reasons should differ")
	}
}

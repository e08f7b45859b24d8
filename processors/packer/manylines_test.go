package packer

import (
	"fmt"
	"testing"

	"github.com/northpole-workshop/northpole/internal/record"
)

// manyLines are n lines of one partition: each size in n/4 halls.
func manyLines(n int) []string {
	lines := make([]string, 0, n)
	for h := 0; len(lines) < n; h++ {
		for _, size := range record.Sizes {
			if len(lines) < n {
				lines = append(lines, record.JoinLine(size, fmt.Sprint("h", h)))
			}
		}
	}
	return lines
}

// TestManyLinesInOnePartition: 40,000 lines in one partition, a toy and a
// box on each, then every line's final heartbeats. No decision the clock
// writes grows with the lines (the walk over the lines' clocks goes in
// pieces), walks complete, the table's kept suffix stays about as long as
// the lines, a restart from it restores every line's clock, and no line
// holds on to a piece once it is written.
func TestManyLinesInOnePartition(t *testing.T) {
	if testing.Short() {
		t.Skip("160,000 records; -short skips it")
	}
	lines := manyLines(40000)
	u := newUnitPipeline(t) // W 10 s, L 5 s
	for i, line := range lines {
		size, _, _ := record.SplitLine(line)
		u.send(record.Toys, line, toyValue(fmt.Sprint("t", i), size, clockAt(1)))
		u.send(record.Boxes, line, boxValue(fmt.Sprint("b", i), size, clockAt(2)))
	}
	for _, line := range lines {
		size, _, _ := record.SplitLine(line)
		u.send(record.Toys, line, heartbeatValue(size, clockAt(3600)))
		u.send(record.Boxes, line, heartbeatValue(size, clockAt(3600)))
	}

	largest, walks := 0, 0
	for _, rec := range u.table {
		largest = max(largest, len(rec.value))
		if sn := decodeDecision(t, rec.value).Snapshot; sn != nil && sn.Last {
			walks++
		}
	}
	if largest > pieceBytes+1<<10 {
		t.Errorf("a decision of %d bytes with %d lines in the partition: what a decision writes grows with the lines", largest, len(lines))
	}
	if walks < 2 {
		t.Fatalf("%d walks completed over %d decisions", walks, len(u.table))
	}
	for line, kc := range u.clockPart().keyClocks {
		if kc.Ev.Snapshot != nil || kc.Ev.Rec.Raw != nil {
			t.Fatalf("line %s holds its last decision (a piece of a walk, its record's bytes) after it was written", line)
		}
	}

	h := u.clockPart().horizon
	end := int64(len(u.table)) - 1
	h.mark(end)
	keep := h.marks[len(h.marks)-1].keep
	if keep != h.lines || keep <= 0 {
		t.Fatalf("every window closed, the last mark keeps from %d, the last complete walk began at %d", keep, h.lines)
	}
	if kept := end + 1 - keep; kept > 4*int64(len(lines)) {
		t.Errorf("the table keeps %d records for %d lines whose windows all closed", kept, len(lines))
	}
	re := startUnit(t, u.cfg, u.table[keep:], u.committed())
	expectSameClocks(t, fmt.Sprintf("restart from offset %d of %d", keep, end+1), u, re)
	t.Logf("%d lines: %d decisions, the largest %d bytes, %d walks, the table keeps %d", len(lines), len(u.table), largest, walks, end+1-keep)
}

// TestHallPerRecordCompletesWalks: a producer that invents a new hall for
// every record adds a line per record; each walk covers the lines its
// partition had when it began, so walks still complete and the table can
// be cleaned.
func TestHallPerRecordCompletesWalks(t *testing.T) {
	u := newUnitPipeline(t)
	const n = 30000
	for i := range n {
		size := record.Sizes[i%len(record.Sizes)]
		line := record.JoinLine(size, fmt.Sprint("h", i))
		u.send(record.Toys, line, toyValue(fmt.Sprint("t", i), size, clockAt(1+i/100)))
	}
	walks := 0
	for _, rec := range u.table {
		if sn := decodeDecision(t, rec.value).Snapshot; sn != nil && sn.Last {
			walks++
		}
	}
	h := u.clockPart().horizon
	h.mark(int64(len(u.table)) - 1)
	if walks < 3 || h.lines <= 0 {
		t.Fatalf("%d walks completed over %d records, each of a new line; the last began at %d", walks, n, h.lines)
	}
	// Every line's window stays open (it has no boxes): the table keeps
	// them all, and a restart restores every line from the lines' walks
	// and the records of the open windows alike.
	keep := h.marks[len(h.marks)-1].keep
	re := startUnit(t, u.cfg, u.table[keep:], u.committed())
	expectSameClocks(t, fmt.Sprintf("restart from %d", keep), u, re)
}

// BenchmarkLines: the clock and slots callbacks per input record, with the
// lines of one partition from 16 to 40,000 (each line has seen records
// before the timing starts). Per-record work must not grow with the lines.
func BenchmarkLines(b *testing.B) {
	for _, n := range []int{16, 1000, 40000} {
		b.Run(fmt.Sprint("lines=", n), func(b *testing.B) {
			lines := manyLines(n)
			u := newUnitPipeline(b)
			for _, line := range lines {
				size, _, _ := record.SplitLine(line)
				u.send(record.Toys, line, heartbeatValue(size, clockAt(0)))
				u.send(record.Boxes, line, heartbeatValue(size, clockAt(0)))
			}
			i := 0
			for b.Loop() {
				line := lines[i%n]
				size, _, _ := record.SplitLine(line)
				made := clockAt(1 + i/n)
				u.send(record.Toys, line, toyValue(fmt.Sprint("t", i), size, made))
				u.send(record.Boxes, line, boxValue(fmt.Sprint("b", i), size, made))
				u.take()
				i++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N), "ns/record")
		})
	}
}

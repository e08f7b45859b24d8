package producers

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/record"
)

// TestLines: the lines of a config are its sizes without halls, and every
// size in every hall, each well-formed, with halls.
func TestLines(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		halls int
		want  []string // a prefix of the lines
		n     int
	}{
		{0, []string{"S", "M", "L", "XL"}, 4},
		{1, []string{"S/hall-1", "M/hall-1", "L/hall-1", "XL/hall-1"}, 4},
		{3, []string{"S/hall-1", "S/hall-2", "S/hall-3", "M/hall-1"}, 12},
		{MaxHalls, []string{"S/hall-1", "S/hall-2"}, 4 * MaxHalls},
	} {
		c := DefaultConfig(record.Toys)
		c.Halls = tc.halls
		lines := c.Lines()
		if len(lines) != tc.n || !slices.Equal(lines[:len(tc.want)], tc.want) {
			t.Errorf("halls %d: %d lines starting %v, want %d starting %v", tc.halls, len(lines), lines[:min(len(lines), 5)], tc.n, tc.want)
		}
		seen := map[string]bool{}
		for _, l := range lines {
			if _, hall, _ := record.SplitLine(l); !record.ValidLine(l) || (tc.halls > 0) != (hall != "") || seen[l] {
				t.Fatalf("halls %d: line %q is not a well-formed line of its own", tc.halls, l)
			}
			seen[l] = true
		}
	}
}

// hallsConfig is a count-mode config with every kind of record in halls.
func hallsConfig(s record.Stream, count, halls int) Config {
	c := testConfig(s, count)
	c.Halls = halls
	c.BadRate = 0.2
	return c
}

// TestPlanWithHalls: every record is keyed by a line of the config's halls
// whose size part is the value's size; every dead letter kind, bad:line
// too, appears and fails with its reason; the final heartbeats are the last
// messages, one per line, at least L past the last window any line wrote.
func TestPlanWithHalls(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s     record.Stream
		halls int
	}{{record.Toys, 1}, {record.Boxes, 1}, {record.Toys, 7}, {record.Boxes, 7}, {record.Toys, 40}} {
		t.Run(fmt.Sprintf("%s in %d halls", tc.s, tc.halls), func(t *testing.T) {
			t.Parallel()
			c := hallsConfig(tc.s, 4000, tc.halls)
			plan := mustPlan(t, c)
			lines := c.Lines()
			isLine := map[string]bool{}
			for _, l := range lines {
				isLine[l] = true
			}
			final := plan[len(plan)-len(lines):]
			lastMade := map[string]time.Time{} // per line, final heartbeats aside
			bad := map[string]int{}
			for _, m := range plan[:len(plan)-len(lines)] {
				r, err := record.Parse(tc.s, m.Key, m.Value)
				if IsBad(m.Kind) {
					bad[m.Kind]++
					if got, want := record.ReasonOf(err), BadReason(m.Kind); got != want || want == "" {
						t.Errorf("%s %q keyed %q: reason %q (%v), want %q", m.Kind, m.Value, m.Key, got, err, want)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s %q keyed %q: %v", m.Kind, m.Value, m.Key, err)
				}
				size, _, _ := record.SplitLine(string(m.Key))
				if !isLine[string(m.Key)] || size != r.Size || !r.MadeAt.Equal(m.MadeAt) || m.Elf < 0 {
					t.Fatalf("%s %q keyed %q: not a record of one of the config's lines, its size part the value's", m.Kind, m.Value, m.Key)
				}
				if m.MadeAt.After(lastMade[string(m.Key)]) {
					lastMade[string(m.Key)] = m.MadeAt
				}
			}
			for _, k := range badKinds(c) {
				if bad[k] == 0 {
					t.Errorf("no %s among %d dead letters", k, len(bad))
				}
			}
			for i, m := range final {
				r, err := record.Parse(tc.s, m.Key, m.Value)
				if err != nil || !r.Heartbeat || m.Elf != -1 || string(m.Key) != lines[i] {
					t.Fatalf("final message %d is %s %q keyed %q (%v), want the final heartbeat of %s", i, m.Kind, m.Value, m.Key, err, lines[i])
				}
				if end := floorTime(lastMade[lines[i]], c.Window).Add(c.Window + c.Lateness); m.MadeAt.Before(end) {
					t.Errorf("line %s: final heartbeat at %v, before its last window's end + L %v", lines[i], m.MadeAt, end)
				}
			}
		})
	}
}

// TestFinalHeartbeatsOnBothTopics: the toys and the boxes send a final
// heartbeat on every line either of them wrote, also when their size mixes
// differ, so every line's windows close for both streams.
func TestFinalHeartbeatsOnBothTopics(t *testing.T) {
	t.Parallel()
	toys, boxes := hallsConfig(record.Toys, 500, 6), hallsConfig(record.Boxes, 300, 6)
	toys.SizeMix, boxes.SizeMix = SizeMix{"S": 1}, SizeMix{"M": 1, "XL": 2}
	toys.FinalHeartbeatAt = Horizon(toys, boxes)
	boxes.FinalHeartbeatAt = toys.FinalHeartbeatAt
	used := map[string]bool{}
	finals := map[record.Stream]map[string]time.Time{}
	for _, c := range []Config{toys, boxes} {
		finals[c.Stream] = map[string]time.Time{}
		for _, m := range mustPlan(t, c) {
			switch {
			case m.Elf < 0:
				finals[c.Stream][string(m.Key)] = m.MadeAt
			case !IsBad(m.Kind) && m.Kind != KindHeartbeat:
				used[string(m.Key)] = true
			}
		}
	}
	if len(used) != 3*6 {
		t.Fatalf("the two streams used %d lines, want 18 (three sizes in six halls)", len(used))
	}
	for line := range used {
		for _, s := range []record.Stream{record.Toys, record.Boxes} {
			if at, ok := finals[s][line]; !ok || !at.Equal(toys.FinalHeartbeatAt) {
				t.Errorf("line %s: %s final heartbeat %v (%v), want one at the horizon %v", line, s, at, ok, toys.FinalHeartbeatAt)
			}
		}
	}
}

// TestHallsShareEvenly: each size's records are shared evenly by the halls
// (late records included: they once all went to the first hall), and every
// elf writes to many lines.
func TestHallsShareEvenly(t *testing.T) {
	t.Parallel()
	for _, halls := range []int{2, 5, 16} {
		c := hallsConfig(record.Toys, 20000, halls)
		perLine := map[string]int{}
		perElf := map[int]map[string]bool{}
		for _, m := range mustPlan(t, c) {
			if m.Elf < 0 || m.Kind == KindHeartbeat || IsBad(m.Kind) {
				continue
			}
			perLine[string(m.Key)]++
			if perElf[m.Elf] == nil {
				perElf[m.Elf] = map[string]bool{}
			}
			perElf[m.Elf][string(m.Key)] = true
		}
		for _, size := range record.Sizes {
			var counts []int
			sum := 0
			for k := 1; k <= halls; k++ {
				n := perLine[record.JoinLine(size, HallName(k))]
				counts = append(counts, n)
				sum += n
			}
			// The records of a size take the halls in turn, but dead letters,
			// duplicates and late records move some: allow three standard
			// deviations of a random choice.
			mean := float64(sum) / float64(halls)
			for k, n := range counts {
				if math.Abs(float64(n)-mean) > 3*math.Sqrt(mean) {
					t.Errorf("halls %d: line %s has %d records, the mean of its size %.0f (%v)", halls, record.JoinLine(size, HallName(k+1)), n, mean, counts)
				}
			}
		}
		for elf, lines := range perElf {
			if len(lines) < min(4*halls, 4*halls/2+1) {
				t.Errorf("halls %d: elf %d wrote to %d lines of %d", halls, elf, len(lines), 4*halls)
			}
		}
	}
}

// TestHeartbeatsPerLine: every heartbeat tick reaches every line.
func TestHeartbeatsPerLine(t *testing.T) {
	t.Parallel()
	c := hallsConfig(record.Boxes, 1000, 3) // 10 s of event time
	c.LateRate, c.DupRate, c.BadRate = 0, 0, 0
	perLine := map[string]int{}
	for _, m := range mustPlan(t, c) {
		if m.Kind == KindHeartbeat && m.Elf >= 0 {
			perLine[string(m.Key)]++
		}
	}
	for _, l := range c.Lines() {
		if perLine[l] != 9 {
			t.Errorf("line %s: %d heartbeats, want 9", l, perLine[l])
		}
	}
	if len(perLine) != 12 {
		t.Errorf("heartbeats on %d lines, want 12: %v", len(perLine), perLine)
	}
}

// TestSpread: where the lines fall is where FNV-1a puts their keys (the
// sizes alone on four partitions leave one idle); the shares follow the
// size mix and add up to one.
func TestSpread(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		halls, partitions int
		lines             []int // nil: not checked
		idle              int
	}{
		{0, 4, []int{1, 2, 1, 0}, 1},
		{0, 1, []int{4}, 0},
		{4, 16, nil, 4},
		{16, 16, nil, 0},
		{16, 64, nil, 25},
	} {
		c := DefaultConfig(record.Toys)
		c.Halls = tc.halls
		sp := c.Spread(tc.partitions)
		total, share := 0, 0.0
		for p := range tc.partitions {
			total += sp.Lines[p]
			share += sp.Share[p]
		}
		if tc.lines != nil && !slices.Equal(sp.Lines, tc.lines) {
			t.Errorf("halls %d over %d partitions: lines %v, want %v", tc.halls, tc.partitions, sp.Lines, tc.lines)
		}
		if total != len(c.Lines()) || math.Abs(share-1) > 1e-9 || sp.Idle() != tc.idle {
			t.Errorf("halls %d over %d partitions: %d lines, shares add to %v, %d idle; want %d, 1, %d", tc.halls, tc.partitions, total, share, sp.Idle(), len(c.Lines()), tc.idle)
		}
		for _, l := range c.Lines() {
			if sp.Lines[partitionOf([]byte(l), tc.partitions)] == 0 {
				t.Fatalf("line %s falls on a partition counted idle", l)
			}
		}
	}
	c := DefaultConfig(record.Toys)
	c.Halls = 16
	if got, want := c.Spread(16).String(), "64 lines over 16 partitions: 16 carry work, the busiest "; !strings.HasPrefix(got, want) {
		t.Errorf("Spread.String() = %q, want it to start %q", got, want)
	}
}

// TestHeartbeatsGrowWithItems: with many halls, a heartbeat tick beats only
// the lines whose windows this stream's heartbeats have not closed yet, so
// the heartbeats are bounded by the items (a line stays pending for at most
// (W + L) / HeartbeatEvery + 1 ticks after its newest item), not by the
// lines times the ticks; and every item's window is still closed by a later
// heartbeat on its line while the run goes on.
func TestHeartbeatsGrowWithItems(t *testing.T) {
	t.Parallel()
	c := testConfig(record.Toys, 20000)
	c.Halls = 2000
	c.Spacing = 10 * time.Millisecond
	items, beats := 0, 0
	lastBeat := map[string]time.Time{}
	plan := mustPlan(t, c)
	final := len(plan) - len(FinalHeartbeats(c, time.Time{}))
	for i := len(plan[:final]) - 1; i >= 0; i-- {
		m := plan[i]
		switch m.Kind {
		case KindHeartbeat:
			beats++
			if m.MadeAt.After(lastBeat[string(m.Key)]) {
				lastBeat[string(m.Key)] = m.MadeAt
			}
		case KindToy, KindBox:
			items++
			// A heartbeat after it on its line closes its window, unless
			// the run ends first.
			closing := m.MadeAt.Truncate(c.Window).Add(c.Window + c.Lateness)
			runEnd := plan[final-1].MadeAt
			if closing.Add(2*c.HeartbeatEvery).Before(runEnd) && lastBeat[string(m.Key)].Before(closing) {
				t.Fatalf("item %d on %s made at %v: no later heartbeat on its line reaches %v", i, m.Key, m.MadeAt, closing)
			}
		}
	}
	const perItem = 2
	if beats > perItem*items {
		t.Errorf("%d heartbeats for %d items in %d lines: more than %d per item", beats, items, 4*c.Halls, perItem)
	}
	t.Logf("%d items, %d heartbeats, %d lines", items, beats, 4*c.Halls)
}

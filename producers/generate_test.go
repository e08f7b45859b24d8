package producers

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/record"
)

// testConfig is a count-mode config with every kind of record.
func testConfig(stream record.Stream, count int) Config {
	c := DefaultConfig(stream)
	c.Count = count
	c.Seed = 42
	c.LateRate, c.DupRate, c.BadRate = 0.1, 0.1, 0.1
	c.Disorder = 3 * time.Second // <= Lateness: nothing late by accident
	return c
}

func mustPlan(t *testing.T, c Config) []Message {
	t.Helper()
	p, err := Plan(c)
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	return p
}

func TestPlanDeterministic(t *testing.T) {
	t.Parallel()
	for _, s := range []record.Stream{record.Toys, record.Boxes} {
		c := testConfig(s, 3000)
		a, b := mustPlan(t, c), mustPlan(t, c)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%s: two plans with the same config differ", s)
		}
		c.Seed = 43
		d := mustPlan(t, c)
		if reflect.DeepEqual(values(a), values(d)) {
			t.Fatalf("%s: seeds 42 and 43 give the same records", s)
		}
		// Different seeds never share an id.
		ids := map[string]bool{}
		for _, m := range a {
			if id := idOf(s, m); id != "" {
				ids[id] = true
			}
		}
		for _, m := range d {
			if id := idOf(s, m); id != "" && ids[id] {
				t.Fatalf("%s: id %s appears with seeds 42 and 43", s, id)
			}
		}
	}
	// Toys and boxes with the same seed are not the same size sequence.
	toys, boxes := mustPlan(t, testConfig(record.Toys, 200)), mustPlan(t, testConfig(record.Boxes, 200))
	if reflect.DeepEqual(keys(toys), keys(boxes)) {
		t.Fatal("toys and boxes with one seed have identical key sequences")
	}
}

func values(ms []Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = string(m.Value)
	}
	return out
}

func keys(ms []Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = string(m.Key)
	}
	return out
}

func idOf(s record.Stream, m Message) string {
	r, err := record.Parse(s, m.Key, m.Value)
	if err != nil || r.Heartbeat {
		return ""
	}
	return r.ID
}

func TestPlanFractions(t *testing.T) {
	t.Parallel()
	const n = 10000
	c := testConfig(record.Toys, n)
	c.LateRate, c.DupRate, c.BadRate = 0.05, 0.1, 0.15
	plan := mustPlan(t, c)
	kinds := map[string]int{}
	sizes := map[string]int{}
	records := 0
	for _, m := range plan {
		k := m.Kind
		if IsBad(k) {
			k = "bad"
		}
		kinds[k]++
		if m.Kind != KindHeartbeat {
			records++
			if !IsBad(m.Kind) {
				sizes[string(m.Key)]++
			}
		}
	}
	if records != n {
		t.Fatalf("plan has %d records (heartbeats aside), want %d", records, n)
	}
	near := func(what string, got int, want float64) {
		t.Helper()
		if float64(got) < 0.85*want || float64(got) > 1.15*want {
			t.Errorf("%s: %d, want about %.0f", what, got, want)
		}
	}
	near("bad", kinds["bad"], 0.15*n)
	near("dup", kinds[KindDup], 0.1*n)
	near("late", kinds[KindLate], 0.05*n)
	near("toy", kinds[KindToy], 0.7*n)
	valid := float64(n - kinds["bad"])
	near("size S", sizes["S"], 0.4*valid)
	near("size M", sizes["M"], 0.3*valid)
	near("size L", sizes["L"], 0.2*valid)
	near("size XL", sizes["XL"], 0.1*valid)

	// Every non-duplicate id is unique.
	seen := map[string]bool{}
	for _, m := range plan {
		if m.Kind == KindDup || m.Kind == KindHeartbeat {
			continue
		}
		if id := idOf(record.Toys, m); id != "" {
			if seen[id] {
				t.Fatalf("id %s made twice", id)
			}
			seen[id] = true
		}
	}

	// A size with weight 0 never appears.
	c.SizeMix = SizeMix{"M": 1}
	for _, m := range mustPlan(t, c) {
		if m.Kind != KindHeartbeat && !IsBad(m.Kind) && string(m.Key) != "M" {
			t.Fatalf("size mix M=1 made a %s record keyed %s", m.Kind, m.Key)
		}
	}
}

// TestEveryMessageParsesAsIntended checks every message against record.Parse:
// each bad kind appears and fails with its reason, every other one is valid.
func TestEveryMessageParsesAsIntended(t *testing.T) {
	t.Parallel()
	for _, s := range []record.Stream{record.Toys, record.Boxes} {
		c := testConfig(s, 2000)
		c.BadRate = 0.3
		seen := map[string]int{}
		for _, m := range mustPlan(t, c) {
			r, err := record.Parse(s, m.Key, m.Value)
			if IsBad(m.Kind) {
				seen[m.Kind]++
				want := BadReason(m.Kind)
				if want == "" {
					t.Fatalf("%s: kind %q has no expected reason", s, m.Kind)
				}
				if got := record.ReasonOf(err); got != want {
					t.Errorf("%s: %s %q (key %q): reason %q (%v), want %q", s, m.Kind, m.Value, m.Key, got, err, want)
				}
				if !m.MadeAt.IsZero() {
					t.Errorf("%s: dead letter %s has MadeAt %v", s, m.Kind, m.MadeAt)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s: %s %q is not valid: %v", s, m.Kind, m.Value, err)
			}
			if r.Heartbeat != (m.Kind == KindHeartbeat) || r.Size != string(m.Key) || !r.MadeAt.Equal(m.MadeAt) {
				t.Fatalf("%s: %s %q parsed as %+v", s, m.Kind, m.Value, r)
			}
			// Kind and elf are for people: the packer does not read them.
			fields, _ := record.Object(m.Value)
			kind, _ := record.JSONString(fields["kind"])
			elf, _ := record.JSONString(fields["elf"])
			if !r.Heartbeat && s == record.Toys && !slices.Contains(ToyKinds, kind) {
				t.Fatalf("toy kind %q is not in ToyKinds", kind)
			}
			if want := ElfName(s, m.Elf); m.Elf >= 0 && elf != want {
				t.Fatalf("%s: elf %q, want %q", s, elf, want)
			}
		}
		for _, k := range BadKinds {
			if seen[k] == 0 {
				t.Errorf("%s: no %s record in 600 bad ones", s, k)
			}
		}
	}
}

// TestBadVariants checks the variants the brief names.
func TestBadVariants(t *testing.T) {
	t.Parallel()
	c := testConfig(record.Toys, 3000)
	c.BadRate = 1
	c.LateRate, c.DupRate = 0, 0
	var madeAts []string
	var badSizeKeys []string
	for _, m := range mustPlan(t, c) {
		switch m.Kind {
		case "bad:made-at":
			madeAts = append(madeAts, string(m.Value))
		case "bad:size":
			badSizeKeys = append(badSizeKeys, string(m.Key))
		case "bad:not-object":
			if m.Value[0] != '[' {
				t.Errorf("not-object value %q is not an array", m.Value)
			}
		}
	}
	joined := strings.Join(madeAts, "\n")
	for _, want := range []string{`"made_at":"2026-12-24 `, `"made_at":"yesterday"`} {
		if !strings.Contains(joined, want) {
			t.Errorf("no bad made_at like %s", want)
		}
	}
	if !slices.Contains(badSizeKeys, "XXL") || !slices.ContainsFunc(badSizeKeys, record.ValidSize) {
		t.Errorf("bad size keys %v: want both XXL and valid sizes", badSizeKeys[:min(10, len(badSizeKeys))])
	}
}

// classify classifies messages in the given (offset) order of one topic, as
// the packing contract does per line: dead, heartbeat, duplicate, late, item.
func classify(s record.Stream, c Config, msgs []Message) []string {
	priorMax := map[string]time.Time{}
	ids := map[string]bool{}
	out := make([]string, len(msgs))
	for i, m := range msgs {
		r, err := record.Parse(s, m.Key, m.Value)
		if err != nil {
			out[i] = "dead"
			continue
		}
		line := string(m.Key)
		prior, hasPrior := priorMax[line]
		if !hasPrior || r.MadeAt.After(prior) {
			priorMax[line] = r.MadeAt
		}
		switch {
		case r.Heartbeat:
			out[i] = "heartbeat"
		case ids[line+"\x00"+r.ID]:
			out[i] = "duplicate"
		case hasPrior && !prior.Add(-c.Lateness).Before(floorTime(r.MadeAt, c.Window).Add(c.Window)):
			out[i] = "late"
		default:
			out[i] = "item"
		}
		if !r.Heartbeat {
			ids[line+"\x00"+r.ID] = true
		}
	}
	return out
}

// wantClass is what the contract must say of a message of a kind.
func wantClass(kind string) string {
	switch {
	case IsBad(kind):
		return "dead"
	case kind == KindDup:
		return "duplicate"
	case kind == KindLate:
		return "late"
	case kind == KindHeartbeat:
		return "heartbeat"
	}
	return "item"
}

// TestLateAndDupByContract: in plan order (Disorder <= Lateness), the contract
// classifies exactly the late and dup messages as late and duplicate, per
// line with halls as per size without. Under any
// interleaving of the elves that keeps each elf's own order (what Kafka
// guarantees), late and dup messages stay late and duplicate.
func TestLateAndDupByContract(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s     record.Stream
		halls int
	}{{record.Toys, 0}, {record.Boxes, 0}, {record.Toys, 5}, {record.Boxes, 5}} {
		s := tc.s
		c := testConfig(s, 3000)
		c.Halls = tc.halls
		plan := mustPlan(t, c)
		got := classify(s, c, plan)
		counts := map[string]int{}
		for i, m := range plan {
			counts[m.Kind]++
			if want := wantClass(m.Kind); got[i] != want {
				t.Fatalf("%s halls %d: message %d (%s %s) is %s by the contract, want %s", s, tc.halls, i, m.Kind, m.Value, got[i], want)
			}
		}
		if counts[KindLate] < 200 || counts[KindDup] < 200 {
			t.Fatalf("%s halls %d: too few late (%d) or dup (%d) messages to test", s, tc.halls, counts[KindLate], counts[KindDup])
		}

		rng := rand.New(rand.NewPCG(7, 7))
		for trial := range 3 {
			mixed := interleave(rng, plan, c.Elves)
			got := classify(s, c, mixed)
			for i, m := range mixed {
				if (m.Kind == KindLate || m.Kind == KindDup) && got[i] != wantClass(m.Kind) {
					t.Fatalf("%s halls %d trial %d: %s %s is %s by the contract", s, tc.halls, trial, m.Kind, m.Value, got[i])
				}
			}
		}
	}
}

// interleave merges the elves' sequences at random, keeping each elf's order;
// the final heartbeats (Elf -1) stay last.
func interleave(rng *rand.Rand, plan []Message, elves int) []Message {
	per := make([][]Message, elves)
	var final []Message
	for _, m := range plan {
		if m.Elf < 0 {
			final = append(final, m)
			continue
		}
		per[m.Elf] = append(per[m.Elf], m)
	}
	out := make([]Message, 0, len(plan))
	for {
		var open []int
		for i, q := range per {
			if len(q) > 0 {
				open = append(open, i)
			}
		}
		if len(open) == 0 {
			break
		}
		i := open[rng.IntN(len(open))]
		take := 1 + rng.IntN(50) // runs of up to 50: elves far apart
		take = min(take, len(per[i]))
		out = append(out, per[i][:take]...)
		per[i] = per[i][take:]
	}
	return append(out, final...)
}

func TestHeartbeats(t *testing.T) {
	t.Parallel()
	c := testConfig(record.Boxes, 1000) // 10 s of event time at 10 ms spacing
	c.LateRate, c.DupRate, c.BadRate = 0, 0, 0
	plan := mustPlan(t, c)
	perSize := map[string][]time.Time{}
	for _, m := range plan[:len(plan)-4] {
		if m.Kind == KindHeartbeat {
			if m.MadeAt.UnixNano()%int64(c.HeartbeatEvery) != 0 {
				t.Errorf("heartbeat at %v is not a multiple of %v", m.MadeAt, c.HeartbeatEvery)
			}
			perSize[string(m.Key)] = append(perSize[string(m.Key)], m.MadeAt)
		}
	}
	for _, s := range record.Sizes {
		got := perSize[s]
		if len(got) != 9 { // 00:00:01 .. 00:00:09
			t.Fatalf("size %s: %d heartbeats %v, want 9", s, len(got), got)
		}
		for i, at := range got {
			if want := c.Start.Add(time.Duration(i+1) * time.Second); !at.Equal(want) {
				t.Errorf("size %s heartbeat %d at %v, want %v", s, i, at, want)
			}
		}
	}

	c.HeartbeatEvery = 0
	plan = mustPlan(t, c)
	for _, m := range plan[:len(plan)-4] {
		if m.Kind == KindHeartbeat {
			t.Fatalf("--heartbeat 0 still made a heartbeat before the final ones: %s", m.Value)
		}
	}
}

func TestFinalHeartbeatsLast(t *testing.T) {
	t.Parallel()
	for _, disorder := range []time.Duration{0, 3 * time.Second} {
		c := testConfig(record.Toys, 2345)
		c.Disorder = disorder
		plan := mustPlan(t, c)
		final := plan[len(plan)-4:]
		var maxMade time.Time
		for _, m := range plan[:len(plan)-4] {
			if m.MadeAt.After(maxMade) {
				maxMade = m.MadeAt
			}
		}
		lastEnd := floorTime(maxMade, c.Window).Add(c.Window)
		for i, m := range final {
			r, err := record.Parse(record.Toys, m.Key, m.Value)
			if err != nil || !r.Heartbeat || m.Kind != KindHeartbeat || m.Elf != -1 || r.Size != record.Sizes[i] {
				t.Fatalf("final message %d is %s %q (%v), want a heartbeat of size %s", i, m.Kind, m.Value, err, record.Sizes[i])
			}
			if r.MadeAt.Before(lastEnd.Add(c.Lateness)) {
				t.Fatalf("final heartbeat at %v, before last window end %v + L", r.MadeAt, lastEnd)
			}
			if !r.MadeAt.Equal(lastEnd.Add(c.Lateness)) {
				t.Fatalf("final heartbeat at %v, want exactly %v", r.MadeAt, lastEnd.Add(c.Lateness))
			}
		}

		// FinalHeartbeatAt wins only when it is later.
		computed := final[0].MadeAt
		later := computed.Add(time.Hour)
		c.FinalHeartbeatAt = later
		if got := mustPlan(t, c); !got[len(got)-1].MadeAt.Equal(later) {
			t.Fatalf("FinalHeartbeatAt %v: final heartbeat at %v", later, got[len(got)-1].MadeAt)
		}
		c.FinalHeartbeatAt = computed.Add(-time.Hour)
		if got := mustPlan(t, c); !got[len(got)-1].MadeAt.Equal(computed) {
			t.Fatalf("earlier FinalHeartbeatAt moved the final heartbeat to %v", got[len(got)-1].MadeAt)
		}
	}

	// Nothing valid written: the final heartbeats still come, past Start.
	c := DefaultConfig(record.Toys)
	if got, want := FinalTime(c, time.Time{}), c.Start.Add(c.Window+c.Lateness); !got.Equal(want) {
		t.Fatalf("FinalTime(zero) = %v, want %v", got, want)
	}
}

func TestPlanNeedsCount(t *testing.T) {
	t.Parallel()
	c := DefaultConfig(record.Toys)
	c.Count, c.Duration = 0, time.Second
	if _, err := Plan(c); err == nil {
		t.Fatal("Plan of a duration run: want an error")
	}
	c.Count, c.Duration = 5, 0
	c.Rate = -1
	if _, err := Plan(c); err == nil || !strings.Contains(err.Error(), "rate must be >= 0") {
		t.Fatalf("Plan of an invalid config: %v", err)
	}
}

func TestFloorTime(t *testing.T) {
	t.Parallel()
	w := 10 * time.Second
	for _, tt := range []struct{ in, want time.Time }{
		{time.Unix(25, 0), time.Unix(20, 0)},
		{time.Unix(20, 0), time.Unix(20, 0)},
		{time.Unix(-5, 0), time.Unix(-10, 0)},
		{time.Unix(-10, 0), time.Unix(-10, 0)},
	} {
		if got := floorTime(tt.in, w); !got.Equal(tt.want) {
			t.Errorf("floorTime(%v) = %v, want %v", tt.in.Unix(), got.Unix(), tt.want.Unix())
		}
	}
}

// TestHorizon: the shared horizon is past every window either stream writes
// (plus L), so both streams' final heartbeats are at the horizon itself and
// close the same windows; a Duration config adds nothing.
func TestHorizon(t *testing.T) {
	t.Parallel()
	toys, boxes := DefaultConfig(record.Toys), DefaultConfig(record.Boxes)
	toys.Count, boxes.Count = 300, 200
	toys.LateRate, toys.DupRate, toys.Disorder = 0.1, 0.1, 3*time.Second
	boxes.Spacing = 25 * time.Millisecond
	h := Horizon(toys, boxes)
	want := boxes.Start.Add(201*boxes.Spacing + boxes.Window + boxes.Lateness)
	if !h.Equal(want) {
		t.Fatalf("Horizon = %v, want %v (the boxes reach further)", h, want)
	}
	lazy := DefaultConfig(record.Toys)
	lazy.Count, lazy.Duration = 0, time.Minute
	if got := Horizon(toys, boxes, lazy); !got.Equal(h) {
		t.Errorf("a Duration config moved the horizon to %v", got)
	}
	if got := Horizon(lazy); !got.IsZero() {
		t.Errorf("Horizon of a Duration config = %v, want zero", got)
	}
	for _, c := range []Config{toys, boxes} {
		c.FinalHeartbeatAt = h
		plan, err := Plan(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range plan {
			if m.Elf < 0 && !m.MadeAt.Equal(h) {
				t.Errorf("%s: final heartbeat at %v, want the horizon %v", c.Stream, m.MadeAt, h)
			}
			if end := floorTime(m.MadeAt, c.Window).Add(c.Window + c.Lateness); m.Elf >= 0 && !m.MadeAt.IsZero() && end.After(h) {
				t.Errorf("%s: a record made at %v closes at %v, after the horizon %v", c.Stream, m.MadeAt, end, h)
			}
		}
	}
}

package bench

import (
	"bytes"
	"context"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/testsupport/syncbuf"
	"github.com/northpole-workshop/northpole/producers"
)

// TestBenchScaleOut runs the scale variant small on kfake: two packers, each
// its own process (this test binary, runTestWorker), on 8 partitions and 16
// lines (4 halls). Both must hold partitions of both groups and consume
// part of the work, the partitions must be shared without overlap, and the
// results must equal the batch reference. No figure is held against a
// performance bound.
func TestBenchScaleOut(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two packers on 20,000 records; -short skips it")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	progress := &syncbuf.Buffer{}
	c := DefaultConfig()
	c.Records, c.Partitions, c.Variants, c.Instances, c.Halls = 20_000, []int32{8}, []string{"scale"}, []int{2}, []int{4}
	// kfake does not delay a group's first join: without JoinFirst the
	// first packer may consume the small backlog alone.
	c.JoinFirst = true
	c.Timeout, c.Executable, c.Args, c.Progress = 4*time.Minute, exe, []string{testWorkerArg}, progress
	b, err := New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rs, err := b.Run(ctx)
	if err != nil || len(rs) != 1 {
		t.Fatalf("Run: %d results, %v\n%s", len(rs), err, progress.String())
	}
	r := rs[0]
	if r.Error != "" || r.Scale == nil {
		t.Fatalf("scale run failed: %s\n%s", r.Error, progress.String())
	}
	s := r.Scale
	if !s.Equal || s.Rows == 0 || s.Differences != 0 || s.Conflicts != 0 {
		t.Errorf("results against the reference: equal %v, %d rows, %d differences, %d conflicts", s.Equal, s.Rows, s.Differences, s.Conflicts)
	}
	if len(s.Instances) != 2 {
		t.Fatalf("%d instances reported, want 2: %+v", len(s.Instances), s.Instances)
	}
	var parts []int32
	var cpu float64
	for _, in := range s.Instances {
		if in.HealthError != "" || len(in.Partitions) == 0 || in.Consumed == 0 || in.WorkShare <= 0 || in.CPUSeconds <= 0 {
			t.Errorf("instance %d got no share: %+v", in.Instance, in)
		}
		parts = append(parts, in.Partitions...)
		cpu += in.CPUSeconds
	}
	if slices.Sort(parts); !slices.Equal(parts, []int32{0, 1, 2, 3, 4, 5, 6, 7}) {
		t.Errorf("the partitions over the instances: %v, want each of 0-7 once", parts)
	}
	// Both joined before the elves wrote: no partition changed hands, so
	// the instances' counts add up to every input event.
	if !s.Complete || s.Consumed != r.InputEvents {
		t.Errorf("the instances consumed %d input events, the topics hold %d", s.Consumed, r.InputEvents)
	}
	if math.Abs(r.CPUSeconds-cpu) > 1e-9 {
		t.Errorf("the run's CPU %v s is not its instances' summed, %v s", r.CPUSeconds, cpu)
	}
	var out bytes.Buffer
	WriteText(&out, rs)
	if !strings.Contains(out.String(), "equal") || !strings.Contains(out.String(), "16 lines over 8 partitions") {
		t.Errorf("text output lacks the scale-out table:\n%s", out.String())
	}
	t.Logf("%s\n%s", out.String(), progress.String())
}

// TestShares: the work share is an instance's records over all instances',
// its CPU per event is over its share of the input events, the expected
// share is the spread's over its partitions, and the counts are complete
// only when the instances saw every input event.
func TestShares(t *testing.T) {
	sp := producers.Spread{Lines: []int{1, 1, 1, 1}, Share: []float64{0.4, 0.3, 0.2, 0.1}}
	s := ScaleOut{Instances: []InstanceResult{
		{Partitions: []int32{0, 1, 2}, Consumed: 600, CPUSeconds: 0.01},
		{Partitions: []int32{3}, Consumed: 400, CPUSeconds: 0.02},
	}}
	s.shares(1000, 4, sp, sp)
	a, b := s.Instances[0], s.Instances[1]
	near := func(x, want float64) bool { return math.Abs(x-want) < 1e-9 }
	if !near(a.WorkShare, 0.6) || !near(b.WorkShare, 0.4) {
		t.Errorf("work shares %v, %v; want 0.6, 0.4", a.WorkShare, b.WorkShare)
	}
	if !near(a.CPUPerEventUS, 0.01*1e6/600) || !near(b.CPUPerEventUS, 0.02*1e6/400) {
		t.Errorf("CPU per event %v, %v", a.CPUPerEventUS, b.CPUPerEventUS)
	}
	if !near(a.ExpectedShare, 0.9) || !near(a.PartitionShare, 0.75) {
		t.Errorf("instance 1: expected %v, partitions %v; want 0.9, 0.75", a.ExpectedShare, a.PartitionShare)
	}
	if !s.Complete || s.Consumed != 1000 {
		t.Errorf("consumed %d, complete %v; want 1000, true", s.Consumed, s.Complete)
	}
	s.shares(1200, 4, sp, sp)
	if s.Complete {
		t.Error("1000 of 1200 input events counted: complete")
	}
}

// TestHeld: every partition held once among the instances; with each,
// every instance holds some when there are enough partitions.
func TestHeld(t *testing.T) {
	in := func(ps []int32) InstanceResult { return InstanceResult{Partitions: ps} }
	for _, tc := range []struct {
		name      string
		hs        []InstanceResult
		p         int
		all, each bool
	}{
		{"shared", []InstanceResult{in([]int32{0, 1}), in([]int32{2, 3})}, 4, true, true},
		{"one holds all", []InstanceResult{in([]int32{0, 1, 2, 3}), in(nil)}, 4, true, false},
		{"a partition not yet assigned", []InstanceResult{in([]int32{0}), in([]int32{2, 3})}, 4, false, false},
		{"a partition held twice", []InstanceResult{in([]int32{0, 1}), in([]int32{1, 2, 3})}, 4, false, false},
		{"rebalancing: nothing held", []InstanceResult{in(nil), in(nil)}, 4, false, false},
		{"health not read", []InstanceResult{in([]int32{0, 1}), {HealthError: "refused"}}, 2, false, false},
		{"more instances than partitions", []InstanceResult{in([]int32{0}), in(nil)}, 1, true, true},
	} {
		if got := held(tc.hs, tc.p, false); got != tc.all {
			t.Errorf("%s: held = %v, want %v", tc.name, got, tc.all)
		}
		if got := held(tc.hs, tc.p, true); got != tc.each {
			t.Errorf("%s: held by each = %v, want %v", tc.name, got, tc.each)
		}
	}
}

func TestFormatParts(t *testing.T) {
	for _, tc := range []struct {
		ps   []int32
		want string
	}{
		{nil, "none"},
		{[]int32{3}, "3"},
		{[]int32{7, 0, 1, 2, 5}, "0-2,5,7"},
	} {
		if got := formatParts(tc.ps); got != tc.want {
			t.Errorf("formatParts(%v) = %q, want %q", tc.ps, got, tc.want)
		}
	}
}

// TestWriteScaleTable: a run whose results differ from the reference says
// so, and an instance whose health was not read says why.
func TestWriteScaleTable(t *testing.T) {
	rs := []Result{
		{Variant: Variant{Name: "1 instance", Instances: 1, Partitions: 16}, Round: 1, EventsPerSec: 100, InputEvents: 1000,
			Scale: &ScaleOut{Spread: "64 lines over 16 partitions", Verification: Verification{Equal: true, Rows: 10}, Instances: []InstanceResult{{Instance: 1, Partitions: []int32{0, 1}}}}},
		{Variant: Variant{Name: "2 instances", Instances: 2, Partitions: 16}, Round: 1, EventsPerSec: 150, InputEvents: 1000, Error: "differ",
			Scale: &ScaleOut{Verification: Verification{Differences: 3, Rows: 10}, Consumed: 930, Instances: []InstanceResult{{Instance: 1, HealthError: "connection refused"}}}},
	}
	var out bytes.Buffer
	writeScaleTable(&out, rs)
	for _, want := range []string{"64 lines over 16 partitions", "equal", "DIFFERS (3 rows, 0 conflicts)", "1.50", "health not read: connection refused", "0-1", " 93 "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the scale table lacks %q:\n%s", want, out.String())
		}
	}
}

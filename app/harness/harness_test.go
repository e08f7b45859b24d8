package harness_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/app/harness"
	"github.com/northpole-workshop/northpole/internal/contract"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
	"github.com/northpole-workshop/northpole/internal/testsupport/testkafka"
	"github.com/northpole-workshop/northpole/otel/telemetry"
	"github.com/northpole-workshop/northpole/producers"
)

func TestTopicsAndNames(t *testing.T) {
	c := harness.Named("run-7")
	want := []string{"run-7-toys", "run-7-boxes", "run-7-packed", "run-7-unpacked", "run-7-spare", "run-7-late", "run-7-dead"}
	tp := c.Packer.Topics
	if got := []string{tp.Toys, tp.Boxes, tp.Packed, tp.Unpacked, tp.Spare, tp.Late, tp.Dead}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("topics %v, want %v", got, want)
	}
	if c.Packer.Group != "run-7-packer" {
		t.Errorf("group %q, want run-7-packer", c.Packer.Group)
	}
	if telemetry.ElvesService(string(record.Toys)) != telemetry.ServiceToyElves || telemetry.ElvesService(string(record.Boxes)) != telemetry.ServiceBoxElves {
		t.Error("ElvesService does not name the stream's elves")
	}
}

// TestValidPrefix: a prefix of up to 200 allowed characters names topics
// Kafka takes, the longest (the sleigh's table) included; a longer one, or
// a character Kafka refuses, is refused.
func TestValidPrefix(t *testing.T) {
	long := strings.Repeat("p", 200)
	if err := harness.ValidPrefix(long); err != nil {
		t.Fatal(err)
	}
	c := harness.Named(long)
	tp := c.Packer.Topics
	names := []string{tp.Toys, tp.Boxes, tp.Packed, tp.Unpacked, tp.Spare, tp.Late, tp.Dead,
		c.Packer.Group + "-clock-table", c.Packer.Group + "-sleigh-table"}
	for _, g := range c.Packer.GroupInputs() {
		names = append(names, g.Topics...)
	}
	for _, n := range names {
		if len(n) > 249 {
			t.Errorf("%d characters in %s...: more than Kafka's 249", len(n), n[195:])
		}
	}
	for _, bad := range []string{long + "p", "a b", "démo", "a/b"} {
		if harness.ValidPrefix(bad) == nil {
			t.Errorf("ValidPrefix(%.20q) = nil, want an error", bad)
		}
	}
	if err := harness.ValidPrefix("demo-20261224-000000.000_x"); err != nil {
		t.Errorf("a prefix of every allowed kind: %v", err)
	}
}

// TestNewTiesThePartsTogether: the elves write to the packer's input topics
// with the packer's W and L and the pipeline's halls, and both streams'
// final heartbeats reach the horizon of the longer one.
func TestNewTiesThePartsTogether(t *testing.T) {
	c := harness.Named("tie")
	c.Kafka.Brokers = []string{"unused:9092"}
	c.Packer.Window, c.Packer.Lateness = 2*time.Second, 500*time.Millisecond
	c.Toys.Count, c.Boxes.Count = 100, 700
	c.Toys.Topic, c.Boxes.Topic = "elsewhere", "elsewhere"
	c.Halls, c.Boxes.Halls = 3, 5
	p, err := harness.New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := p.Config()
	if got.Toys.Topic != "tie-toys" || got.Boxes.Topic != "tie-boxes" {
		t.Errorf("elves write to %q and %q, want the packer's inputs", got.Toys.Topic, got.Boxes.Topic)
	}
	if got.Toys.Params != got.Packer.Params || got.Boxes.Params != got.Packer.Params {
		t.Errorf("elves' params %+v and %+v, the packer's %+v", got.Toys.Params, got.Boxes.Params, got.Packer.Params)
	}
	if got.Toys.Halls != 3 || got.Boxes.Halls != 3 {
		t.Errorf("elves in %d and %d halls, want both in the pipeline's 3", got.Toys.Halls, got.Boxes.Halls)
	}
	h := producers.Horizon(got.Boxes)
	if !got.Toys.FinalHeartbeatAt.Equal(h) || !got.Boxes.FinalHeartbeatAt.Equal(h) {
		t.Errorf("final heartbeats at %v and %v, want both at the boxes' horizon %v", got.Toys.FinalHeartbeatAt, got.Boxes.FinalHeartbeatAt, h)
	}
	if got.Packer.Kafka.Brokers[0] != "unused:9092" {
		t.Errorf("the packer's Kafka is %+v", got.Packer.Kafka)
	}
	// A later FinalHeartbeatAt of the caller's stays.
	later := h.Add(time.Hour)
	c.Toys.FinalHeartbeatAt = later
	if p, err = harness.New(c, nil); err != nil || !p.Config().Toys.FinalHeartbeatAt.Equal(later) {
		t.Errorf("a later final heartbeat was moved: %v, %v", err, p.Config().Toys.FinalHeartbeatAt)
	}

	bad := c
	bad.Packer.Window = 0
	bad.Boxes.Count = -1
	bad.Kafka.Brokers = nil
	bad.Halls = -1
	_, err = harness.New(bad, nil)
	for _, want := range []string{"window must be positive", "boxes elves: count must be >= 0", "brokers", "toys elves: halls must be between 0", "boxes elves: halls must be between 0"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New of a bad config: %v, want it to say %q", err, want)
		}
	}
	// W and L are the packer's, which the elves take: said once.
	if n := strings.Count(fmt.Sprint(err), "window must be positive"); n != 1 {
		t.Errorf("New of a bad config says the window is wrong %d times, want once: %v", n, err)
	}
}

// TestRun: a whole run on Kafka equals the reference, reports its progress
// and ends with PhaseDone.
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := harness.Named(testkafka.Unique("pipe"))
	c.Kafka = testkafka.Config(t)
	c.Packer.Partitions = 2
	for _, e := range []*producers.Config{&c.Toys, &c.Boxes} {
		e.Count, e.DupRate, e.BadRate, e.LateRate = 400, 0.05, 0.05, 0.05
	}
	c.Boxes.Count = 250
	var mu sync.Mutex
	var phases []string
	var last harness.Progress
	c.ProgressEvery = 50 * time.Millisecond
	c.Progress = func(pr harness.Progress) {
		mu.Lock()
		defer mu.Unlock()
		if len(phases) == 0 || phases[len(phases)-1] != pr.Phase {
			phases = append(phases, pr.Phase)
		}
		last = pr
	}
	p, err := harness.New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	run, err := p.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if run.ToyStats.Records != 400 || run.BoxStats.Records != 250 || len(run.Toys) == 0 || len(run.Boxes) == 0 {
		t.Fatalf("elves wrote %d and %d records, %d and %d read back", run.ToyStats.Records, run.BoxStats.Records, len(run.Toys), len(run.Boxes))
	}
	want := contract.Compute(run.Inputs(), p.Config().Packer.Params, contract.ClosedOnly)
	if d := results.Compare(run.Goka, want); len(d) > 0 {
		t.Errorf("Goka differs from the reference: %+v", d)
	}
	if literal := contract.Compute(run.Inputs(), p.Config().Packer.Params, contract.Literal); len(results.Compare(want, literal)) > 0 {
		t.Error("the final heartbeats did not close every window")
	}
	mu.Lock()
	defer mu.Unlock()
	if phases[len(phases)-1] != harness.PhaseDone || last.Toys.Records != 400 || last.Boxes.Records != 250 {
		t.Errorf("progress phases %v, last %+v; want it to end done with every record", phases, last)
	}
}

// TestProgressStatusLine: the line says the phase, what each stream's elves
// sent of what they were asked for, their heartbeats apart, and what the
// packer has yet to read, "?" when unknown.
func TestProgressStatusLine(t *testing.T) {
	pr := harness.Progress{Elapsed: 1500 * time.Millisecond, Phase: harness.PhaseProducing, Lag: 42,
		Toys:  producers.Stats{Records: 10, Kinds: map[string]int64{producers.KindToy: 10, producers.KindHeartbeat: 3}},
		Boxes: producers.Stats{Records: 7, Kinds: map[string]int64{producers.KindHeartbeat: 2}}}
	if got, want := pr.StatusLine(100, 50), "[  1.5s] producing: toys 10/100, boxes 7/50 sent, and 5 heartbeats; the packer has 42 records to read (inputs and its loop)"; got != want {
		t.Errorf("StatusLine = %q, want %q", got, want)
	}
	pr.LagErr = errors.New("no coordinator")
	if got := pr.StatusLine(100, 50); !strings.Contains(got, "the packer has ? records to read") {
		t.Errorf("StatusLine with the lag unknown = %q", got)
	}
}

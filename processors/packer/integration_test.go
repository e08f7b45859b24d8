package packer_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/northpole-workshop/northpole/internal/contract"
	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
	"github.com/northpole-workshop/northpole/internal/testsupport/testkafka"
	"github.com/northpole-workshop/northpole/internal/topicread"
	"github.com/northpole-workshop/northpole/processors/packer"
	"github.com/northpole-workshop/northpole/processors/packer/outputs"
	"github.com/northpole-workshop/northpole/processors/packer/readback"
	"github.com/northpole-workshop/northpole/producers"
)

// scenario is one randomized run of elves and packer.
type scenario struct {
	seed                      int64
	toys, boxes, elves        int
	partitions                int32
	window, lateness, spacing time.Duration
	disorder                  time.Duration
	lateRate, dupRate, bad    float64
	halls                     int // 0: the keys are sizes alone
}

func (s scenario) String() string {
	return fmt.Sprintf("seed=%d toys=%d boxes=%d elves=%d p=%d W=%v L=%v spacing=%v disorder=%v late=%.2f dup=%.2f bad=%.2f halls=%d",
		s.seed, s.toys, s.boxes, s.elves, s.partitions, s.window, s.lateness, s.spacing, s.disorder, s.lateRate, s.dupRate, s.bad, s.halls)
}

func randomScenario(seed int64) scenario {
	r := rand.New(rand.NewPCG(uint64(seed), 42))
	pick := func(ds ...time.Duration) time.Duration { return ds[r.IntN(len(ds))] }
	s := scenario{
		seed:       seed,
		toys:       100 + r.IntN(400),
		boxes:      100 + r.IntN(400),
		elves:      1 + r.IntN(4),
		partitions: []int32{1, 2, 3, 4, 8}[r.IntN(5)],
		window:     pick(time.Second, 2*time.Second, 10*time.Second, 1500*time.Millisecond),
		lateness:   pick(0, 500*time.Millisecond, time.Second, 5*time.Second),
		spacing:    pick(time.Millisecond, 10*time.Millisecond, 50*time.Millisecond, 200*time.Millisecond),
		lateRate:   []float64{0, 0.02, 0.1}[r.IntN(3)],
		dupRate:    []float64{0, 0.03, 0.15}[r.IntN(3)],
		bad:        []float64{0, 0.03, 0.1}[r.IntN(3)],
	}
	// Disorder up to twice the lateness, so that some records become late by
	// accident, not only the deliberate ones.
	s.disorder = time.Duration(r.Int64N(int64(2*s.lateness + s.window)))
	// Drawn last, so that the scenarios of sizes alone stay as they were.
	s.halls = []int{0, 0, 1, 3, 7}[r.IntN(5)]
	return s
}

// pipeline is one packer configuration with topics of its own, which the
// tests run with a scenario's elves (runElves).
type pipeline struct {
	kc  kafkaconf.Config
	cfg packer.Config
}

func newPipeline(t *testing.T, kc kafkaconf.Config, s scenario) pipeline {
	t.Helper()
	cfg := packer.Named(testkafka.Unique("it"))
	cfg.Kafka = kc
	cfg.Partitions = s.partitions
	cfg.Window, cfg.Lateness = s.window, s.lateness
	return pipeline{kc: kc, cfg: cfg}
}

// elves are the scenario's elves of stream; runElves gives them the
// packer's topic, W and L, and the horizon of both streams.
func (pl pipeline) elves(s scenario, stream record.Stream) producers.Config {
	c := producers.DefaultConfig(stream)
	c.Count = s.toys
	if stream == record.Boxes {
		c.Count = s.boxes
	}
	c.Elves, c.Seed, c.Spacing, c.Disorder = s.elves, s.seed, s.spacing, s.disorder
	c.LateRate, c.DupRate, c.BadRate = s.lateRate, s.dupRate, s.bad
	c.HeartbeatEvery = s.window / 2
	c.Halls = s.halls
	return c
}

// produce runs both elves to completion.
func (pl pipeline) produce(ctx context.Context, s scenario) error { return pl.produceAt(ctx, s, 0) }

// produceAt runs both elves at a fixed rate (records/s per stream; 0: as
// fast as they can).
func (pl pipeline) produceAt(ctx context.Context, s scenario, rate float64) error {
	toys, boxes := pl.elves(s, record.Toys), pl.elves(s, record.Boxes)
	toys.Rate, boxes.Rate = rate, rate
	return runElves(ctx, pl.cfg, toys, boxes)
}

// startPacker runs a packer until the returned stop is called.
func (pl pipeline) startPacker(t *testing.T, ctx context.Context) (stop func() error) {
	t.Helper()
	return pl.startRunning(t, ctx).Stop
}

// startRunning runs a packer until its Stop; its WaitQuiet fails as soon as
// the packer stops by itself.
func (pl pipeline) startRunning(t *testing.T, ctx context.Context) *runningPacker {
	t.Helper()
	return startPacker(t, ctx, pl.cfg)
}

// waitQuiet waits until the packers of the pipeline's configuration have
// consumed everything.
func (pl pipeline) waitQuiet(t *testing.T, ctx context.Context) {
	t.Helper()
	if err := outputs.WaitQuiet(ctx, pl.cfg, 200*time.Millisecond, nil, slog.Default()); err != nil {
		t.Fatal(err)
	}
}

// check compares the packer's deduplicated outputs with the reference on the
// records actually in the input topics.
func (pl pipeline) check(t *testing.T, ctx context.Context, s scenario) (results.Set, outputs.Counts) {
	t.Helper()
	rb, err := readback.Read(ctx, pl.kc, pl.cfg.Topics)
	if err != nil {
		t.Fatal(err)
	}
	got, raw, inputs := rb.Goka, rb.Raw, rb.Inputs()
	want := contract.Compute(inputs, pl.cfg.Params, contract.ClosedOnly)
	literal := contract.Compute(inputs, pl.cfg.Params, contract.Literal)
	if d := results.Compare(want, literal); len(d) > 0 {
		t.Fatalf("%v: the final heartbeats did not close every window: %+v", s, d)
	}
	if d := results.Compare(got, want); len(d) > 0 {
		for _, x := range d {
			t.Errorf("%v: %s: only goka %d rows %.5v, only reference %d rows %.5v", s, x.Set, len(x.OnlyA), x.OnlyA, len(x.OnlyB), x.OnlyB)
		}
	}
	if raw.Conflicts != 0 {
		t.Errorf("%v: %d output keys were written with two different values", s, raw.Conflicts)
	}
	c := want.Counts()
	if c.Packed == 0 {
		t.Errorf("%v: nothing packed: the scenario tests nothing", s)
	}
	t.Logf("%v: inputs %d, results %+v, raw %+v", s, len(inputs), c, raw)
	return got, raw
}

// TestRandomizedRunsEqualReference is the main correctness test of the
// packer: randomized runs (disorder, late, duplicate and bad records, several
// partition counts, windows and lateness) where the Goka results must equal
// the batch reference on all five sets.
func TestRandomizedRunsEqualReference(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	kc := testkafka.Config(t)
	const runs = 30
	for i := range runs {
		s := randomScenario(int64(i + 1))
		t.Run(fmt.Sprintf("seed%d", s.seed), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			pl := newPipeline(t, kc, s)
			stop := pl.startPacker(t, ctx)
			if err := pl.produce(ctx, s); err != nil {
				t.Fatal(err)
			}
			pl.waitQuiet(t, ctx)
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			pl.check(t, ctx, s)
		})
	}
}

// TestRunStoppedAtOnceIsClean: a packer stopped before (or while) it sets up
// its topics stops cleanly, as one stopped later does. A caller cannot tell
// how far Run has got when it cancels.
func TestRunStoppedAtOnceIsClean(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	kc := testkafka.Config(t)
	pl := newPipeline(t, kc, randomScenario(7))
	pk, err := packer.New(pl.cfg, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := pk.Run(ctx); err != nil {
		t.Fatalf("Run with a cancelled context = %v, want nil", err)
	}
}

// TestRestartMidRun stops the packer while the elves are still writing and
// starts a new one with the same groups: nothing is lost and nothing is
// packed twice.
func TestRestartMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	kc := testkafka.Config(t)
	for _, seed := range []int64{101, 102, 103} {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			s := randomScenario(seed)
			s.toys, s.boxes, s.partitions = 1500, 1500, 4
			s.dupRate, s.lateRate, s.bad = 0.05, 0.05, 0.05
			pl := newPipeline(t, kc, s)
			// Rewinding committed offsets by half is a replay no crash makes:
			// a crash never takes the group back below what the
			// cleaner deleted from the clock table, as commits only move on
			// (TestRestartAfterCleaning restarts a cleaned packer).
			pl.cfg.CleanEvery = 0
			stop := pl.startPacker(t, ctx)

			produced := make(chan error, 1)
			// A rate makes the run long enough to stop the packer in the middle.
			go func() { produced <- pl.produceAt(ctx, s, 1500) }()
			// Stop once some results exist, twice over. A clean stop commits
			// every offset, so before restarting, rewind the groups' committed
			// offsets: as after a crash, the tables are then ahead of the
			// inputs, and every stage sees records it already applied.
			for round := range 2 {
				// Also wait (a while) for output of the packer just started, so
				// that the second stop lands while it is busy. (Run must also
				// stop cleanly before it has begun: a stop right at the start
				// returns nil.)
				waitForOutput(t, ctx, pl, max(int64(200*(round+1)), packedCount(ctx, pl)+20), 30*time.Second)
				if err := stop(); err != nil {
					t.Fatalf("stop packer: %v", err)
				}
				rewound := pl.rewindGroups(t, 0.5)
				t.Logf("packer stopped (round %d), %d committed offsets rewound by half", round, rewound)
				stop = pl.startPacker(t, ctx)
			}
			if err := <-produced; err != nil {
				t.Fatal(err)
			}
			pl.waitQuiet(t, ctx)
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			_, raw := pl.check(t, ctx, s)
			if raw.Duplicates == 0 {
				t.Errorf("the rewound offsets caused no redelivered output: the test did not exercise replays")
			}
			t.Logf("replays re-sent %d output records; consumers deduplicate them by key", raw.Duplicates)
		})
	}
}

// rewindGroups moves every committed offset of the packer's groups back to
// fraction of its value.
func (pl pipeline) rewindGroups(t *testing.T, fraction float64) int {
	t.Helper()
	ctx := context.Background()
	cl, err := pl.kc.NewReaderClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	admin := kadm.NewClient(cl)
	defer admin.Close()
	n := 0
	for _, group := range pl.cfg.Groups() {
		offsets, err := admin.FetchOffsets(ctx, group)
		if err != nil {
			t.Fatalf("offsets of %s: %v", group, err)
		}
		rewound := kadm.Offsets{}
		offsets.Each(func(o kadm.OffsetResponse) {
			if o.At > 0 {
				rewound.Add(kadm.Offset{Topic: o.Topic, Partition: o.Partition, At: int64(float64(o.At) * fraction), LeaderEpoch: -1})
				n++
			}
		})
		if err := admin.CommitAllOffsets(ctx, group, rewound); err != nil {
			t.Fatalf("rewind %s: %v", group, err)
		}
	}
	return n
}

// packedCount is the number of raw records in the packed topic (0 when it
// cannot be read yet).
func packedCount(ctx context.Context, pl pipeline) int64 {
	msgs, err := topicread.All(ctx, pl.kc, pl.cfg.Topics.Packed)
	if err != nil {
		return 0
	}
	return int64(len(msgs))
}

// waitForOutput waits until the packed topic holds n raw records; once
// patience has passed, any output at all is enough.
func waitForOutput(t *testing.T, ctx context.Context, pl pipeline, n int64, patience time.Duration) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for {
		c := packedCount(ctx, pl)
		if c >= n || (c > 0 && time.Now().After(deadline)) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no output appeared: %v", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestStrayPartitionLosesNothing writes records of one size to a partition
// other than the one its key hashes to (as a producer with another
// partitioner would), before the elves write the rest. The contract assumes
// one partition per (stream, size), so the results need not equal the
// reference, but no record may go without an outcome: every toy must end up
// packed, unpacked, late or a dead letter, and every box packed, spare, late
// or a dead letter.
func TestStrayPartitionLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	kc := testkafka.Config(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s := scenario{seed: 77, toys: 300, boxes: 300, elves: 1, partitions: 4,
		window: 2 * time.Second, lateness: time.Second, spacing: 10 * time.Millisecond}
	pl := newPipeline(t, kc, s)
	stop := pl.startPacker(t, ctx)

	// Where the elves (and sarama, and goka) put key "M": the reference.
	home, err := sarama.NewHashPartitioner("").Partition(&sarama.ProducerMessage{Key: sarama.StringEncoder("M")}, s.partitions)
	if err != nil {
		t.Fatal(err)
	}
	stray := (home + 1) % s.partitions
	prod, err := kgo.NewClient(kgo.SeedBrokers(kc.Brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	start := producers.DefaultConfig(record.Toys).Start
	for i := range 5 {
		made := record.FormatTime(start.Add(time.Duration(i) * 100 * time.Millisecond))
		for _, r := range []*kgo.Record{
			{Topic: pl.cfg.Topics.Toys, Partition: stray, Key: []byte("M"),
				Value: fmt.Appendf(nil, `{"toy_id":"stray-toy-%d","size":"M","made_at":%q}`, i, made)},
			{Topic: pl.cfg.Topics.Boxes, Partition: stray, Key: []byte("M"),
				Value: fmt.Appendf(nil, `{"box_id":"stray-box-%d","size":"M","made_at":%q}`, i, made)},
		} {
			if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	prod.Close()
	if err := pl.produce(ctx, s); err != nil {
		t.Fatal(err)
	}
	pl.waitQuiet(t, ctx)
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	out, err := outputs.Read(ctx, kc, pl.cfg.Topics)
	if err != nil {
		t.Fatal(err)
	}
	got := out.Set
	outcome := map[string]int{} // stream|size|id -> outcomes
	for _, r := range got.Packed {
		outcome["toys|"+r.Size+"|"+r.ToyID]++
		outcome["boxes|"+r.Size+"|"+r.BoxID]++
	}
	for _, r := range got.Unpacked {
		outcome["toys|"+r.Size+"|"+r.ToyID]++
	}
	for _, r := range got.Spare {
		outcome["boxes|"+r.Size+"|"+r.BoxID]++
	}
	for _, r := range got.Late {
		outcome[r.Stream+"|"+r.Size+"|"+r.ID]++
	}
	dead := map[string]bool{}
	for _, d := range got.Dead {
		dead[fmt.Sprintf("%s/%d/%d", d.Stream, d.Partition, d.Offset)] = true
	}
	items, strays := 0, 0
	for _, x := range []record.Stream{record.Toys, record.Boxes} {
		topic := pl.cfg.Topics.Toys
		if x == record.Boxes {
			topic = pl.cfg.Topics.Boxes
		}
		inputs, err := topicread.Inputs(ctx, kc, topic, x)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range inputs {
			r, err := record.Parse(x, in.Key, in.Value)
			if err != nil || r.Heartbeat {
				continue
			}
			items++
			if in.Partition == stray && r.Size == "M" {
				strays++
			}
			k := string(x) + "|" + r.Size + "|" + r.ID
			if outcome[k] == 0 && !dead[fmt.Sprintf("%s/%d/%d", x, in.Partition, in.Offset)] {
				t.Errorf("%s %s (partition %d, offset %d) has no outcome", x, r.ID, in.Partition, in.Offset)
			}
		}
	}
	if strays != 10 {
		t.Fatalf("%d stray records read back, want 10", strays)
	}
	t.Logf("%d items, %d of them on a stray partition; every one has an outcome", items, strays)
}

package packer_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/testsupport/testkafka"
)

// clockTableKept is, over the partitions of the clock table, the records it
// still holds and the records deleted from its start.
func clockTableKept(t *testing.T, ctx context.Context, kc kafkaconf.Config, topic string) (kept, deleted int64) {
	t.Helper()
	cl, err := kc.NewReaderClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(e kadm.ListedOffset) {
		s, _ := starts.Lookup(e.Topic, e.Partition)
		kept += e.Offset - s.Offset
		deleted += s.Offset
	})
	return kept, deleted
}

// TestRestartAfterCleaning runs a packer that deletes the clock table's
// records no restart needs every 100 ms, over many short windows, and stops
// and starts it again twice while the elves write, each time once the
// broker has actually deleted records. The restarted packers recover from
// what the table kept, and the results must equal the reference; at the
// end, every window closed, the table must hold almost nothing.
func TestRestartAfterCleaning(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	kc := testkafka.Config(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s := scenario{seed: 401, toys: 6000, boxes: 6000, elves: 2, partitions: 2,
		window: time.Second, lateness: 500 * time.Millisecond, spacing: 2 * time.Millisecond, disorder: 700 * time.Millisecond,
		lateRate: 0.03, dupRate: 0.05, bad: 0.03}
	pl := newPipeline(t, kc, s)
	pl.cfg.CleanEvery = 100 * time.Millisecond
	table := pl.cfg.Group + "-clock-table"
	stop := pl.startPacker(t, ctx)

	produced := make(chan error, 1)
	go func() { produced <- pl.produceAt(ctx, s, 1500) }()
	for round := range 2 {
		deadline := time.Now().Add(time.Minute)
		for {
			if _, deleted := clockTableKept(t, ctx, kc, table); deleted > int64(1000*(round+1)) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the clock table was not cleaned within a minute", round)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err := stop(); err != nil {
			t.Fatalf("stop packer: %v", err)
		}
		kept, deleted := clockTableKept(t, ctx, kc, table)
		t.Logf("round %d: packer stopped with %d clock table records kept, %d deleted; starting another", round, kept, deleted)
		stop = pl.startPacker(t, ctx)
	}
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	pl.waitQuiet(t, ctx)
	// The final heartbeats closed every window: once the group has
	// committed past them (sarama commits every second) and the cleaner
	// has run again, the table keeps only what the last decisions of each
	// (size, stream) need, up to the snapshot of the partition's clocks
	// after them: one comes with every 256th input offset of each input,
	// so at most 2 × 256 decisions a partition. Wait for it, up to a bound
	// far above the few seconds it takes.
	var kept, deleted int64
	most := int64(s.partitions) * 2 * 256
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if kept, deleted = clockTableKept(t, ctx, kc, table); kept <= most {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the clock table still keeps %d of %d records, more than %d, 30 s after the final heartbeats closed every window", kept, kept+deleted, most)
		}
	}
	t.Logf("clock table at the end: %d records kept, %d deleted", kept, deleted)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	pl.check(t, ctx, s)
}

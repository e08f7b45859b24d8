package compare_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/app/harness"
	"github.com/northpole-workshop/northpole/internal/contract"
	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/results"
	"github.com/northpole-workshop/northpole/internal/sqlengine"
	"github.com/northpole-workshop/northpole/internal/testsupport/sqltest"
	"github.com/northpole-workshop/northpole/internal/testsupport/testkafka"
	"github.com/northpole-workshop/northpole/internal/testsupport/testpostgres"
	"github.com/northpole-workshop/northpole/processors/packer/readback"
	"github.com/northpole-workshop/northpole/producers"
)

// TestGokaAndSQLOnKafka: 30 randomized runs through Kafka (kfake, or the broker
// in $NORTHPOLE_TEST_BROKERS): the elves write, the Goka packer packs, and
// the records read back from the input topics go to the embedded SQLite and
// to PostgreSQL. Goka, both SQL engines and the reference must agree on all
// five sets (dead reasons between SQL and the reference too).
func TestGokaAndSQLOnKafka(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	const runs = 30
	for i := range runs {
		r := randomPlan(int64(500 + i))
		r.Toys, r.Boxes = 100+int(r.Seed%5)*50, 100+int(r.Seed%3)*80
		r.Cut = 0 // Goka reads everything the elves send, final heartbeats included
		if r.Start.Before(producers.DefaultStart) && i%2 == 0 {
			r.Start = producers.DefaultStart // keep some epoch-crossing runs, not all
		}
		t.Run(fmt.Sprintf("seed%d", r.Seed), func(t *testing.T) {
			t.Parallel()
			// A broker per run: kfake serves all its clients from one loop,
			// and many packers' consumer groups on one broker slow each
			// other down far more than separate brokers do (12 runs: 200 s
			// on one broker, 28 s on one each, with -race -parallel 4).
			kc := testkafka.Config(t)
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			gokaRun(t, ctx, kc, r)
		})
	}
}

// readBack runs read up to three times. Once the packer is quiet the topics
// no longer change, so a retry reads the same records; it only rides over a
// connection error, seen once in a few dozen runs under -race with thirty
// brokers in one process ("kafka: broker not connected" from a partition
// read; probably sarama closing the broker that internal/topicread's
// concurrent partition readers share after one request on it failed, but the
// first failure was not identified).
func readBack(t *testing.T, read func() error) {
	t.Helper()
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		if err = read(); err == nil {
			return
		}
		t.Logf("reading the topics back, attempt %d: %v", attempt, err)
		time.Sleep(time.Second)
	}
	t.Fatalf("reading the topics back: %v", err)
}

func gokaRun(t *testing.T, ctx context.Context, kc kafkaconf.Config, r planRun) {
	pc := harness.Named(testkafka.Unique("sqlit"))
	pc.Kafka = kc
	pc.Packer.Partitions = r.Partitions
	pc.Packer.Window, pc.Packer.Lateness = r.Window, r.Lateness
	pc.Toys.Count, pc.Boxes.Count = r.Toys, r.Boxes
	for _, e := range []*producers.Config{&pc.Toys, &pc.Boxes} {
		e.Elves, e.Seed, e.Start, e.Spacing, e.Disorder = r.Elves, r.Seed, r.Start, r.Spacing, r.Disorder
		e.LateRate, e.DupRate, e.BadRate = r.LateRate, r.DupRate, r.Bad
		e.HeartbeatEvery = r.Window / 2
	}
	pl, err := harness.New(pc, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	if err := pl.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := pl.Close(); err != nil {
			t.Errorf("packer: %v", err)
		}
	}()
	if _, _, err := pl.Produce(ctx, nil); err != nil {
		t.Fatalf("%v: %v", r, err)
	}
	if err := pl.WaitQuiet(ctx, 200*time.Millisecond); err != nil {
		t.Fatalf("%v: %v", r, err)
	}

	var rb readback.Run
	readBack(t, func() (err error) {
		rb, err = pl.ReadBack(ctx)
		return err
	})
	inputs, gokaSet, raw := rb.Inputs(), rb.Goka, rb.Raw
	p := contract.Params{Window: r.Window, Lateness: r.Lateness}
	want := contract.Compute(inputs, p, contract.ClosedOnly)

	report := func(engine string, diffs []string) {
		if len(diffs) > 0 {
			t.Errorf("%v: %s differs from the reference:\n  %s", r, engine, strings.Join(diffs, "\n  "))
		}
	}
	var gd []string
	for _, d := range results.Compare(gokaSet, want) {
		gd = append(gd, fmt.Sprintf("%s: only goka %.5v, only reference %.5v", d.Set, d.OnlyA, d.OnlyB))
	}
	report("goka", gd)
	if raw.Conflicts != 0 {
		t.Errorf("%v: goka wrote %d output keys with two different values", r, raw.Conflicts)
	}

	lite, err := sqlengine.OpenSQLite(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	got, err := lite.Compute(ctx, inputs, p)
	if err != nil {
		t.Fatal(err)
	}
	report("sqlite", sqltest.Differences(got, want))

	if dsn, ok := testpostgres.Optional(t); ok {
		schema := testpostgres.Schema("np_goka")
		pg, err := sqlengine.OpenPostgres(ctx, dsn, schema, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := sqlengine.DropSchema(context.Background(), pg.DB(), schema); err != nil {
				t.Errorf("clean up: %v", err)
			}
			pg.Close()
		}()
		got, err := pg.Compute(ctx, inputs, p)
		if err != nil {
			t.Fatal(err)
		}
		report("postgres", sqltest.Differences(got, want))
	}
	c := want.Counts()
	if c.Packed == 0 {
		t.Errorf("%v: nothing packed: the run tests little", r)
	}
	t.Logf("%v: %d inputs, results %+v", r, len(inputs), c)
}

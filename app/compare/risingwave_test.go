package compare_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/northpole-workshop/northpole/app/compare"
	"github.com/northpole-workshop/northpole/app/harness"
	"github.com/northpole-workshop/northpole/internal/contract"
	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
	"github.com/northpole-workshop/northpole/internal/testsupport/hostile"
	"github.com/northpole-workshop/northpole/internal/testsupport/testkafka"
	"github.com/northpole-workshop/northpole/processors/packer"
	"github.com/northpole-workshop/northpole/producers"
	"github.com/northpole-workshop/northpole/risingwave"
)

// EnvRisingWave names a running RisingWave as a postgres:// URL, for example
// postgres://root@127.0.0.1:4566/dev. Only then does TestGokaEqualsRisingWave
// run. It skips without it, under CI too: RisingWave cannot be installed on
// the CI machines (no binary is reachable there, and a build from source
// takes most of an hour).
const EnvRisingWave = "NORTHPOLE_TEST_RISINGWAVE"

// TestGokaEqualsRisingWave runs the Goka packer on its own topics, then the
// script generated for those topics on a running RisingWave, in a database
// of its own, and compares the two row for row (app/compare, as
// `northpole compare --sql` does), and Goka with the batch reference. Two
// inputs: the elves' randomized records in 3 halls (12 packing lines over 4
// partitions) with every kind of bad record (bad lines included),
// duplicates, late and disordered records (the seed is logged), and the
// records a careless or hostile producer sends (internal/testsupport/hostile).
//
// RisingWave must reach the test's Kafka at the addresses the test uses:
// kfake on loopback, or $NORTHPOLE_TEST_BROKERS.
func TestGokaEqualsRisingWave(t *testing.T) {
	dsn := os.Getenv(EnvRisingWave)
	if dsn == "" {
		t.Skipf("$%s is not set (a RisingWave's postgres:// URL); this test skips without it, under CI too", EnvRisingWave)
	}
	seed := rand.Int64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	t.Run("elves", func(t *testing.T) {
		params := contract.Params{
			Window:   []time.Duration{time.Second, 2 * time.Second, 10 * time.Second}[rng.IntN(3)],
			Lateness: []time.Duration{0, time.Second, 5 * time.Second}[rng.IntN(3)],
		}
		compareOnRisingWave(t, dsn, params, func(ctx context.Context, p *harness.Pipeline) error {
			_, err := p.Run(ctx)
			return err
		}, func(c *harness.Config) {
			c.Halls, c.Packer.Partitions = 3, 4
			for i, e := range []*producers.Config{&c.Toys, &c.Boxes} {
				e.Count, e.Seed = 1500+rng.IntN(1500), seed+int64(i)
				e.LateRate, e.DupRate, e.BadRate = 0.03+0.05*rng.Float64(), 0.03+0.05*rng.Float64(), 0.03+0.05*rng.Float64()
				e.Disorder = time.Duration(rng.Int64N(int64(params.Lateness + params.Window)))
			}
		}, []string{"packed", "unpacked", "spare", "late", "dead"})
	})
	t.Run("hostile", func(t *testing.T) {
		compareOnRisingWave(t, dsn, contract.DefaultParams(), func(ctx context.Context, p *harness.Pipeline) error {
			run, err := p.StartPacker(ctx)
			if err != nil {
				return err
			}
			defer func() { _ = run.Stop() }()
			cl, err := hostile.NewProducer(p.Config().Kafka)
			if err != nil {
				return err
			}
			defer cl.Close()
			topics := p.Config().Packer.Topics
			if err := hostile.Produce(ctx, cl, topics.Toys, topics.Boxes, slices.Concat(hostile.Records(), hostile.FinalHeartbeats())); err != nil {
				return err
			}
			if err := run.WaitQuiet(ctx, 200*time.Millisecond); err != nil {
				return err
			}
			return run.Stop()
		}, nil, []string{"packed", "late", "dead"})
	})
}

// compareOnRisingWave runs one Goka run (produce) on fresh topics with
// params, then the RisingWave script for them in a fresh database, waits
// until RisingWave has read every input record, and compares. Each set in
// nonEmpty must hold rows, so that the comparison cannot pass on nothing.
func compareOnRisingWave(t *testing.T, dsn string, params contract.Params, produce func(context.Context, *harness.Pipeline) error,
	configure func(*harness.Config), nonEmpty []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	prefix := testkafka.Unique("rw")
	c := harness.Named(prefix)
	c.Kafka = testkafka.Config(t)
	c.Packer.Partitions = 2
	c.Packer.Params = params
	if configure != nil {
		configure(&c)
	}
	p, err := harness.New(c, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.EnsureTopics(ctx); err != nil {
		t.Fatal(err)
	}
	if err := produce(ctx, p); err != nil {
		t.Fatal(err)
	}
	topics := p.Config().Packer.Topics
	t.Logf("Goka done on topics %s and %s (W %v, L %v)", topics.Toys, topics.Boxes, params.Window, params.Lateness)

	dbDSN := freshDatabase(t, ctx, dsn, strings.ReplaceAll(prefix, "-", "_"))
	script, err := risingwave.Script(risingwave.ScriptOptions{Brokers: strings.Join(c.Kafka.Brokers, ","),
		ToysTopic: topics.Toys, BoxesTopic: topics.Boxes, Params: params})
	if err != nil {
		t.Fatal(err)
	}
	conn := connect(t, ctx, dbDSN)
	for i, stmt := range risingwave.Statements(script) {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("statement %d of the script: %v\n%s", i+1, err, stmt)
		}
	}
	waitCaughtUp(t, ctx, conn, c.Kafka, topics)

	res, err := compare.Run(ctx, compare.Config{Kafka: c.Kafka, Topics: topics, Params: params, DSN: dbDSN, Schema: "public"}, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	cmp := res.Comparison
	t.Logf("%d input records; Goka: %s; RisingWave: %s", cmp.Inputs, counts(res.Goka), counts(res.SQL))
	if !cmp.Equal {
		for i, d := range cmp.Differences {
			if i == 20 {
				t.Errorf("... %d differences in all", len(cmp.Differences))
				break
			}
			t.Errorf("%s only in %s: %+v", d.Set, d.OnlyIn, d.Row)
		}
		t.Errorf("Goka and RisingWave differ (%d Goka keys written twice differently)", cmp.GokaConflicts)
	}
	for _, d := range res.Reference {
		t.Errorf("Goka differs from the batch reference in %s: %d rows only in Goka, %d only in the reference", d.Set, len(d.OnlyA), len(d.OnlyB))
	}
	sizes := map[string]int{"packed": len(res.Goka.Packed), "unpacked": len(res.Goka.Unpacked), "spare": len(res.Goka.Spare),
		"late": len(res.Goka.Late), "dead": len(res.Goka.Dead)}
	for _, s := range nonEmpty {
		if sizes[s] == 0 {
			t.Errorf("no %s rows: the input tests too little", s)
		}
	}
}

func counts(s results.Set) string {
	return fmt.Sprintf("%d packed, %d unpacked, %d spare, %d late, %d dead", len(s.Packed), len(s.Unpacked), len(s.Spare), len(s.Late), len(s.Dead))
}

// connect opens a connection whose server notices (RisingWave's planner
// warnings) go to the test log.
func connect(t *testing.T, ctx context.Context, dsn string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatalf("$%s: %v", EnvRisingWave, err)
	}
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { t.Logf("RisingWave: %s: %s", n.Severity, n.Message) }
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("connect to RisingWave at %s:%d: %v", cfg.Host, cfg.Port, err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// freshDatabase creates the database name and returns dsn pointing at it;
// the database and everything in it go when the test ends.
func freshDatabase(t *testing.T, ctx context.Context, dsn, name string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme != "postgres" && u.Scheme != "postgresql" {
		t.Fatalf("$%s must be a postgres:// URL, is %q", EnvRisingWave, dsn)
	}
	admin := connect(t, ctx, dsn)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		// After connect's cleanups for connections made later (t.Cleanup
		// runs last in, first out): none is left in the database.
		ctx := context.Background()
		db := *u
		db.Path = "/" + name
		if c, err := pgx.Connect(ctx, db.String()); err == nil {
			for _, src := range []string{"np_toys_source", "np_boxes_source"} {
				if _, err := c.Exec(ctx, "DROP SOURCE IF EXISTS "+src+" CASCADE"); err != nil {
					t.Errorf("drop source %s in %s: %v", src, name, err)
				}
			}
			_ = c.Close(ctx)
		}
		if _, err := admin.Exec(ctx, "DROP DATABASE "+name); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	db := *u
	db.Path = "/" + name
	return db.String()
}

// waitCaughtUp returns once RisingWave has read every record of the input
// topics. Its views are consistent with each other as of a barrier (a
// checkpoint): a query reads every view as of the same committed barrier. So
// once np_input holds the last offset of every input partition, every result
// view holds what the whole input gives. FLUSH asks RisingWave to commit a
// barrier now instead of at its next checkpoint.
func waitCaughtUp(t *testing.T, ctx context.Context, conn *pgx.Conn, kc kafkaconf.Config, topics packer.Topics) {
	t.Helper()
	cl, err := kc.NewReaderClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topics.Toys, topics.Boxes)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{} // stream/partition -> last offset
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			stream := string(record.Toys)
			if o.Topic == topics.Boxes {
				stream = string(record.Boxes)
			}
			want[fmt.Sprintf("%s/%d", stream, o.Partition)] = o.Offset - 1
		}
	})
	started := time.Now()
	for last := started; ; {
		if _, err := conn.Exec(ctx, "FLUSH"); err != nil {
			t.Fatalf("FLUSH: %v", err)
		}
		rows, err := conn.Query(ctx, "SELECT stream, kpartition, max(koffset) FROM np_input GROUP BY stream, kpartition")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		var stream string
		var partition, offset int64
		_, err = pgx.ForEachRow(rows, []any{&stream, &partition, &offset}, func() error {
			got[fmt.Sprintf("%s/%d", stream, partition)] = offset
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		behind := 0
		for k, o := range want {
			if g, ok := got[k]; !ok || g < o {
				behind++
			}
		}
		if behind == 0 {
			t.Logf("RisingWave read every input record %v after the script", time.Since(started).Round(time.Millisecond))
			return
		}
		if time.Since(last) > 10*time.Second {
			t.Logf("RisingWave: %d input partitions not read to the end yet (read %v, ends %v)", behind, got, want)
			last = time.Now()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("RisingWave did not read every input record: read %v, want %v", got, want)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

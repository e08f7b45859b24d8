package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/northpole-workshop/northpole/app/compare"
	"github.com/northpole-workshop/northpole/app/demo"
	"github.com/northpole-workshop/northpole/app/harness"
	"github.com/northpole-workshop/northpole/app/report"
	"github.com/northpole-workshop/northpole/internal/english"
	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/statusline"
	"github.com/northpole-workshop/northpole/processors/packer"
	"github.com/northpole-workshop/northpole/producers"
)

type demoOptions struct {
	toys, boxes int
	halls       int
	seed        int64
	rate        float64
	elves       int
	disorder    time.Duration
	lateRate    float64
	dupRate     float64
	badRate     float64
	kafka       kafkaOptions
	out         string
	topicPrefix string
	groupSet    bool // --group given: not named after the prefix
	timeout     time.Duration
	packer      packer.Config
	serviceMap  bool
}

func newDemoCmd() *cobra.Command {
	o := demoOptions{toys: 2000, boxes: 2000, seed: 1, elves: 4, disorder: 2 * time.Second,
		lateRate: 0.02, dupRate: 0.02, badRate: 0.02, timeout: 5 * time.Minute, packer: packer.DefaultConfig(), serviceMap: true}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run elves and the Goka packer on an in-process Kafka and show what was packed",
		Long: `demo starts an in-process Kafka broker (franz-go's kfake, which speaks the real
Kafka wire protocol on loopback), creates the topics, runs the toy elves, the
box elves and the Goka packer, waits until every record is consumed, and prints
what was packed per size class. It then checks the Goka results against the
batch reference implementation of the contract, row for row.

` + producers.LinesHelp + `

` + producers.WrongRecordsHelp + `

` + producers.HeartbeatsHelp + `

With --brokers it uses an existing Kafka instead, on topics and groups of its
own so that no earlier run's records count too: every topic and group is named
after a prefix, demo-<UTC time, to the ms> unless --topic-prefix names one (the
demo prints the names; --topic-prefix '' uses the default topics toys, boxes,
packed, ... and group packer). On the in-process Kafka there is no prefix.

With --out DIR it writes:
` + demo.OutFiles + `
A path that is a file, or a directory that cannot be written, is refused
before the run starts.

The sleigh (northpole process sleigh) runs too, and must end up with every
packed pair in its manifest. Every component is traced under its own
service.name (toy-elves, box-elves, packer, sleigh) into an in-process service
map, printed at the end (--servicemap=false: no tracing unless OTEL_* asks);
with OTEL_EXPORTER_OTLP_ENDPOINT set the spans also go there (SigNoz, Jaeger).
The demo then says how many spans each got and how many were dropped (a span
waits for room in the export queue rather than being dropped, unless that
exporter is failing), and checks the map's edges against the records read back
(the map check, also in summary.json and report.html).

Exit status: 0 when the Goka results equal the reference and the embedded
SQL and the service map equals the records read back; 3 when the results
differ; 4 when only the map differs (spans lost, or records redelivered);
1 on error, 2 on bad flags, 130 when interrupted (Ctrl-C; 143: SIGTERM).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			if !f.Changed("topic-prefix") && len(kafkaconf.SplitBrokers(o.kafka.brokers)) > 0 {
				o.topicPrefix = demo.FreshPrefix(time.Now())
			}
			o.groupSet = f.Changed("group")
			return runDemo(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.toys, "toys", o.toys, "number of toys the toy elves make (duplicates and bad records included)")
	f.IntVar(&o.boxes, "boxes", o.boxes, "number of boxes the box elves make")
	f.IntVar(&o.halls, "halls", 0, producers.HallsHelp)
	f.Int64Var(&o.seed, "seed", o.seed, "random seed: the same seed makes the same records")
	f.Float64Var(&o.rate, "rate", o.rate, "records per second per stream; 0 = as fast as possible")
	f.IntVar(&o.elves, "elves", o.elves, "concurrent elves per stream")
	f.DurationVar(&o.disorder, "disorder", o.disorder, "made_at jitter: up to this much earlier than the record's nominal time")
	f.Float64Var(&o.lateRate, "late-rate", o.lateRate, "probability that a record is made deliberately late (a late draw before its elf has written that size makes an ordinary record, so the late fraction is somewhat lower)")
	f.Float64Var(&o.dupRate, "dup-rate", o.dupRate, "fraction of records that repeat an earlier record")
	f.Float64Var(&o.badRate, "bad-rate", o.badRate, "fraction of bad records (every kind of dead letter)")
	o.kafka.inProcessDefault = true
	o.kafka.bind(f, "use this Kafka (host:port,...) instead of the in-process one")
	f.StringVar(&o.out, "out", "", "write inputs, results and a summary under this directory")
	f.StringVar(&o.topicPrefix, "topic-prefix", "", "name every topic PREFIX-toys, PREFIX-boxes, PREFIX-packed, ... and the groups PREFIX-packer-* (default with --brokers: demo-<UTC time, to the ms>, fresh topics; in process: none)")
	f.DurationVar(&o.timeout, "timeout", o.timeout, "give up when the run has not finished after this long")
	f.DurationVar(&o.packer.Window, "window", o.packer.Window, "window width W")
	f.DurationVar(&o.packer.Lateness, "lateness", o.packer.Lateness, "allowed lateness L")
	f.Int32Var(&o.packer.Partitions, "partitions", o.packer.Partitions, "partitions of every topic")
	f.StringVar(&o.packer.Group, "group", o.packer.Group, "prefix of the packer's goka groups")
	f.BoolVar(&o.serviceMap, "servicemap", o.serviceMap, "trace every component in process and print the service map it draws (OTEL_* may send the spans elsewhere too)")
	return cmd
}

// pipelineConfig is the demo's pipeline on kc (no brokers: an in-process
// Kafka): the packer of the flags, its topics and group named after the
// prefix (harness.Named) unless --group names the group, and both streams'
// elves.
func (o demoOptions) pipelineConfig(kc kafkaconf.Config) harness.Config {
	c := harness.DefaultConfig()
	if o.topicPrefix != "" {
		c = harness.Named(o.topicPrefix)
	}
	named := c.Packer
	c.Kafka, c.Packer = kc, o.packer
	c.Packer.Topics = named.Topics
	if !o.groupSet {
		c.Packer.Group = named.Group
	}
	c.Toys.Count, c.Boxes.Count, c.Halls = o.toys, o.boxes, o.halls
	for _, e := range []*producers.Config{&c.Toys, &c.Boxes} {
		e.Rate, e.Elves, e.Seed = o.rate, o.elves, o.seed
		e.Disorder, e.LateRate, e.DupRate, e.BadRate = o.disorder, o.lateRate, o.dupRate, o.badRate
	}
	return c
}

func runDemo(ctx context.Context, o demoOptions, stdout, stderr io.Writer) error {
	if o.timeout <= 0 {
		return usageErr("--timeout must be positive, got %v", o.timeout)
	}
	if err := harness.ValidPrefix(o.topicPrefix); err != nil {
		return usageErr("--topic-prefix %q: %w", o.topicPrefix, err)
	}
	if o.out != "" {
		if err := report.CheckDir(o.out); err != nil {
			return usageErr("--out %s: %w", o.out, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	kc, err := o.kafka.config("northpole-demo")
	if err != nil {
		return err
	}
	dt, err := demo.NewTracing(ctx, o.serviceMap, slog.Default(), startTelemetry)
	if err != nil {
		return err
	}
	defer dt.Close()
	line := statusline.New(stderr, 500*time.Millisecond)
	pc := o.pipelineConfig(kc)
	pc.Tracing, pc.Metrics, pc.ProgressEvery = dt.Provider, dt.Meters, line.Every()
	pc.Progress = func(pr harness.Progress) {
		if pr.Phase == harness.PhaseDone {
			line.Clear()
			return
		}
		line.Show(pr.StatusLine(o.toys, o.boxes))
	}
	d, err := demo.New(pc, slog.Default())
	if err != nil {
		var se *demo.StartError
		if errors.As(err, &se) {
			return err
		}
		return usageErr("%w", err)
	}
	defer d.Close()
	fmt.Fprintf(stderr, "northpole demo on %s: %s, %s, %s, W=%v L=%v, seed %d\n",
		d.Where(), english.Count(o.toys, "toy"), english.Count(o.boxes, "box"), english.Count(o.packer.Partitions, "partition"), o.packer.Window, o.packer.Lateness, o.seed)
	if o.topicPrefix != "" {
		fmt.Fprintf(stderr, "topics %s-{toys,boxes,packed,unpacked,spare,late,dead}, groups %s-{clock,slots,sleigh}\n", o.topicPrefix, pc.Packer.Group)
	}
	r, err := d.Run(ctx)
	if err != nil {
		return err
	}
	r.Summary.WriteText(stdout, d.Where())
	m, c, sleighErr := d.FinishSleigh(ctx, len(r.Run.Goka.Packed))
	if sleighErr == nil {
		fmt.Fprintf(stdout, "sleigh manifest: %s in %s and %s, one per packed key (%s skipped, %s)\n", english.Count(m.Pairs, "pair"), english.Count(len(m.Sizes), "size class"),
			english.Count(m.Lines(), "line"), english.Count(c.Repeats, "re-sent record"), english.Count(c.Conflicts, "conflict"))
	}
	traces := dt.Finish(ctx)
	if traces.Metrics != nil {
		r.CheckMetrics(*traces.Metrics).WriteText(stdout)
	}
	if err := traces.WriteText(stdout); err != nil {
		return err
	}
	if traces.Map != nil {
		r.CheckMap(*traces.Map).WriteText(stdout)
	}
	if o.out != "" {
		if err := demo.WriteOut(stdout, o.out, r, d.Where(), traces); err != nil {
			return err
		}
	}
	if sleighErr != nil {
		return sleighErr
	}
	if len(r.Reference) > 0 {
		r.WriteDiffs(stdout, maxDiffRows, "--out DIR writes every row")
		return &exitError{code: exitDiffer, err: errors.New("the Goka results differ from the reference implementation")}
	}
	if !r.SQLComparison.Equal {
		fmt.Fprintln(stdout)
		compare.WriteText(stdout, r.SQLComparison, 10, moreRowsHint)
		return &exitError{code: exitDiffer, err: errors.New("the Goka results differ from the embedded SQL engine's")}
	}
	if r.Summary.MapCheck == "different" {
		return &exitError{code: exitMapDiffers, err: errors.New("the service map's edges differ from the records read back (" + demo.MapDiffers + ")")}
	}
	return nil
}

// maxDiffRows bounds the differing rows printed per set and side.
const maxDiffRows = 10

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/northpole-workshop/northpole/internal/compare"
	"github.com/northpole-workshop/northpole/internal/contract"
	"github.com/northpole-workshop/northpole/internal/kfakebroker"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
	"github.com/northpole-workshop/northpole/internal/topicread"
	"github.com/northpole-workshop/northpole/processors/packer"
	"github.com/northpole-workshop/northpole/producers"
)

type demoOptions struct {
	toys, boxes int
	seed        int64
	rate        float64
	elves       int
	disorder    time.Duration
	lateRate    float64
	dupRate     float64
	badRate     float64
	kafka       kafkaOptions
	out         string
	timeout     time.Duration
	packer      packer.Config
	trace       demoTraceOptions
}

func newDemoCmd() *cobra.Command {
	o := demoOptions{toys: 2000, boxes: 2000, seed: 1, elves: 4, disorder: 2 * time.Second,
		lateRate: 0.02, dupRate: 0.02, badRate: 0.02, timeout: 5 * time.Minute, packer: packer.DefaultConfig()}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run elves and the Goka packer on an in-process Kafka and show what was packed",
		Long: `demo starts an in-process Kafka broker (franz-go's kfake, which speaks the real
Kafka wire protocol on loopback), creates the topics, runs the toy elves, the
box elves and the Goka packer, waits until every record is consumed, and prints
what was packed per size class. It then checks the Goka results against the
batch reference implementation of the contract, row for row.

With --brokers it uses an existing Kafka instead (topics are created if missing;
use a fresh --group and fresh topics, or earlier runs' records count too).

With --out DIR it writes:
  DIR/input/toys.jsonl, DIR/input/boxes.jsonl   every input record as read back
  DIR/goka/{packed,unpacked,spare,late,dead}.jsonl  the five result sets
  DIR/summary.json                              the counts
  DIR/servicemap.{mmd,svg}                      the service map (Mermaid, SVG)

The sleigh (northpole process sleigh) runs too, and must end up with every
packed pair in its manifest. Every component is traced under its own
service.name (toy-elves, box-elves, packer, sleigh) into an in-process service
map, printed at the end (--servicemap=false: no tracing unless OTEL_* asks);
with OTEL_EXPORTER_OTLP_ENDPOINT set the spans also go there (SigNoz, Jaeger).
The demo then says how many spans each got and how many were dropped (a span
waits for room in the export queue rather than being dropped, unless that
exporter is failing), and checks the map's edges against the records read back.

Exit status: 0 when the Goka results equal the reference, 3 when they differ,
1 on error, 2 on bad flags.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDemo(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.toys, "toys", o.toys, "number of toys the toy elves make (duplicates and bad records included)")
	f.IntVar(&o.boxes, "boxes", o.boxes, "number of boxes the box elves make")
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
	f.DurationVar(&o.timeout, "timeout", o.timeout, "give up when the run has not finished after this long")
	f.DurationVar(&o.packer.Window, "window", o.packer.Window, "window width W")
	f.DurationVar(&o.packer.Lateness, "lateness", o.packer.Lateness, "allowed lateness L")
	f.Int32Var(&o.packer.Partitions, "partitions", o.packer.Partitions, "partitions of every topic")
	f.StringVar(&o.packer.Group, "group", o.packer.Group, "prefix of the packer's goka groups")
	bindDemoTracing(f, &o.trace)
	return cmd
}

func (o demoOptions) elvesConfig(stream record.Stream, count int, final time.Time) producers.Config {
	c := producers.DefaultConfig(stream)
	c.Count, c.Rate, c.Elves, c.Seed = count, o.rate, o.elves, o.seed
	c.Disorder, c.LateRate, c.DupRate, c.BadRate = o.disorder, o.lateRate, o.dupRate, o.badRate
	c.Window, c.Lateness = o.packer.Window, o.packer.Lateness
	c.FinalHeartbeatAt = final
	return c
}

// demoSummary is DIR/summary.json.
type demoSummary struct {
	Brokers   string                      `json:"brokers"`
	Window    string                      `json:"window"`
	Lateness  string                      `json:"lateness"`
	Seed      int64                       `json:"seed"`
	Inputs    map[string]int              `json:"inputs"`
	Elves     map[string]map[string]int64 `json:"elves"`
	Results   results.Counts              `json:"results"`
	BySize    map[string]results.Counts   `json:"by_size"`
	DeadBy    map[string]int              `json:"dead_by_reason"`
	RawOutput packer.Raw                  `json:"raw_output"`
	Reference string                      `json:"reference_check"`
	SQLCheck  string                      `json:"sql_check"`
	Seconds   float64                     `json:"seconds"`
}

func runDemo(ctx context.Context, o demoOptions, stdout, stderr io.Writer) error {
	began := time.Now()
	for _, s := range []struct {
		name string
		v    int
	}{{"--toys", o.toys}, {"--boxes", o.boxes}} {
		if s.v < 1 {
			return usageErr("%s must be at least 1, got %d", s.name, s.v)
		}
	}
	if o.timeout <= 0 {
		return usageErr("--timeout must be positive, got %v", o.timeout)
	}
	params := o.packer.Params
	if err := params.Validate(); err != nil {
		return usageErr("%w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()

	where := "in-process Kafka (kfake)"
	kc, err := o.kafka.config("northpole-demo")
	if err != nil {
		return err
	}
	brokers := kc.Brokers
	if len(brokers) == 0 {
		b, err := kfakebroker.Start()
		if err != nil {
			return err
		}
		defer b.Close()
		brokers = b.Addrs()
	} else {
		where = "Kafka at " + strings.Join(brokers, ",")
	}
	kc.Brokers = brokers
	o.packer.Kafka = kc
	dt, err := startDemoTracing(ctx, o.trace)
	if err != nil {
		return err
	}
	defer dt.close()
	pk, err := packer.New(o.packer, slog.Default(), packer.WithTracerProvider(dt.provider(servicePacker)))
	if err != nil {
		return usageErr("%w", err)
	}
	// The elves' final heartbeats must close every window of both streams, so
	// both get the same horizon: past the later stream's last window.
	base := o.elvesConfig(record.Toys, max(o.toys, o.boxes), time.Time{})
	final := base.Start.Add(time.Duration(max(o.toys, o.boxes)+1)*base.Spacing + o.packer.Window + o.packer.Lateness)
	toyCfg := o.elvesConfig(record.Toys, o.toys, final)
	boxCfg := o.elvesConfig(record.Boxes, o.boxes, final)
	toyCfg.Tracer, boxCfg.Tracer = dt.provider(serviceToyElves), dt.provider(serviceBoxElves)
	for _, c := range []producers.Config{toyCfg, boxCfg} {
		if err := c.Validate(); err != nil {
			return usageErr("%w", err)
		}
	}
	fmt.Fprintf(stderr, "northpole demo on %s: %d toys, %d boxes, %d partitions, W=%v L=%v, seed %d\n",
		where, o.toys, o.boxes, o.packer.Partitions, o.packer.Window, o.packer.Lateness, o.seed)
	if err := pk.EnsureTopics(ctx); err != nil {
		return err
	}
	if err := dt.startSleigh(ctx, kc, o.packer.Topics.Packed, o.packer.Group, o.packer.Partitions); err != nil {
		return err
	}

	packCtx, stopPacker := context.WithCancel(ctx)
	defer stopPacker()
	packerDone := make(chan error, 1)
	go func() { packerDone <- pk.Run(packCtx) }()

	prog := &progress{w: stderr, tty: isTerminal(stderr), toysWant: o.toys, boxesWant: o.boxes}
	stopProgress := prog.start(ctx, pk)
	var toyStats, boxStats producers.Stats
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		toyStats, err = producers.Run(gctx, kc, toyCfg, prog.toys)
		return err
	})
	g.Go(func() (err error) {
		boxStats, err = producers.Run(gctx, kc, boxCfg, prog.boxes)
		return err
	})
	if err := g.Wait(); err != nil {
		stopProgress()
		return fmt.Errorf("elves: %w", err)
	}
	prog.phase("packing")
	if err := pk.WaitQuiet(ctx, 250*time.Millisecond, packerDone); err != nil {
		stopProgress()
		return err
	}
	stopProgress()
	stopPacker()
	if err := <-packerDone; err != nil {
		return err
	}

	toys, err := topicread.Inputs(ctx, kc, o.packer.Topics.Toys, record.Toys)
	if err != nil {
		return err
	}
	boxes, err := topicread.Inputs(ctx, kc, o.packer.Topics.Boxes, record.Boxes)
	if err != nil {
		return err
	}
	got, raw, err := packer.ReadResults(ctx, kc, o.packer.Topics)
	if err != nil {
		return err
	}
	want := contract.Compute(slices.Concat(toys, boxes), params, contract.ClosedOnly)
	diffs := results.Compare(got, want)
	// The contract's shared SQL on the embedded SQLite, compared with Goka
	// as `northpole compare` does without --sql.
	sqlSet, err := compare.EmbeddedSQL(ctx, slices.Concat(toys, boxes), params, slog.Default())
	if err != nil {
		return fmt.Errorf("embedded SQL: %w", err)
	}
	sqlCmp := compare.Build(got, sqlSet, slices.Concat(toys, boxes), params)

	sum := demoSummary{
		Brokers: strings.Join(brokers, ","), Window: o.packer.Window.String(), Lateness: o.packer.Lateness.String(), Seed: o.seed,
		Inputs:    map[string]int{"toys": len(toys), "boxes": len(boxes)},
		Elves:     map[string]map[string]int64{"toys": toyStats.Kinds, "boxes": boxStats.Kinds},
		Results:   got.Counts(),
		BySize:    got.CountsBySize(),
		DeadBy:    map[string]int{},
		RawOutput: raw,
		Reference: "equal",
		SQLCheck:  "equal",
		Seconds:   time.Since(began).Seconds(),
	}
	delete(sum.BySize, "")
	for _, d := range got.Dead {
		sum.DeadBy[d.Reason]++
	}
	if len(diffs) > 0 {
		sum.Reference = "different"
	}
	if !sqlCmp.Equal {
		sum.SQLCheck = "different"
	}
	printSummary(stdout, sum, where)
	if o.out != "" {
		if err := writeDemoFiles(o.out, toys, boxes, got, sum); err != nil {
			return err
		}
		if err := writeSQLFiles(o.out, sqlSet); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\nwrote %s/{input,goka,sql}/*.jsonl and %s/summary.json\n", o.out, o.out)
	}
	if err := dt.finish(ctx, stdout, demoCounts{toys: len(toys), boxes: len(boxes), packed: len(got.Packed)}, o.out); err != nil {
		return err
	}
	if len(diffs) > 0 {
		printDiffs(stdout, diffs)
		return &exitError{code: 3, err: errors.New("the Goka results differ from the reference implementation")}
	}
	if !sqlCmp.Equal {
		fmt.Fprintln(stdout)
		compare.WriteText(stdout, sqlCmp, 10, moreRowsHint)
		return &exitError{code: 3, err: errors.New("the Goka results differ from the embedded SQL engine's")}
	}
	return nil
}

func printSummary(w io.Writer, s demoSummary, where string) {
	fmt.Fprintf(w, "\nPacked on %s in %.1fs: %d toys and %d boxes read back from Kafka.\n\n",
		where, s.Seconds, s.Inputs["toys"], s.Inputs["boxes"])
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "size\tpacked\tunpacked\tspare\tlate\t")
	var total results.Counts
	for _, size := range record.Sizes {
		c := s.BySize[size]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t\n", size, c.Packed, c.Unpacked, c.Spare, c.Late)
		total.Packed += c.Packed
		total.Unpacked += c.Unpacked
		total.Spare += c.Spare
		total.Late += c.Late
	}
	fmt.Fprintf(tw, "all\t%d\t%d\t%d\t%d\t\n", total.Packed, total.Unpacked, total.Spare, total.Late)
	tw.Flush()
	var reasons []string
	for _, r := range slices.Sorted(maps.Keys(s.DeadBy)) {
		reasons = append(reasons, fmt.Sprintf("%s %d", r, s.DeadBy[r]))
	}
	fmt.Fprintf(w, "\ndead letters: %d", s.Results.Dead)
	if len(reasons) > 0 {
		fmt.Fprintf(w, " (%s)", strings.Join(reasons, ", "))
	}
	fmt.Fprintln(w)
	if s.RawOutput.Duplicates > 0 {
		fmt.Fprintf(w, "output records: %d, of which %d repeated an earlier key (redeliveries; consumers deduplicate by key)\n",
			s.RawOutput.Records, s.RawOutput.Duplicates)
	}
	if s.Reference == "equal" {
		fmt.Fprintln(w, "reference check: the Goka results equal the batch reference implementation, row for row, on all five sets")
	} else {
		fmt.Fprintln(w, "reference check: the Goka results DIFFER from the batch reference implementation")
	}
	if s.SQLCheck == "equal" {
		fmt.Fprintln(w, "SQL check: the contract's SQL on the embedded SQLite gives the same rows as Goka on all five sets")
	} else {
		fmt.Fprintln(w, "SQL check: the contract's SQL on the embedded SQLite DIFFERS from Goka (details below)")
	}
}

func printDiffs(w io.Writer, diffs []results.Diff) {
	for _, d := range diffs {
		fmt.Fprintf(w, "\n%s: %d rows only in Goka, %d only in the reference\n", d.Set, len(d.OnlyA), len(d.OnlyB))
		for i, r := range d.OnlyA {
			if i == 10 {
				fmt.Fprintf(w, "  ... %d more\n", len(d.OnlyA)-10)
				break
			}
			fmt.Fprintf(w, "  goka only: %s\n", r)
		}
		for i, r := range d.OnlyB {
			if i == 10 {
				fmt.Fprintf(w, "  ... %d more\n", len(d.OnlyB)-10)
				break
			}
			fmt.Fprintf(w, "  reference only: %s\n", r)
		}
	}
}

// inputLine is one line of DIR/input/*.jsonl. A value that is not UTF-8 cannot
// be a JSON string without loss, so it is also given in base64.
type inputLine struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	Offset      int64  `json:"offset"`
	Key         string `json:"key"`
	Value       string `json:"value"`
	ValueBase64 []byte `json:"value_base64,omitempty"`
}

func writeDemoFiles(dir string, toys, boxes []record.Input, got results.Set, sum demoSummary) error {
	for _, sub := range []string{"input", "goka"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return fmt.Errorf("create output directory: %w", err)
		}
	}
	toLines := func(in []record.Input) []inputLine {
		out := make([]inputLine, len(in))
		for i, r := range in {
			out[i] = inputLine{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: string(r.Key), Value: string(r.Value)}
			if !utf8.Valid(r.Value) {
				out[i].ValueBase64 = r.Value
			}
		}
		return out
	}
	files := []struct {
		name string
		rows any
	}{
		{"input/toys.jsonl", toLines(toys)}, {"input/boxes.jsonl", toLines(boxes)},
		{"goka/packed.jsonl", got.Packed}, {"goka/unpacked.jsonl", got.Unpacked}, {"goka/spare.jsonl", got.Spare},
		{"goka/late.jsonl", got.Late}, {"goka/dead.jsonl", got.Dead},
	}
	for _, f := range files {
		if err := writeJSONL(filepath.Join(dir, f.name), f.rows); err != nil {
			return err
		}
	}
	b, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "summary.json"), append(b, '\n'), 0o644)
}

func writeJSONL(path string, rows any) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	enc := json.NewEncoder(f)
	var list []any
	b, _ := json.Marshal(rows)
	_ = json.Unmarshal(b, &list)
	for _, r := range list {
		if err := enc.Encode(r); err != nil {
			f.Close()
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// progress shows one status line while the demo runs: rewritten in place on a
// terminal, a line every few seconds otherwise (CI logs).
type progress struct {
	w                   io.Writer
	tty                 bool
	toysWant, boxesWant int
	mu                  sync.Mutex
	toysSent, boxesSent int64
	stage               string
}

func (p *progress) toys(s producers.Stats)  { p.mu.Lock(); p.toysSent = s.Records; p.mu.Unlock() }
func (p *progress) boxes(s producers.Stats) { p.mu.Lock(); p.boxesSent = s.Records; p.mu.Unlock() }
func (p *progress) phase(s string)          { p.mu.Lock(); p.stage = s; p.mu.Unlock() }

func (p *progress) start(ctx context.Context, pk *packer.Packer) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	p.stage = "producing"
	go func() {
		defer close(done)
		every := 500 * time.Millisecond
		if !p.tty {
			every = 3 * time.Second
		}
		t := time.NewTicker(every)
		defer t.Stop()
		began := time.Now()
		for {
			select {
			case <-ctx.Done():
				if p.tty {
					fmt.Fprint(p.w, "\r\033[K")
				}
				return
			case <-t.C:
			}
			lag, err := pk.Lag(ctx)
			backlog := fmt.Sprint(lag)
			if err != nil {
				backlog = "?"
			}
			p.mu.Lock()
			line := fmt.Sprintf("[%5.1fs] %s: toys %d/%d, boxes %d/%d sent; packer backlog %s records",
				time.Since(began).Seconds(), p.stage, p.toysSent, p.toysWant, p.boxesSent, p.boxesWant, backlog)
			p.mu.Unlock()
			if p.tty {
				fmt.Fprint(p.w, "\r\033[K"+line)
			} else {
				fmt.Fprintln(p.w, line)
			}
		}
	}()
	return func() { cancel(); <-done }
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/northpole-workshop/northpole/app/compare"
	"github.com/northpole-workshop/northpole/app/report"
	"github.com/northpole-workshop/northpole/otel/telemetry"
	"github.com/northpole-workshop/northpole/processors/packer"
	"github.com/northpole-workshop/northpole/risingwave"
)

// compareOptions are the flags of northpole compare that are not a
// compare.Config's own.
type compareOptions struct {
	kafka           kafkaOptions
	json            bool
	rows            int
	printRisingWave bool
	timeout         time.Duration
	out             string
}

func newCompareCmd() *cobra.Command {
	def := packer.DefaultConfig()
	cfg := compare.Config{Topics: def.Topics, Params: def.Params, Schema: "public"}
	o := compareOptions{rows: 10, timeout: 5 * time.Minute}
	cmd := &cobra.Command{
		Use:   "compare",
		Short: "Compare Goka's five result topics with a SQL engine's five result relations",
		Long: `compare reads what the Goka packer wrote (the topics packed, unpacked, spare,
late and dead-letters, deduplicated by key) and the five result relations of a
SQL engine that ran the contract's shared SQL text (internal/contractsql/sql),
and prints, per size class, the rows of each set on each side, the equal rows,
and the rows only one side has. Rows of packed, unpacked and spare are told
apart by size, window and ids (an id is unique within its window only: the
same toy id in two windows is two toys), late and dead rows by the position of
their record (two late copies of one id are two rows). Each differing row comes
with the input records that explain it (those carrying its ids in its size and
window, or the one at its position): where they are (partition, offset), their
key and made_at, and what Goka, the SQL engine and the batch reference made of
each.

The SQL side is one of:
  (no --sql)             the embedded SQLite: the input topics are read and the
                         shared SQL runs in process, no server needed
  --sql postgres://...   the relations np_packed, np_unpacked, np_spare, np_late
                         and np_dead in --schema of a PostgreSQL-protocol server:
                         RisingWave's materialized views (risingwave/risingwave.sql,
                         e.g. --sql postgres://root@localhost:4566/dev), or a
                         PostgreSQL loaded earlier
  --sql ... --load       PostgreSQL: load the input topics into tables in
                         --schema (dropping northpole's np_* tables there first),
                         run the shared SQL, then compare

--window and --lateness must be those Goka ran with; the embedded and loaded
engines use them, and the reference uses them to explain differences. (A
RisingWave script has them written in; see --risingwave-sql.)

With --out DIR it also writes DIR/report.html, one page to open in a
browser: the counts per size class, the windows along event time, the verdict
(Goka vs the SQL engine vs the batch reference) and the differing rows with
their input records. A path that is a file, or a directory that cannot be
written, is refused before anything is read.

--risingwave-sql prints the RisingWave script for --window, --lateness, the
topics and --brokers (RisingWave's view of Kafka) and exits.

Exit status: 0 when both sides have the same rows, 3 when they differ, 1 on
error, 2 on bad flags, 130 when interrupted (Ctrl-C; 143: SIGTERM).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCompare(cmd.Context(), cfg, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	o.kafka.bindReader(f, "Kafka bootstrap brokers, host:port[,host:port] (default $NORTHPOLE_BROKERS)")
	t := &cfg.Topics
	f.StringVar(&t.Toys, "toys-topic", t.Toys, "input topic of toys")
	f.StringVar(&t.Boxes, "boxes-topic", t.Boxes, "input topic of boxes")
	f.StringVar(&t.Packed, "packed-topic", t.Packed, "Goka's packed topic")
	f.StringVar(&t.Unpacked, "unpacked-topic", t.Unpacked, "Goka's unpacked topic")
	f.StringVar(&t.Spare, "spare-topic", t.Spare, "Goka's spare topic")
	f.StringVar(&t.Late, "late-topic", t.Late, "Goka's late topic")
	f.StringVar(&t.Dead, "dead-topic", t.Dead, "Goka's dead-letter topic")
	f.DurationVar(&cfg.Window, "window", cfg.Window, "window width W Goka ran with")
	f.DurationVar(&cfg.Lateness, "lateness", cfg.Lateness, "allowed lateness L Goka ran with")
	f.StringVar(&cfg.DSN, "sql", "", "DSN of a PostgreSQL-protocol server holding the result relations (RisingWave or PostgreSQL); default: the embedded SQLite")
	f.BoolVar(&cfg.Load, "load", false, "with --sql: load the input topics into PostgreSQL and run the shared SQL there first")
	f.StringVar(&cfg.Schema, "schema", cfg.Schema, "schema of the result relations (and of the tables --load creates)")
	f.BoolVar(&o.json, "json", false, "print the comparison as JSON")
	f.IntVar(&o.rows, "rows", o.rows, "differing rows shown per set and side in the text output (all are in --json)")
	f.BoolVar(&o.printRisingWave, "risingwave-sql", false, "print the RisingWave script (sources and materialized views) and exit")
	f.DurationVar(&o.timeout, "timeout", o.timeout, "give up after this long")
	f.StringVar(&o.out, "out", "", "also write the comparison as a page to open in a browser, DIR/report.html")
	return cmd
}

// runCompare runs the comparison cfg describes once the flags have given it
// all but its Kafka and tracer.
func runCompare(ctx context.Context, cfg compare.Config, o compareOptions, stdout, stderr io.Writer) error {
	if o.timeout <= 0 {
		return usageErr("--timeout must be positive, got %v", o.timeout)
	}
	if o.rows < 0 {
		return usageErr("--rows must be >= 0, got %d", o.rows)
	}
	if o.printRisingWave {
		so := risingwave.ScriptOptions{Brokers: o.kafka.brokers, ToysTopic: cfg.Topics.Toys, BoxesTopic: cfg.Topics.Boxes, Params: cfg.Params}
		if so.Brokers == "" {
			so.Brokers = risingwave.DefaultScriptOptions().Brokers
		}
		s, err := risingwave.Script(so)
		if err != nil {
			return usageErr("%w", err)
		}
		_, err = io.WriteString(stdout, s)
		return err
	}
	if o.out != "" {
		if err := report.CheckDir(o.out); err != nil {
			return usageErr("--out %s: %w", o.out, err)
		}
	}
	var err error
	if cfg.Kafka, err = o.kafka.config("northpole-compare"); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return usageErr("%w", err)
	}
	tel, stopTelemetry, err := startTelemetry(ctx, telemetry.Options{})
	if err != nil {
		return err
	}
	defer stopTelemetry()
	cfg.Tracer = tel.TracerProvider(telemetry.ServiceName(serviceCompare))
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	res, err := compare.Run(ctx, cfg, slog.Default())
	if err != nil {
		return err
	}
	c := res.Comparison
	if o.json {
		if err := writeJSON(stdout, c); err != nil {
			return err
		}
	} else {
		compare.WriteText(stdout, c, o.rows, moreRowsHint)
	}
	if o.out != "" {
		if err := report.WriteFile(o.out, report.FromCompare(res)); err != nil {
			return err
		}
		// Not on stdout, which --json keeps for the JSON.
		fmt.Fprintf(stderr, "wrote %s/%s: open it in a browser\n", o.out, report.FileName)
	}
	if err := c.Err(); err != nil {
		return &exitError{code: exitDiffer, err: err}
	}
	return nil
}

// moreRowsHint says how to see the differing rows the text leaves out.
const moreRowsHint = "--rows, or --json for all"

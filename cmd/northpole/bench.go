package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/northpole-workshop/northpole/internal/app/bench"
	"github.com/northpole-workshop/northpole/producers"
)

// benchOptions are the flags of northpole bench that are not a
// bench.Config's own.
type benchOptions struct {
	partitions, variants string
	json                 bool
}

func newBenchCmd() *cobra.Command {
	cfg := bench.DefaultConfig()
	var parts []string
	for _, p := range cfg.Partitions {
		parts = append(parts, strconv.Itoa(int(p)))
	}
	o := benchOptions{partitions: strings.Join(parts, ","), variants: strings.Join(cfg.Variants, ",")}
	var ko kafkaOptions
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the packer: throughput, CPU per input event, memory, pack latency",
		Long: `bench pre-loads --records toys and boxes (half each, clean: no late, duplicate
or bad records) into Kafka, then starts the packer as its own OS process
(northpole process packer) from the start of the topics and measures until its
lag is zero: input events/s (toys, boxes and heartbeats), the packer process's
user+system CPU per input event (rusage) and its peak RSS (VmHWM), the broker's
CPU per input event over the packer process's life, the Kafka records written
and read per input event by kind of topic, and output records/s. The live
variant writes at a fixed --live-rate instead and reports pack latency (packed
record's Kafka timestamp minus the later of its toy's and box's) at
p50/p99/p999.

Variants (--variants, comma-separated; the first is the baseline of the ratios):
  base        the default partitions (first of --partitions), tracing off, memory
  trace100    OTEL on in the packer, every trace sampled, OTLP/gRPC to a receiver
              in the bench process (which counts spans and throws them away; it
              says whether it got one per input record and one per output record)
  trace10     the same, 10 % sampled (parentbased_traceidratio 0.1)
  trace0      the same, nothing sampled (parentbased_always_off): the cost of
              a record nobody samples, alone
              (OTEL_BSP_* in the bench's environment reach the packer: the
              batch span processor drops spans when its queue, 2048 by
              default, is full; the receiver's count shows it)
  parts       one run per other --partitions value
  disk        --storage-dir (LevelDB) instead of memory
  real        the real broker of --brokers (skipped without --brokers)
  live        fixed input rate, latency percentiles
  hop         not the packer: one goka group that consumes toys and boxes and
              writes each record into its group table (one consume and one
              write per event, no packing logic), the floor of one stage

Columns:
  variant, parts    the variant and its partition count
  events            input events: records in toys and boxes (heartbeats too)
  events/s          input events over the wall time from the packer's start
                    to zero lag (start-up included)
  packer µs/ev      the packer process's user+system CPU (rusage, its whole
                    life; with --restart less what it used in the tail after
                    zero lag, read from /proc) per input event
  broker µs/ev      the broker's user+system CPU over the packer process's
                    life, less the bench's lag polls (calibrated after the
                    packer exits: 10 polls), per input event. kfake: the
                    bench process's own CPU (getrusage); it does nothing else
                    meanwhile, and its garbage collection counts as the
                    broker's. Not measured with tracing (the span receiver
                    runs in the bench process) nor live (the elves do). Real
                    broker: /proc/<pid>/stat of --broker-pid, or of the
                    processes of this host listening on the --brokers
                    addresses (summed); a remote broker is not measured.
                    On a shared broker, other clients' work counts too.
  net µs/ev         broker µs/ev less the broker's idle rate (its CPU per
                    second over 2 s before the packer starts and 2 s after
                    it exits, the mean) times the packer's life: on a shared
                    broker, an estimate of what the packer alone cost it
  sum µs/ev         packer + net
  CPU ratio, rate ratio   packer CPU per event and events/s over the first
                    variant's
  max RSS MiB       the packer's peak resident set (VmHWM) before it is
                    stopped
  RSS B/rec         that peak in bytes per input event
  outputs/s         records in the five result topics per second
  inputs, loops, events, tables, outputs (w/r)
                    Kafka records written / read per input event by kind of
                    topic, from end offsets before and after (written), and
                    written times the number of the worker's goka groups that
                    consume the topic in normal running (read): inputs are
                    the elves' topics, loops the groups' loopbacks, events a
                    group's output another consumes, tables the group
                    tables (a table no group reads as a stream or joins is
                    read only on recovery: 0 read), outputs the result topics
                    (their consumers are not counted)
  p50, p99, p999 ms pack latency, live variant only
After the table, a line per variant says how the broker's CPU was measured.

State (--restart, on by default; not the live and hop variants): once the
packer's lag is zero it runs on for two of its cleaning intervals and a
second (2 × 2 s + 1 s), so that its cleaner deletes the records of its clock
table that no restart needs; then it is stopped, the bench reads its internal
topics (<group>-clock-loop, <group>-clock-table, <group>-slots-table) and
starts the same packer again. That tail is left out of events/s, packer
µs/ev and the broker's figures (they stop at zero lag, plus the packer's
exit, as without --restart); max RSS MiB is the peak over the whole life,
tail included. A second table, per variant:
  written           records ever written to the internal topics (their end
                    offsets, summed over partitions)
  kept              records they still hold (end less start offsets): what
                    a restart reads
  kept %            kept over written
  KiB               the internal topics' log size on the brokers
                    (DescribeLogDirs, every replica), "-" when the broker
                    does not say (a note says why). A real Kafka frees a
                    deleted record's bytes only with its whole segment (32
                    MiB for the tables) and after its retention check, so
                    there bytes fall later than kept records; kfake frees
                    them at once
  restart s         wall time from starting the packer again (same group,
                    topics and storage: the disk variant keeps its LevelDB)
                    to its "packer ready" line: both groups have recovered
                    their tables and consume
  restart RSS MiB   the restarted packer's peak RSS (VmHWM) at that moment
--restart=false stops the packer at zero lag and measures none of this
(about 5 s and a restart less per variant).

Without --brokers the bench uses an in-process kfake broker (in this process,
so its CPU is not the packer's). Quick run: --records 100000.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.config(cfg, ko)
			if err != nil {
				return err
			}
			b, err := bench.New(c, slog.Default())
			if err != nil {
				return usageErr("%w", err)
			}
			out, err := b.Run(cmd.Context())
			if err != nil {
				return err
			}
			if o.json {
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]any{"records": c.Records, "window": c.Window.String(), "lateness": c.Lateness.String(), "results": out})
			}
			printBenchTable(os.Stdout, out)
			printBrokerNotes(os.Stdout, out)
			printStateTable(os.Stdout, out)
			return nil
		},
	}
	ko.inProcessDefault = true
	ko.bind(cmd.Flags(), "a real Kafka for the \"real\" variant, host:port[,host:port] (default: none; all other variants use an in-process kfake)")
	fs := cmd.Flags()
	fs.IntVar(&cfg.Records, "records", cfg.Records, "input records per run (toys + boxes, half each)")
	fs.StringVar(&o.partitions, "partitions", o.partitions, "partition counts: the first is the baseline's, the others the \"parts\" variant's")
	fs.StringVar(&o.variants, "variants", o.variants, "variants to run, in order")
	fs.Float64Var(&cfg.LiveRate, "live-rate", cfg.LiveRate, "live variant: input records per second (toys + boxes)")
	fs.DurationVar(&cfg.LiveDuration, "live-duration", cfg.LiveDuration, "live variant: how long the elves write")
	fs.StringVar(&cfg.StorageDir, "storage-dir", "", "directory for the disk variant's LevelDB (default: a temporary one, removed after)")
	fs.BoolVar(&o.json, "json", false, "print the results as JSON on stdout instead of a table")
	fs.IntVar(&cfg.Elves, "elves", cfg.Elves, "elves (goroutines) per stream when pre-loading")
	fs.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write each variant's CPU profile to this file name with the variant before its extension (p.pprof: p-base.pprof, p-trace10.pprof; a variant run again: p-base-2.pprof)")
	fs.DurationVar(&cfg.Window, "window", cfg.Window, "window width W of the packer and the elves")
	fs.DurationVar(&cfg.Lateness, "lateness", cfg.Lateness, "allowed lateness L of the packer and the elves")
	fs.IntSliceVar(&cfg.BrokerPIDs, "broker-pid", nil, "process ids of the real broker whose CPU the \"real\" variant measures, summed (default: the processes of this host listening on the --brokers addresses)")
	fs.DurationVar(&cfg.Skew, "skew", 0, "put the boxes' event time this far ahead of the toys' (negative: behind), so windows stay open while the toys catch up")
	fs.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "give up on one variant after this long")
	fs.BoolVar(&cfg.Restart, "restart", cfg.Restart, "after zero lag let the packer's cleaner run, then measure what its internal topics keep and time a restart (not live, not hop; see State)")
	return cmd
}

// config completes the bench's configuration from the flags, refusing values
// that make no sense as usage errors.
func (o benchOptions) config(c bench.Config, ko kafkaOptions) (bench.Config, error) {
	c.Partitions, c.Variants = nil, nil
	for _, p := range strings.Split(o.partitions, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 {
			return c, usageErr("--partitions %q: want a list of counts such as 1,4,8", o.partitions)
		}
		c.Partitions = append(c.Partitions, int32(n))
	}
	for _, v := range strings.Split(o.variants, ",") {
		c.Variants = append(c.Variants, strings.TrimSpace(v))
	}
	switch {
	case c.Records < 2:
		return c, usageErr("--records must be at least 2")
	case c.Timeout <= 0:
		return c, usageErr("--timeout must be positive, got %v", c.Timeout)
	case c.LiveDuration <= 0:
		return c, usageErr("--live-duration must be positive, got %v", c.LiveDuration)
	case !(c.LiveRate > 0) || math.IsInf(c.LiveRate, 0):
		return c, usageErr("--live-rate must be a positive number of records per second, got %v", c.LiveRate)
	case c.Elves < 1 || c.Elves > producers.MaxElves:
		return c, usageErr("--elves must be between 1 and %d, got %d", producers.MaxElves, c.Elves)
	case slices.ContainsFunc(c.BrokerPIDs, func(p int) bool { return p < 1 }):
		return c, usageErr("--broker-pid: process ids must be positive, got %v", c.BrokerPIDs)
	}
	if err := c.Params.Validate(); err != nil {
		return c, usageErr("%w", err)
	}
	real, err := ko.config("northpole-bench")
	if err != nil {
		return c, err
	}
	if len(real.Brokers) > 0 {
		if err := real.Validate(); err != nil {
			return c, usageErr("%w", err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return c, err
	}
	c.Real, c.Executable, c.Args, c.Progress = real, exe, benchWorkerArgs, os.Stderr
	return c, nil
}

// benchWorkerArgs is the command line of a bench worker: northpole process
// packer, or the hidden bench-hop. Each reads its configuration whole from
// $NORTHPOLE_BENCH_WORKER (bench.WorkerEnv).
func benchWorkerArgs(w bench.Worker) []string {
	args := []string{"process", "packer"}
	if w.Hop {
		args = []string{"bench-hop"}
	}
	if w.CPUProfile != "" {
		args = append(args, "--cpuprofile", w.CPUProfile)
	}
	return args
}

func printBenchTable(w io.Writer, rs []bench.Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "variant\tparts\tevents\tevents/s\tpacker µs/ev\tbroker µs/ev\tnet µs/ev\tsum µs/ev\tCPU ratio\trate ratio\tmax RSS MiB\tRSS B/rec\toutputs/s\t"
	for _, k := range bench.Kinds {
		head += k + " w/r\t"
	}
	fmt.Fprintln(tw, head+"p50 ms\tp99 ms\tp999 ms\t")
	for _, r := range rs {
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\t%d\tfailed%s\n", r.Name, r.Partitions, strings.Repeat("\t", 19))
			continue
		}
		ratio := func(x float64) string {
			if x == 0 {
				return "-"
			}
			return fmt.Sprintf("%.2f", x)
		}
		lat := func(x float64) string {
			if !r.Live {
				return "-"
			}
			return fmt.Sprintf("%.1f", x)
		}
		broker, net, sum := "-", "-", "-"
		if r.BrokerSeconds != 0 {
			broker, net, sum = fmt.Sprintf("%.1f", r.BrokerCPUPerEventUS), fmt.Sprintf("%.1f", r.BrokerNetCPUPerEventUS), fmt.Sprintf("%.1f", r.TotalCPUPerEventUS)
		}
		kinds := ""
		for _, k := range r.Records {
			kinds += fmt.Sprintf("%.2f/%.2f\t", k.WrittenPerEvent, k.ReadPerEvent)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%.1f\t%s\t%s\t%s\t%s\t%s\t%.0f\t%.0f\t%.0f\t%s%s\t%s\t%s\t\n", r.Name, r.Partitions, r.InputEvents, r.EventsPerSec,
			r.CPUPerEventUS, broker, net, sum, ratio(r.CPURatio), ratio(r.RateRatio), r.MaxRSSMiB, r.RSSBytesPerRecord, r.OutputsPerSec, kinds,
			lat(r.LatencyP50MS), lat(r.LatencyP99MS), lat(r.LatencyP999MS))
	}
	tw.Flush()
}

// printBrokerNotes says, per variant, how its broker CPU was measured, or
// why it failed.
func printBrokerNotes(w io.Writer, rs []bench.Result) {
	for _, r := range rs {
		if r.Error != "" {
			fmt.Fprintf(w, "%s failed: %s\n", r.Name, r.Error)
			continue
		}
		how := r.BrokerCPU
		if strings.HasPrefix(how, bench.NotLocal) {
			how = bench.NotLocal + "; use --broker-pid)"
		}
		fmt.Fprintf(w, "broker CPU of %s: %s\n", r.Name, how)
	}
}

// printStateTable prints, for the variants whose state was measured
// (--restart), what the packer's internal topics kept and how long a
// restart took, then a note per variant whose bytes were not measured.
func printStateTable(w io.Writer, rs []bench.Result) {
	var measured []bench.Result
	for _, r := range rs {
		if r.Error == "" && r.RestartReadySeconds > 0 {
			measured = append(measured, r)
		}
	}
	if len(measured) == 0 {
		return
	}
	fmt.Fprintln(w, "\nstate after the run: the packer's internal topics, and a restart")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "variant\tparts\twritten\tkept\tkept %\tKiB\trestart s\trestart RSS MiB\t")
	for _, r := range measured {
		kept, size := "-", "-"
		if r.InternalRecordsWritten > 0 {
			kept = fmt.Sprintf("%.1f", 100*float64(r.InternalRecordsKept)/float64(r.InternalRecordsWritten))
		}
		if r.InternalBytes >= 0 {
			size = fmt.Sprintf("%.0f", float64(r.InternalBytes)/1024)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%.2f\t%.0f\t\n", r.Name, r.Partitions, r.InternalRecordsWritten, r.InternalRecordsKept,
			kept, size, r.RestartReadySeconds, r.RestartMaxRSSMiB)
	}
	tw.Flush()
	for _, r := range measured {
		if r.InternalBytes < 0 {
			fmt.Fprintf(w, "internal bytes of %s: not measured (%s)\n", r.Name, r.InternalBytesError)
		}
	}
}

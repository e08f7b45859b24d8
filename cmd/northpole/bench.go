package main

import (
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/northpole-workshop/northpole/app/bench"
)

// benchOptions are the flags of northpole bench that are not a
// bench.Config's own.
type benchOptions struct {
	partitions, variants, instances, halls string
	json                                   bool
}

func newBenchCmd() *cobra.Command {
	cfg := bench.DefaultConfig()
	o := benchOptions{partitions: bench.FormatPartitions(cfg.Partitions), variants: strings.Join(cfg.Variants, ","), instances: bench.FormatInstances(cfg.Instances), halls: bench.FormatInstances(cfg.Halls)}
	var ko kafkaOptions
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the packer: throughput, CPU per input event, memory, pack latency",
		Long:  bench.Help,
		Args:  cobra.NoArgs,
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
				doc := map[string]any{"records": c.Records, "window": c.Window.String(), "lateness": c.Lateness.String(), "results": out}
				if s := bench.Summarize(out); s != nil {
					doc["rounds"] = s
				}
				return writeJSON(os.Stdout, doc)
			}
			bench.WriteText(os.Stdout, out)
			return nil
		},
	}
	ko.inProcessDefault = true
	ko.bind(cmd.Flags(), "a real Kafka for the \"real\" variant, host:port[,host:port] (default: none; all other variants use an in-process kfake)")
	fs := cmd.Flags()
	fs.IntVar(&cfg.Records, "records", cfg.Records, "input records per run (toys + boxes, half each)")
	fs.StringVar(&o.partitions, "partitions", o.partitions, "partition counts: the first is the baseline's, the others the \"parts\" variant's")
	fs.StringVar(&o.variants, "variants", o.variants, "variants to run, in order")
	fs.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "run the variants this many times, each round's ratios to its own baseline, and sum the rounds up: median and range by variant")
	fs.Float64Var(&cfg.LiveRate, "live-rate", cfg.LiveRate, "live variant: input records per second (toys + boxes)")
	fs.DurationVar(&cfg.LiveDuration, "live-duration", cfg.LiveDuration, "live variant: how long the elves write")
	fs.StringVar(&cfg.StorageDir, "storage-dir", "", "directory for the disk variant's LevelDB (default: a temporary one, removed after)")
	fs.BoolVar(&o.json, "json", false, "print the results as JSON on stdout instead of a table")
	fs.IntVar(&cfg.Elves, "elves", cfg.Elves, "elves (goroutines) per stream when pre-loading")
	fs.StringVar(&o.halls, "halls", o.halls, "spread the elves over this many halls: records keyed by 4 × halls packing lines (M/hall-7) instead of the four sizes, so that more than four partitions carry work (0: keys are sizes); the first count in every variant but lines, which runs each (16,10000)")
	fs.StringVar(&o.instances, "instances", o.instances, "scale variant: packer counts, one run each (separate processes, one consumer group)")
	fs.BoolVar(&cfg.JoinFirst, "join-first", false, "scale variant: start the packers and wait until each holds partitions before the elves write (not a backlog then, and the broker's CPU includes taking the records in; kfake's is not measured): for kfake, which does not delay a group's first join, on small runs")
	fs.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write each variant's CPU profile to this file name with the variant before its extension (p.pprof: p-base.pprof, p-trace10.pprof; a variant run again: p-base-2.pprof), and its allocations beside it (allocs-p-base.pprof)")
	fs.DurationVar(&cfg.Window, "window", cfg.Window, "window width W of the packer and the elves")
	fs.DurationVar(&cfg.Lateness, "lateness", cfg.Lateness, "allowed lateness L of the packer and the elves")
	fs.IntSliceVar(&cfg.BrokerPIDs, "broker-pid", nil, "process ids of the real broker whose CPU the \"real\" variant measures, summed (default: the processes of this host listening on the --brokers addresses)")
	fs.DurationVar(&cfg.Skew, "skew", 0, "put the boxes' event time this far ahead of the toys' (negative: behind), so windows stay open while the toys catch up")
	fs.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "give up on one variant after this long")
	fs.BoolVar(&cfg.Restart, "restart", cfg.Restart, "after zero lag let the packer's cleaner run, then measure what its internal topics keep and time a restart (not live, not hop; see State)")
	fs.BoolVar(&cfg.KeepTopics, "keep-topics", false, "keep each run's topics and consumer groups (bench-<ns>-*) on the broker to look at afterwards (default: deleted when the run's variant is over)")
	fs.Var(mib(&cfg.GCHeadroom), "gc-headroom-mib", "the packer's --gc-headroom-mib in every run")
	fs.BoolVar(&cfg.Verify, "verify", false, "once the packer has stopped, read its inputs and outputs back and check them against the batch reference, outside the measured time; a run that differs fails (not hop; scale always checks)")
	return cmd
}

// config completes the bench's configuration from the flags; bench.New
// refuses the values that make no sense.
func (o benchOptions) config(c bench.Config, ko kafkaOptions) (bench.Config, error) {
	var err error
	if c.Partitions, err = bench.ParsePartitions(o.partitions); err != nil {
		return c, usageErr("--partitions %q: %w", o.partitions, err)
	}
	if c.Halls, err = bench.ParseHalls(o.halls); err != nil {
		return c, usageErr("--halls %q: %w", o.halls, err)
	}
	if c.Instances, err = bench.ParseInstances(o.instances); err != nil {
		return c, usageErr("--instances %q: %w", o.instances, err)
	}
	c.Variants = nil
	for _, v := range strings.Split(o.variants, ",") {
		c.Variants = append(c.Variants, strings.TrimSpace(v))
	}
	if c.Real, err = ko.config("northpole-bench"); err != nil {
		return c, err
	}
	if c.Executable, err = os.Executable(); err != nil {
		return c, err
	}
	// Each worker reads its Worker whole from $NORTHPOLE_BENCH_WORKER.
	c.Args, c.Progress = []string{"bench-worker"}, os.Stderr
	return c, nil
}

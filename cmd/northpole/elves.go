package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/statusline"
	"github.com/northpole-workshop/northpole/otel/telemetry"
	"github.com/northpole-workshop/northpole/producers"
)

// elvesOptions are the flags of `northpole elves` that need parsing before
// they become a producers.Config.
type elvesOptions struct {
	kafka      kafkaOptions
	sizes      string
	start      string
	finalAt    string
	partitions int32
}

func newElvesCmd() *cobra.Command {
	cfg := producers.DefaultConfig(record.Toys)
	cfg.Topic = ""
	o := elvesOptions{sizes: cfg.SizeMix.String(), start: record.FormatTime(cfg.Start)}
	cmd := &cobra.Command{
		Use:   "elves toys|boxes",
		Short: "Produce toys or boxes (with heartbeats, late, duplicate and bad records) to Kafka",
		Long: `elves runs a few concurrent elves that make toys or boxes and write them to a
Kafka topic, keyed by packing line and partitioned with FNV-1a like goka, as the
packing contract describes:

  toy:       {"toy_id":"toy-…","kind":"kite","size":"M","elf":"toy-elf-2","made_at":"<RFC 3339>"}
  box:       {"box_id":"box-…","size":"M","elf":"box-elf-0","made_at":"<RFC 3339>"}
  heartbeat: {"heartbeat":true,"size":"M","elf":"toy-elf-1","made_at":"<RFC 3339>"}

` + producers.LinesHelp + ` The summary says how many partitions
carry work.

Event time (made_at) is synthetic: the n-th record is made at --start + n*--spacing,
minus a random --disorder; the same flags and --seed always give the same
records. When they are done (or interrupted) the final heartbeats follow every
other record (at --final-heartbeat-at instead, if that is later).

` + producers.HeartbeatsHelp + `

` + producers.WrongRecordsHelp + `

A missing topic is created with --partitions partitions; toys and boxes must
have the same count (the packer refuses to start otherwise).

Examples:
  northpole elves toys --brokers localhost:9092 --count 5000
  northpole elves boxes --duration 1m --rate 200 --bad-rate 0.01 --seed 7
  northpole elves toys --partitions 16 --halls 16 --count 1000000   # 64 lines`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 || !record.Stream(args[0]).Valid() {
				return usageErr("elves: say which stream to produce: toys or boxes (got %q)", strings.Join(args, " "))
			}
			return nil
		},
		ValidArgs: []string{string(record.Toys), string(record.Boxes)},
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.config(cmd, cfg, record.Stream(args[0]))
			if err != nil {
				return usageErr("elves: %w", err)
			}
			tel, stopTelemetry, err := startTelemetry(cmd.Context(), telemetry.Options{})
			if err != nil {
				return err
			}
			defer stopTelemetry()
			service := telemetry.ServiceName(telemetry.ElvesService(string(c.Stream)))
			c.Tracer, c.Meter = tel.TracerProvider(service), tel.MeterProvider(service)
			return runElves(cmd.Context(), c, o.partitions, cmd.Flags().Changed("partitions"), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	o.kafka.bind(f, "Kafka bootstrap brokers, host:port[,host:port] (default $NORTHPOLE_BROKERS)")
	f.Int32Var(&o.partitions, "partitions", 4, "partitions of the topic when it has to be created; if given, an existing topic must have this many. More than 4 carry work only with --halls (4*halls >= partitions)")
	f.StringVar(&cfg.Topic, "topic", "", "topic to write to (default: the stream's name, toys or boxes)")
	f.IntVar(&cfg.Count, "count", cfg.Count, "number of records to make, heartbeats not counted (set 0, or give only --duration, to run for a time)")
	f.DurationVar(&cfg.Duration, "duration", 0, "run for this long (wall clock) instead of making --count records")
	f.Float64Var(&cfg.Rate, "rate", 0, "records per second, all elves together, heartbeats not counted; 0 = as fast as possible")
	f.IntVar(&cfg.Elves, "elves", cfg.Elves, "number of concurrent elves (named toy-elf-0, toy-elf-1, …)")
	f.StringVar(&o.sizes, "sizes", o.sizes, "relative weights of the size classes, SIZE=WEIGHT,… (a size left out is never made)")
	f.IntVar(&cfg.Halls, "halls", cfg.Halls, producers.HallsHelp)
	f.Int64Var(&cfg.Seed, "seed", cfg.Seed, "random seed: the same seed and flags make the same records; ids differ between seeds")
	f.StringVar(&o.start, "start", o.start, "event time (made_at, RFC 3339) of the first record")
	f.DurationVar(&cfg.Spacing, "spacing", cfg.Spacing, "event time between consecutive records")
	f.DurationVar(&cfg.Disorder, "disorder", 0, "made_at jitter: each record is made up to this much before its nominal time (records become late by accident only above --lateness)")
	f.Float64Var(&cfg.LateRate, "late-rate", 0, "probability (0..1) that a record is made deliberately late: --lateness + 2*--window or more before the elf's latest made_at for that size; a late draw before the elf has written that size makes an ordinary record, so the late fraction is somewhat lower")
	f.Float64Var(&cfg.DupRate, "dup-rate", 0, "fraction (0..1) of records that repeat, key and value byte for byte, an earlier record of the same size")
	f.Float64Var(&cfg.BadRate, "bad-rate", 0, "fraction (0..1) of dead letters, cycling through every kind (malformed JSON, not an object, invalid UTF-8, bad made_at, bad size, size not key, missing id, empty id; with --halls a bad line)")
	f.DurationVar(&cfg.Window, "window", cfg.Window, "window width W of the packer: sets how late late records are and when the final heartbeats are")
	f.DurationVar(&cfg.Lateness, "lateness", cfg.Lateness, "allowed lateness L of the packer: final heartbeats are at least this far past the last window")
	f.DurationVar(&cfg.HeartbeatEvery, "heartbeat", cfg.HeartbeatEvery, "event time between heartbeat ticks (each beats the lines with recent items or windows due to close); 0 = only the final ones")
	f.StringVar(&o.finalAt, "final-heartbeat-at", "", "made_at (RFC 3339) of the final heartbeats when later than computed; use one value for toys and boxes so both close the same windows")
	return cmd
}

// config turns the flags into the elves' configuration, Kafka's included;
// producers.New checks it.
func (o elvesOptions) config(cmd *cobra.Command, c producers.Config, stream record.Stream) (producers.Config, error) {
	c.Stream = stream
	if c.Topic == "" {
		c.Topic = string(stream)
	}
	f := cmd.Flags()
	if f.Changed("duration") && !f.Changed("count") {
		c.Count = 0
	}
	if o.partitions < 1 {
		return c, fmt.Errorf("--partitions must be at least 1, got %d", o.partitions)
	}
	var err error
	if c.SizeMix, err = producers.ParseSizeMix(o.sizes); err != nil {
		return c, fmt.Errorf("--sizes: %w", err)
	}
	if c.Start, err = record.ParseMadeAt(o.start); err != nil {
		return c, fmt.Errorf("--start: %w", err)
	}
	if o.finalAt != "" {
		if c.FinalHeartbeatAt, err = record.ParseMadeAt(o.finalAt); err != nil {
			return c, fmt.Errorf("--final-heartbeat-at: %w", err)
		}
	}
	c.Kafka, err = o.kafka.config("northpole-elves-" + string(stream))
	return c, err
}

// runElves creates the topic when it is missing (an existing one is used as
// it is, unless --partitions was given and differs) and runs the elves.
func runElves(ctx context.Context, c producers.Config, partitions int32, exact bool, stdout, stderr io.Writer) error {
	line := statusline.New(stderr, 250*time.Millisecond)
	c.Progress = func(s producers.Stats) { line.Show(s.StatusLine(c.Count)) }
	c.ProgressEvery = line.Every()
	e, err := producers.New(c, slog.Default())
	if err != nil {
		return usageErr("%w", err)
	}
	if err := producers.EnsureTopic(ctx, c.Kafka, c.Topic, partitions, exact); err != nil {
		return fmt.Errorf("elves: %w", err)
	}
	fmt.Fprintf(stderr, "northpole elves: %s\n", c.Describe())
	stats, err := e.Run(ctx)
	line.Clear()
	if err == nil || stats.Sent > 0 {
		stats.WriteSummary(stdout, err)
	}
	// Stopped by a signal, main.exitStatus says interrupted, with its code.
	return err
}

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/northpole-workshop/northpole/internal/gcheadroom"
	"github.com/northpole-workshop/northpole/otel/telemetry"
	"github.com/northpole-workshop/northpole/processors/packer"
)

func newProcessCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "process",
		Short: "Run one of the workshop's stream processors against Kafka",
	}
	cmd.AddCommand(newPackerCmd())
	cmd.AddCommand(newSleighCmd())
	return cmd
}

// packerFlags binds the packer's configuration to flags, with its defaults.
func packerFlags(fs *pflag.FlagSet, cfg *packer.Config) {
	t := &cfg.Topics
	fs.StringVar(&t.Toys, "toys-topic", t.Toys, "input topic of toys (keyed by packing line: a size, or size/hall)")
	fs.StringVar(&t.Boxes, "boxes-topic", t.Boxes, "input topic of boxes (keyed by packing line, co-partitioned with toys)")
	fs.StringVar(&t.Packed, "packed-topic", t.Packed, "output: packed pairs, keyed by line|<window start, µs>|toy_id (a toy id is unique within its line and window only)")
	fs.StringVar(&t.Unpacked, "unpacked-topic", t.Unpacked, "output: toys left without a box when their window closed, keyed by line|<window start, µs>|toy_id")
	fs.StringVar(&t.Spare, "spare-topic", t.Spare, "output: boxes left without a toy when their window closed, keyed by line|<window start, µs>|box_id")
	fs.StringVar(&t.Late, "late-topic", t.Late, "output: late toys and boxes, one per late record, keyed by its topic/partition/offset")
	fs.StringVar(&t.Dead, "dead-topic", t.Dead, "output: dead letters and duplicates (an id again in the same window), with the raw record and the reason, keyed by topic/partition/offset")
	fs.StringVar(&cfg.Group, "group", cfg.Group, "prefix of the goka group (<group>-clock) and its topics")
	fs.Int32Var(&cfg.Partitions, "partitions", cfg.Partitions, "partitions of every topic; existing input topics must match")
	fs.Int16Var(&cfg.Replication, "replication", cfg.Replication, "replication factor of the topics the packer creates")
	fs.DurationVar(&cfg.Window, "window", cfg.Window, "window width W (whole microseconds, > 0)")
	fs.DurationVar(&cfg.Lateness, "lateness", cfg.Lateness, "allowed lateness L (whole microseconds, >= 0)")
	fs.StringVar(&cfg.InstanceID, "instance-id", cfg.InstanceID, "static consumer-group member id: a restarted instance with the same id resumes at once (never share one between live instances)")
	fs.StringVar(&cfg.StorageDir, "storage-dir", cfg.StorageDir, "keep goka tables in LevelDB under this directory (default: in memory, rebuilt from Kafka at start)")
	fs.DurationVar(&cfg.CleanEvery, "clean-every", cfg.CleanEvery, "how often to delete the clock table's records that no restart needs (0: never, and the table grows with every record)")
	fs.DurationVar(&cfg.AlignEvery, "align-every", cfg.AlignEvery, "how often to look at the inputs' end offsets and pause the one that runs ahead in event time by more than W + L, so that a backlog does not hold its windows open; while nothing is consumed, once a second (for the lag metric) and at the next record")
	fs.Var(kib(&cfg.FetchBudget), "fetch-budget-kib", "KiB of records each group asks for at once over all its partitions, shared by them (each gets 64 to 1024 KiB): what a packer consuming at full speed holds grows with it")
}

// sizeFlag is a flag in KiB (shift 10) or MiB (shift 20) for a size the
// configuration keeps in bytes, from 0 to 2^20 units.
type sizeFlag struct {
	bytes *int
	shift uint
}

func kib(bytes *int) sizeFlag { return sizeFlag{bytes, 10} }
func mib(bytes *int) sizeFlag { return sizeFlag{bytes, 20} }

func (f sizeFlag) unit() string {
	if f.shift == 20 {
		return "MiB"
	}
	return "KiB"
}

func (f sizeFlag) String() string {
	if f.bytes == nil { // pflag's zero value, for the default in --help
		return "0"
	}
	return strconv.Itoa(*f.bytes >> f.shift)
}
func (f sizeFlag) Type() string { return "int" }
func (f sizeFlag) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("want a whole number of %s, got %q", f.unit(), s)
	}
	if n < 0 || n > 1<<20 {
		return fmt.Errorf("want 0 to %d %s, got %d", 1<<20, f.unit(), n)
	}
	*f.bytes = n << f.shift
	return nil
}

func newPackerCmd() *cobra.Command {
	cfg := packer.DefaultConfig()
	var ko kafkaOptions
	var listen string
	gcHeadroom := gcheadroom.DefaultMost
	cmd := &cobra.Command{
		Use:   "packer",
		Short: "Run the Goka packer: toys + boxes -> packed, unpacked, spare, late, dead-letters",
		Long: `Runs the packer's goka group (<group>-clock) until
interrupted. Topics are created if missing; an input topic whose partition
count differs from --partitions is refused. Several instances with the same
--group share the partitions. It prints "` + packer.ReadyPrefix + `: ..." on stderr
once its group has joined, recovered its table and consumes. See
docs/ARCHITECTURE.md.

Keys are packing lines (M, or M/hall-7 with elves --halls): lines are what
partitions and instances share, so with sizes alone at most 4 instances work.
To pack faster, write more lines into more partitions and run up to one
instance per partition (docs/PERFORMANCE.md, "Scale-out").

With --listen it serves GET /healthz there: its state as JSON (each goka
group's state, partitions and records consumed and written since start),
with status 200 while the group runs and 503 while it starts, rebalances or
recover, for a container's or an orchestrator's probe.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if listen != "" {
				if err := validListen("--listen", listen); err != nil {
					return err
				}
			}
			var err error
			if cfg.Kafka, err = ko.config("northpole-packer"); err != nil {
				return err
			}
			return runPackerCommand(cmd, cfg, listen, gcHeadroom)
		},
	}
	ko.bind(cmd.Flags(), "Kafka bootstrap brokers, host:port[,host:port] (default $NORTHPOLE_BROKERS)")
	packerFlags(cmd.Flags(), &cfg)
	cmd.Flags().StringVar(&listen, "listen", "", "serve GET /healthz on this address, e.g. 127.0.0.1:8088 (default: none)")
	cmd.Flags().Var(mib(&gcHeadroom), "gc-headroom-mib", "while the packer allocates fast (a backlog), let its heap grow by what it allocates in half a second, up to this many MiB, before the Go collector runs, rather than by GOGC's share of the live heap alone: fewer collections for a bounded amount of memory; a quiet packer is left to GOGC (0: GOGC alone; GOMEMLIMIT still bounds it all)")
	return cmd
}

// runPackerCommand runs the packer of cfg, traced as OTEL_* says, until cmd's
// context ends, and prints packer.ReadyLine once it is ready; with listen,
// it serves /healthz there too. Its collector gets up to gcHeadroom bytes
// of headroom while it allocates fast (gcheadroom.Keep). process packer and
// the bench's worker run it.
func runPackerCommand(cmd *cobra.Command, cfg packer.Config, listen string, gcHeadroom int) error {
	defer gcheadroom.Keep(uint64(gcHeadroom))()
	tel, stopTelemetry, err := startTelemetry(cmd.Context(), telemetry.Options{})
	if err != nil {
		return err
	}
	defer stopTelemetry()
	service := telemetry.ServiceName(telemetry.ServicePacker)
	cfg.Tracer = tel.TracerProvider(service)
	cfg.Meter = tel.MeterProvider(service) // the first meter provider also reports the Go runtime's metrics
	cfg.Ready = func() { fmt.Fprintln(cmd.ErrOrStderr(), packer.ReadyLine(cfg)) }
	pk, err := packer.New(cfg, slog.Default())
	if err != nil {
		return usageErr("%w", err)
	}
	slog.Info("packer starting", "brokers", cfg.Kafka.Brokers, "group", cfg.Group, "window", cfg.Window, "lateness", cfg.Lateness)
	run := pk.Run
	if listen != "" {
		run = func(ctx context.Context) error { return pk.ListenAndRun(ctx, listen) }
	}
	if err := run(cmd.Context()); err != nil {
		if pe := (*packer.PartitionsError)(nil); errors.As(err, &pe) {
			return fmt.Errorf("packer: %w (--partitions %d)", err, pe.Partitions)
		}
		return fmt.Errorf("packer: %w", err)
	}
	slog.Info("packer stopped")
	return nil
}

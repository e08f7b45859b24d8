package main

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/northpole-workshop/northpole/otel/telemetry"
	"github.com/northpole-workshop/northpole/processors/sleigh"
)

func newSleighCmd() *cobra.Command {
	cfg := sleigh.DefaultConfig()
	var ko kafkaOptions
	listen := "127.0.0.1:8089"
	cmd := &cobra.Command{
		Use:   "sleigh",
		Short: "Load packed pairs onto the sleigh and serve the manifest, a page at a time (GET /manifest)",
		Long: `Consumes the packer's packed topic (goka group --group), keeps each pair once
per key (line|window|toy_id: a toy id is unique within its line's window only,
so one packed in two windows, or on two lines, is two pairs) however often a
replay re-sent it, and serves the sleigh manifest over HTTP as JSON:

` + sleigh.HTTPHelp + ` At most --max-readers manifest
requests run at once; one more waits up to --reader-wait and then gets 503
with Retry-After: 1.

Its tables are LevelDB, in memory by default (the process grows by 150 to 230
bytes a pair; rebuilt from Kafka at every start); --storage-dir keeps them on
disk, where the process stays near 100 MB however many pairs it holds: the
choice for large manifests (see README and docs/PERFORMANCE.md).

It prints "sleigh ready: manifest at http://ADDR/manifest" on stderr once the
server listens and the sleigh's group runs (after joining and loading its
table).

With OTEL_* set (see otel/README.md) each record gets a "process packed" span
in service sleigh, child of the packer's "send packed" span.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := validListen("--listen", listen); err != nil {
				return err
			}
			kc, err := ko.config("northpole-sleigh")
			if err != nil {
				return err
			}
			cfg.Kafka = kc
			ctx := cmd.Context()
			tel, stop, err := startTelemetry(ctx, telemetry.Options{})
			if err != nil {
				return err
			}
			defer stop()
			service := telemetry.ServiceName(telemetry.ServiceSleigh)
			cfg.Tracer, cfg.Meter = tel.TracerProvider(service), tel.MeterProvider(service)
			s, err := sleigh.New(cfg, slog.Default())
			if err != nil {
				return usageErr("%w", err)
			}
			if os.Getenv("GOGC") == "" {
				// The tables in memory are LevelDB's files on the Go heap:
				// large byte slices without pointers, which a collection
				// marks at almost no cost. Collecting at 25 % growth instead
				// of 100 % keeps the resident set near the live tables
				// (docs/PERFORMANCE.md).
				debug.SetGCPercent(25)
			}
			return s.ListenAndRun(ctx, listen, func(addr net.Addr) {
				fmt.Fprintf(cmd.ErrOrStderr(), "sleigh ready: manifest at http://%s/manifest\n", addr)
			})
		},
	}
	ko.bind(cmd.Flags(), "Kafka bootstrap brokers, host:port[,host:port] (default $NORTHPOLE_BROKERS)")
	f := cmd.Flags()
	f.StringVar(&cfg.Topic, "packed-topic", cfg.Topic, "the packer's topic of packed pairs")
	f.StringVar(&cfg.Group, "group", cfg.Group, "goka group of the sleigh (its table is <group>-table)")
	f.Int32Var(&cfg.Partitions, "partitions", cfg.Partitions, "partitions of the packed topic if the sleigh has to create it")
	f.Int16Var(&cfg.Replication, "replication", cfg.Replication, "replication factor of the topics the sleigh creates")
	f.StringVar(&cfg.StorageDir, "storage-dir", cfg.StorageDir, "keep the tables in LevelDB under this directory (default: in memory, rebuilt from Kafka at start)")
	f.StringVar(&listen, "listen", listen, "serve the manifest on this address")
	f.IntVar(&cfg.HTTP.MaxReaders, "max-readers", cfg.HTTP.MaxReaders, "manifest requests answered at once (default: the cores Go uses, GOMAXPROCS)")
	f.DurationVar(&cfg.HTTP.ReaderWait, "reader-wait", cfg.HTTP.ReaderWait, "how long a request beyond --max-readers waits before its 503")
	f.DurationVar(&cfg.HTTP.WriteTimeout, "write-timeout", cfg.HTTP.WriteTimeout, "longest time to send one response")
	return cmd
}

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/northpole-workshop/northpole/internal/pipeline"
	"github.com/northpole-workshop/northpole/otel/telemetry"
	"github.com/northpole-workshop/northpole/processors/sleigh"
)

func newSleighCmd() *cobra.Command {
	cfg := sleigh.DefaultConfig()
	var ko kafkaOptions
	listen := "127.0.0.1:8089"
	cmd := &cobra.Command{
		Use:   "sleigh",
		Short: "Load packed pairs onto the sleigh and serve the manifest (GET /manifest)",
		Long: `Consumes the packer's packed topic (goka group --group), keeps each pair once
per key (size|window|toy_id: a toy id is unique within its window only, so one
packed in two windows is two pairs) however often a replay re-sent it, and
serves the sleigh manifest, the pairs per size class and window, as JSON:

  curl -s localhost:8089/manifest            every pair
  curl -s 'localhost:8089/manifest?size=M'    one size class (S, M, L or XL; any other: 400)
  curl -s localhost:8089/healthz              counts since start

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
			cfg.Tracer = tel.TracerProvider(telemetry.ServiceName(pipeline.ServiceSleigh))
			s, err := sleigh.New(cfg, slog.Default())
			if err != nil {
				return usageErr("%w", err)
			}
			return runSleigh(ctx, s, listen, cmd)
		},
	}
	ko.bind(cmd.Flags(), "Kafka bootstrap brokers, host:port[,host:port] (default $NORTHPOLE_BROKERS)")
	f := cmd.Flags()
	f.StringVar(&cfg.Topic, "packed-topic", cfg.Topic, "the packer's topic of packed pairs")
	f.StringVar(&cfg.Group, "group", cfg.Group, "goka group of the sleigh (its table is <group>-table)")
	f.Int32Var(&cfg.Partitions, "partitions", cfg.Partitions, "partitions of the packed topic if the sleigh has to create it")
	f.Int16Var(&cfg.Replication, "replication", cfg.Replication, "replication factor of the topics the sleigh creates")
	f.StringVar(&cfg.StorageDir, "storage-dir", cfg.StorageDir, "keep the table in LevelDB under this directory (default: in memory, rebuilt from Kafka at start)")
	f.StringVar(&listen, "listen", listen, "serve the manifest on this address")
	return cmd
}

// runSleigh serves the manifest on listen while s runs, and says where once
// both the server listens and the sleigh runs, so that a sleigh that cannot
// reach Kafka fails without having announced a manifest.
func runSleigh(ctx context.Context, s *sleigh.Sleigh, listen string, cmd *cobra.Command) error {
	lis, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("sleigh: listen on %s: %w", listen, err)
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	ran := make(chan error, 1)
	go func() { ran <- s.Run(ctx) }()
	var runErr error
	select {
	case <-s.Ready():
		fmt.Fprintf(cmd.ErrOrStderr(), "sleigh ready: manifest at http://%s/manifest\n", lis.Addr())
		runErr = <-ran
	case runErr = <-ran:
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("sleigh: serve manifest: %w", err)
	}
	if runErr != nil {
		return fmt.Errorf("sleigh: %w", runErr)
	}
	return nil
}

// Command northpole runs Santa's workshop: the elves that produce toys and
// boxes, the Goka packer, and a one-command demo on an in-process Kafka.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/otel/telemetry"
)

// exitError carries a specific exit code (e.g. 3: results differ).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := newRootCmd().ExecuteContext(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "northpole:", err)
		var ee *exitError
		if errors.As(err, &ee) {
			os.Exit(ee.code)
		}
		os.Exit(1)
	}
}

func newRootCmd() *cobra.Command {
	var logLevel string
	root := &cobra.Command{
		Use:   "northpole",
		Short: "Santa's workshop: elves produce toys and boxes on Kafka, Goka packs them",
		Long: `northpole runs the workshop's pipeline on Kafka.

  northpole demo                   everything in one process, on an in-process Kafka
  northpole elves toys|boxes       produce toys or boxes to a Kafka cluster
  northpole process packer         run the Goka packer against a Kafka cluster
  northpole process sleigh         load packed pairs onto the sleigh, serve its manifest
  northpole servicemap             draw the service map from OTLP spans (as SigNoz would)
  northpole compare                compare Goka's results with a SQL engine's (SQLite, PostgreSQL, RisingWave)

Tracing is off unless the standard OTEL_* variables ask for it, e.g.
OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 (see otel/README.md).

The packing rules (windows, lateness, duplicates, dead letters) are in
docs/SEMANTICS.md.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			var lvl slog.Level
			if err := lvl.UnmarshalText([]byte(logLevel)); err != nil {
				return fmt.Errorf("--log-level %q: want debug, info, warn or error", logLevel)
			}
			slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl})))
			telemetry.LogErrors(slog.Default())
			return nil
		},
	}
	root.PersistentFlags().StringVar(&logLevel, "log-level", "warn", "log level: debug, info, warn or error")
	root.AddCommand(newDemoCmd(), newElvesCmd(), newProcessCmd())
	root.AddCommand(newServicemapCmd())
	root.AddCommand(newCompareCmd())
	root.AddCommand(newBenchCmd(), newBenchHopCmd())
	return root
}

// brokersFlag reads --brokers, falling back to $NORTHPOLE_BROKERS.
func brokersFrom(flag string) []string {
	if flag == "" {
		flag = os.Getenv("NORTHPOLE_BROKERS")
	}
	return kafkaconf.SplitBrokers(flag)
}

func usageErr(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...)}
}

var _ = strings.TrimSpace

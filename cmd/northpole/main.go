// Command northpole runs Santa's workshop: the elves that produce toys and
// boxes, the Goka packer, and a one-command demo on an in-process Kafka.
//
// Its commands are demo, elves toys|boxes, process packer|sleigh, compare,
// servicemap, bench and bench-sleigh (and the hidden workers the bench
// starts as processes of their own). They only wire: flags into the
// packages' configs (the Kafka and TLS/SASL flags every command shares are
// in kafkaflags.go), help text, printing what the packages render, and
// errors mapped to exit codes (2 bad flags, 3 results differ, 4 the demo's
// service map differs from the records read back) and to the flags to fix:
// the packages' errors name settings, not flags (kafkaconf.Settings,
// packer.PartitionsError).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/northpole-workshop/northpole/internal/stopping"
	"github.com/northpole-workshop/northpole/otel/telemetry"
)

// Exit codes other than 0, 1 and 128 + a signal's number; the root
// command's help and the README list them.
const (
	exitUsage      = 2 // bad flags or arguments
	exitDiffer     = 3 // the results differ (demo, compare)
	exitMapDiffers = 4 // the demo's service map differs from the records read back
	// exitStopIncomplete: a signal asked the command to stop and it could not
	// finish stopping cleanly (the broker did not answer): what it left
	// undone is printed.
	exitStopIncomplete = 5
)

// stopDeadline is how long main waits, after a signal, for the command to
// return before it exits by itself: each service gives up on its broker
// after stopping.Grace and says what it left undone; this catches what
// does not.
const stopDeadline = 2 * stopping.Grace

// exitError carries a specific exit code (exitUsage, exitDiffer,
// exitMapDiffers).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got atomic.Value // the signal that stopped the command, if one did
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		got.Store(sig)
		// A second Ctrl-C kills at once, should stopping hang.
		signal.Stop(sigs)
		cancel()
		time.Sleep(stopDeadline)
		fmt.Fprintf(os.Stderr, "northpole: %s: %v\n", sig, fmt.Errorf("%w within %v: exiting; what was not written or committed is lost or read again at the next start", stopping.ErrIncomplete, stopDeadline))
		os.Exit(exitStopIncomplete)
	}()
	err := newRootCmd().ExecuteContext(ctx)
	sig, _ := got.Load().(os.Signal)
	code, msg := exitStatus(err, sig)
	if msg != "" {
		fmt.Fprintln(os.Stderr, "northpole:", msg)
	}
	os.Exit(code)
}

// exitStatus is the exit code for what the command returned, and what to
// print: 0 for nil (a service stopped by a signal is done, not failed);
// 128 + the signal's number, saying "interrupted", when a signal stopped a
// command before it finished (whatever error the stop surfaced as); else
// the exitError's code, or 1. A usage error or a verdict (the results, the
// map) stays what it is when a signal comes late: the command had finished.
func exitStatus(err error, sig os.Signal) (int, string) {
	if err == nil {
		return 0, ""
	}
	var ee *exitError
	isExit := errors.As(err, &ee)
	final := isExit && (ee.code == exitUsage || ee.code == exitDiffer || ee.code == exitMapDiffers)
	if _, ok := sig.(syscall.Signal); ok && errors.Is(err, stopping.ErrIncomplete) {
		return exitStopIncomplete, err.Error()
	}
	if s, ok := sig.(syscall.Signal); ok && !final {
		name := map[syscall.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM"}[s]
		if name == "" {
			name = s.String()
		}
		return 128 + int(s), "interrupted by " + name
	}
	if isExit {
		return ee.code, err.Error()
	}
	return 1, err.Error()
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
  northpole bench                  measure the packer: events/s, CPU per event, memory, pack latency
  northpole bench-sleigh           load-test the sleigh's manifest: 100 clients paging through 1,000,000 pairs

Traces and metrics are off unless the standard OTEL_* variables ask for
them, e.g. OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318; metrics are
exported every OTEL_METRIC_EXPORT_INTERVAL (ms, default 60000). See
otel/README.md, and deploy/signoz/northpole-dashboard.json for SigNoz.

The packing rules (windows, lateness, duplicates, dead letters) are in
docs/SEMANTICS.md.

Exit status, every command: 0 done (also a service, process packer|sleigh or
servicemap, stopped by Ctrl-C or SIGTERM); 1 error; 2 bad flags or arguments;
3 the results differ (demo, compare); 4 the demo's service map differs from
the records it read back (spans lost, or records redelivered; 3 wins when
the results differ too); 130 (SIGINT, Ctrl-C) or 143 (SIGTERM) when a
signal stopped a command before it finished (demo, elves, compare, bench),
after printing "interrupted"; 5 when a signal asked a command to stop and it
could not finish stopping within a few seconds (the broker did not answer),
after printing what it left undone (the elves: the records not acknowledged;
the packer and the sleigh: their input since the last commit, which the next
start reads again).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			var lvl slog.Level
			if err := lvl.UnmarshalText([]byte(logLevel)); err != nil {
				return usageErr("--log-level %q: want debug, info, warn or error", logLevel)
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
	root.AddCommand(newBenchCmd(), newBenchWorkerCmd(), newBenchSleighCmd())
	// Bad flags and arguments are usage errors (exit 2), as are commands
	// that only group others when called without one of them.
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageErr("%w (see '%s --help')", err, c.CommandPath())
	})
	root.InitDefaultCompletionCmd() // else cobra adds it at Execute, unseen by usageArgs
	usageArgs(root)
	return root
}

// usageArgs makes every argument error of cmd and its subcommands a usage
// error, and makes each command that only groups subcommands (process,
// completion, the root itself) say which one is missing or unknown instead of
// printing its help and exiting 0.
func usageArgs(cmd *cobra.Command) {
	if cmd.HasSubCommands() && cmd.Run == nil && cmd.RunE == nil {
		cmd.Args = cobra.ArbitraryArgs
		cmd.RunE = needSubcommand
	}
	if args := cmd.Args; args != nil {
		cmd.Args = func(c *cobra.Command, a []string) error {
			err := args(c, a)
			var ee *exitError
			if err == nil || errors.As(err, &ee) {
				return err
			}
			return usageErr("%w (see '%s --help')", err, c.CommandPath())
		}
	}
	for _, sub := range cmd.Commands() {
		usageArgs(sub)
	}
}

// needSubcommand is the RunE of a command that only groups others.
func needSubcommand(cmd *cobra.Command, args []string) error {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	want := strings.Join(names, ", ")
	// main prefixes the root's name already.
	what := strings.TrimPrefix(strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()), " ")
	if what != "" {
		what += ": "
	}
	if len(args) == 0 {
		return usageErr("%ssay which command to run: %s (see '%s --help')", what, want, cmd.CommandPath())
	}
	hint := ""
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's default for its own suggestions
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		hint = fmt.Sprintf(" (did you mean %q?)", s[0])
	}
	return usageErr("%sunknown command %q%s: want one of %s", what, args[0], hint, want)
}

// writeJSON writes v to w as indented JSON: what --json prints.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	return nil
}

// usageErr is a usage error (exit 2). Kafka settings that cannot work are
// one, wherever they are found: it says which flags set them, once (an
// exitError inside has said it already).
func usageErr(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	if inner := (*exitError)(nil); !errors.As(err, &inner) {
		err = withKafkaFlags(err)
	}
	return &exitError{code: exitUsage, err: err}
}

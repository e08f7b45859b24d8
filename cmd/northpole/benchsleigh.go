package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/northpole-workshop/northpole/app/sleighbench"
)

func newBenchSleighCmd() *cobra.Command {
	cfg := sleighbench.DefaultConfig()
	ko := kafkaOptions{inProcessDefault: true}
	var runs int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "bench-sleigh",
		Short: "Load-test the sleigh's manifest: many clients paging through a million pairs",
		Long: `bench-sleigh starts the sleigh as its own OS process (northpole process
sleigh, listening on a free loopback port), writes --pairs packed pairs straight
onto a new packed topic (250 per size class and window of 10 s; no packer), and
once the sleigh's summary counts them all, lets --clients clients page through
the whole manifest at once, --limit pairs a page, each from the first page to
the last. A client that gets 503 waits its Retry-After and asks again; any
other failure ends that client. The paging stops after --duration at the latest.

` + sleighbench.Legend + `

Everything runs on this machine: the HTTP traffic is loopback only. Without
--brokers the Kafka is in-process (kfake, in this process); with --brokers the
run's topics are deleted at its end, and the sleigh gets the same Kafka
settings (TLS, SASL) as this command. It is not part of the test suite.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("bench-sleigh: find the northpole program: %w", err)
			}
			cfg.Executable, cfg.Progress = exe, cmd.ErrOrStderr()
			if cfg.Kafka, err = ko.config("northpole-bench-sleigh"); err != nil {
				return err
			}
			if err := cfg.Validate(); err != nil {
				return usageErr("%w", err)
			}
			if runs < 1 {
				return usageErr("--runs %d: at least 1", runs)
			}
			var all []sleighbench.Result
			for i := range runs {
				fmt.Fprintf(cmd.ErrOrStderr(), "bench-sleigh: run %d of %d\n", i+1, runs)
				r, err := sleighbench.Run(cmd.Context(), cfg)
				if err != nil {
					return err
				}
				all = append(all, r)
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), all)
			}
			sleighbench.WriteText(cmd.OutOrStdout(), all)
			return nil
		},
	}
	ko.bind(cmd.Flags(), "Kafka bootstrap brokers, host:port[,host:port] (default: an in-process Kafka)")
	fs := cmd.Flags()
	fs.IntVar(&cfg.Pairs, "pairs", cfg.Pairs, "packed pairs to load")
	fs.IntVar(&cfg.Clients, "clients", cfg.Clients, "clients paging at once")
	fs.IntVar(&cfg.Limit, "limit", cfg.Limit, "pairs a page")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "longest time the clients page")
	fs.DurationVar(&cfg.Idle, "idle", cfg.Idle, "how long the sleigh stands idle after loading before its idle RSS is read")
	fs.BoolVar(&cfg.StorageDir, "storage-dir", false, "run the sleigh with --storage-dir (a temporary directory)")
	fs.IntVar(&runs, "runs", 1, "runs, each with a new sleigh and topic")
	fs.BoolVar(&asJSON, "json", false, "print the results as JSON")
	fs.IntVar(&cfg.MaxReaders, "max-readers", 0, "the sleigh's --max-readers (default: the sleigh's)")
	fs.DurationVar(&cfg.ReaderWait, "reader-wait", 0, "the sleigh's --reader-wait (default: the sleigh's)")
	return cmd
}

package main

import (
	"github.com/spf13/cobra"

	"github.com/northpole-workshop/northpole/app/bench"
)

// newBenchHopCmd is the worker process of the bench's hop variant (the floor
// under the packer: bench.RunHop). It is hidden: it exists only so that
// northpole bench can measure it as its own OS process, like the packer.
func newBenchHopCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "bench-hop",
		Short:  "One goka hop (consume, write the group table), the floor of northpole bench",
		Long:   "Run by northpole bench only: it reads its configuration from $" + bench.WorkerEnv + ".",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			w, ok, err := bench.WorkerFromEnv()
			if err != nil {
				return err
			}
			if !ok {
				return usageErr("bench-hop is northpole bench's worker: it needs $%s", bench.WorkerEnv)
			}
			cfg := w.HopConfig()
			if err := cfg.Validate(); err != nil {
				return usageErr("%w", err)
			}
			stopProfile, err := w.Profile()
			if err != nil {
				return err
			}
			defer stopProfile()
			return bench.RunHop(cmd.Context(), cfg)
		},
	}
}

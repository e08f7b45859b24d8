package main

import (
	"github.com/spf13/cobra"

	"github.com/northpole-workshop/northpole/app/bench"
	"github.com/northpole-workshop/northpole/internal/gcheadroom"
)

// newBenchWorkerCmd is the OS process northpole bench measures, hidden: the
// packer, or the one-hop floor under it (bench.RunHop), as the Worker it
// reads whole from $NORTHPOLE_BENCH_WORKER says.
func newBenchWorkerCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "bench-worker",
		Short:  "The process northpole bench measures: the packer, or one goka hop",
		Long:   "Run by northpole bench only: it reads its configuration from $" + bench.WorkerEnv + ".",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			w, ok, err := bench.WorkerFromEnv()
			if err != nil {
				return err
			}
			if !ok {
				return usageErr("bench-worker is northpole bench's worker: it needs $%s", bench.WorkerEnv)
			}
			stopProfile, err := w.Profile()
			if err != nil {
				return err
			}
			defer func() {
				if perr := stopProfile(); err == nil {
					err = perr
				}
			}()
			if w.Hop {
				// The floor under the packer, with the packer's collector.
				defer gcheadroom.Keep(uint64(w.GCHeadroom))()
				return bench.RunHop(cmd.Context(), w.HopConfig())
			}
			return runPackerCommand(cmd, w.Packer, w.Listen, w.GCHeadroom)
		},
	}
}

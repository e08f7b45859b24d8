package main

import (
	"github.com/spf13/cobra"

	"github.com/northpole-workshop/northpole/internal/app/bench"
)

// newBenchHopCmd is the worker process of the bench's hop variant (the floor
// under the packer: bench.RunHop). It is hidden: it exists only so that
// northpole bench can measure it as its own OS process, like the packer.
func newBenchHopCmd() *cobra.Command {
	var ko kafkaOptions
	var group, toys, boxes, cpuprofile string
	cmd := &cobra.Command{
		Use:    "bench-hop",
		Short:  "One goka hop (consume, write the group table), the floor of northpole bench",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if group == "" || toys == "" || boxes == "" {
				return usageErr("bench-hop needs --group, --toys-topic and --boxes-topic")
			}
			kc, err := ko.config("northpole-bench-hop")
			if err != nil {
				return err
			}
			cfg := bench.HopConfig{Kafka: kc, Group: group, Toys: toys, Boxes: boxes}
			if err := cfg.Validate(); err != nil {
				return usageErr("%w", err)
			}
			if cpuprofile != "" {
				stopProfile, err := startCPUProfile(cpuprofile)
				if err != nil {
					return err
				}
				defer stopProfile()
			}
			return bench.RunHop(cmd.Context(), cfg)
		},
	}
	ko.bind(cmd.Flags(), "Kafka bootstrap brokers")
	fs := cmd.Flags()
	fs.StringVar(&group, "group", "", "consumer group")
	fs.StringVar(&toys, "toys-topic", "", "toys topic")
	fs.StringVar(&boxes, "boxes-topic", "", "boxes topic")
	fs.StringVar(&cpuprofile, "cpuprofile", "", "write a CPU profile to this file")
	return cmd
}

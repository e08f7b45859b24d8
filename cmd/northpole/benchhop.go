package main

import (
	"context"
	"fmt"
	"time"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"
	"github.com/spf13/cobra"

	"github.com/northpole-workshop/northpole/internal/gokaproducer"
	"github.com/northpole-workshop/northpole/internal/gokastore"
	"github.com/northpole-workshop/northpole/internal/kafkaconf"
)

// The "hop" variant of northpole bench measures the floor under the packer:
// one goka group that consumes toys and boxes and writes each record into its
// group table under the record's key (one consume and one table write per
// event, the work of one packer stage without any packing logic). The packer
// chains three such stages, each with a loopback, so its cost per event is
// compared with this one in docs/PERFORMANCE.md.

// hopGroup is the bench-hop worker's group for a bench run named name.
func hopGroup(name string) string { return name + "-hop" }

// newBenchHopCmd is the worker process of the hop variant. It is hidden: it
// exists only so that northpole bench can measure it as its own OS process,
// like the packer.
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
			if err := kc.Validate(); err != nil {
				return usageErr("%w", err)
			}
			if cpuprofile != "" {
				stopProfile, err := startCPUProfile(cpuprofile)
				if err != nil {
					return err
				}
				defer stopProfile()
			}
			return runHop(cmd.Context(), kc, group, toys, boxes)
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

func runHop(ctx context.Context, kc kafkaconf.Config, group, toys, boxes string) error {
	persist := func(ctx goka.Context, msg any) {
		if msg != nil {
			ctx.SetValue(msg)
		}
	}
	g := goka.DefineGroup(goka.Group(group),
		goka.Input(goka.Stream(toys), new(codec.Bytes), persist),
		goka.Input(goka.Stream(boxes), new(codec.Bytes), persist),
		goka.Persist(new(codec.Bytes)),
	)
	tmc := goka.NewTopicManagerConfig()
	tmc.Table.Replication, tmc.Stream.Replication = 1, 1
	cfg := func() *sarama.Config { return kc.Sarama() }
	proc, err := goka.NewProcessor(kc.Brokers, g,
		goka.WithConsumerGroupBuilder(goka.ConsumerGroupBuilderWithConfig(cfg())),
		goka.WithProducerBuilder(gokaproducer.Builder(kc.Kgo())),
		goka.WithTopicManagerBuilder(goka.TopicManagerBuilderWithConfig(cfg(), tmc)),
		goka.WithConsumerSaramaBuilder(goka.SaramaConsumerBuilderWithConfig(cfg())),
		// The packer's producer and storage: the floor of the packer's setup.
		goka.WithStorageBuilder(gokastore.Memory()),
		goka.WithLogger(discardGokaLogger{}),
	)
	if err != nil {
		return fmt.Errorf("bench-hop: create goka processor: %w", err)
	}
	if err := proc.Run(ctx); err != nil && ctx.Err() == nil {
		return fmt.Errorf("bench-hop: %w", err)
	}
	return nil
}

// waitGroupQuiet waits until hopLag is zero on two polls in a row, printing
// the lag every five seconds.
func waitGroupQuiet(ctx context.Context, kc kafkaconf.Config, group string, topics []string, done chan error, progress func(string, ...any)) error {
	zero := 0
	last := time.Now()
	for zero < 2 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-done:
			done <- err
			return fmt.Errorf("worker process ended early: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
		lag, err := hopLag(ctx, kc, group, topics)
		if err == nil && lag == 0 {
			zero++
		} else {
			zero = 0
		}
		if time.Since(last) > 5*time.Second {
			last = time.Now()
			progress("  lag %d", lag)
		}
	}
	return nil
}

// discardGokaLogger drops goka's chatter: the bench's output is its table.
type discardGokaLogger struct{}

func (discardGokaLogger) Print(...any)          {}
func (discardGokaLogger) Println(...any)        {}
func (discardGokaLogger) Printf(string, ...any) {}

func hopLag(ctx context.Context, kc kafkaconf.Config, group string, topics []string) (int64, error) {
	client, err := kc.NewReaderClient(ctx)
	if err != nil {
		return 0, err
	}
	defer client.Close()
	return kafkaconf.GroupLag(ctx, client, group, topics...)
}

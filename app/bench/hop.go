package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"

	"github.com/northpole-workshop/northpole/internal/gokakit"
	"github.com/northpole-workshop/northpole/internal/kafkaconf"
)

// The hop variant measures the floor under the packer: one goka group that
// consumes toys and boxes and writes each record into its group table under
// the record's key (one consume and one table write per event, the work of
// one packer stage without any packing logic). docs/PERFORMANCE.md compares
// the packer's cost per event with it.

// HopGroup is the hop worker's group for a bench run named name.
func HopGroup(name string) string { return name + "-hop" }

// HopConfig is the hop worker's.
type HopConfig struct {
	Kafka       kafkaconf.Config
	Group       string
	Toys, Boxes string // the input topics
}

// Validate reports why the hop cannot run, or nil.
func (c HopConfig) Validate() error {
	var errs []error
	if c.Group == "" || c.Toys == "" || c.Boxes == "" {
		errs = append(errs, errors.New("bench hop: needs a group and both input topics"))
	}
	if err := c.Kafka.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// hopGraph is the hop worker's group.
func hopGraph(cfg HopConfig) *goka.GroupGraph {
	persist := func(ctx goka.Context, msg any) {
		if msg != nil {
			ctx.SetValue(msg)
		}
	}
	return goka.DefineGroup(goka.Group(cfg.Group),
		goka.Input(goka.Stream(cfg.Toys), new(codec.Bytes), persist),
		goka.Input(goka.Stream(cfg.Boxes), new(codec.Bytes), persist),
		goka.Persist(new(codec.Bytes)),
	)
}

// RunHop runs the hop worker until ctx ends (then it returns nil). It is built
// as every goka processor here is (gokakit: the packer's producer, memory
// storage), the floor of the packer's setup, and drops goka's own log lines:
// the bench's output is its table.
func RunHop(ctx context.Context, cfg HopConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	kc := cfg.Kafka
	proc, err := goka.NewProcessor(kc.Brokers, hopGraph(cfg), gokakit.Options(kc, cfg.Group, gokakit.TopicConfig(1), slog.New(slog.DiscardHandler))...)
	if err != nil {
		return fmt.Errorf("bench hop: create goka processor: %w", err)
	}
	if err := proc.Run(ctx); err != nil && ctx.Err() == nil {
		return fmt.Errorf("bench hop: %w", err)
	}
	return nil
}

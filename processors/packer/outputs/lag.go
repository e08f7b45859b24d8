package outputs

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/northpole-workshop/northpole/internal/kafkaadmin"
	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/processors/packer"
)

// Lag is the number of records the groups of the packer cfg configures have
// not yet committed, over all their inputs, loops included. Zero, twice in
// a row after the elves stopped, means quiescence.
func Lag(ctx context.Context, cfg packer.Config) (int64, error) {
	admin, err := lagAdmin(ctx, cfg.Kafka)
	if err != nil {
		return 0, err
	}
	defer admin.Close()
	lags, err := groupLags(ctx, cfg, admin)
	var total int64
	for _, l := range lags {
		total += l
	}
	return total, err
}

// lagAdmin connects a client to read the groups' lag with: a reader's, which
// fails within seconds (kafkaconf.Config.NewReaderClient), as its callers
// poll and retry in loops of their own.
func lagAdmin(ctx context.Context, kc kafkaconf.Config) (*kadm.Client, error) {
	cl, err := kc.NewReaderClient(ctx)
	if err != nil {
		return nil, err
	}
	return kadm.NewClient(cl), nil
}

// groupLags is Lag per group, in pipeline order.
func groupLags(ctx context.Context, cfg packer.Config, admin *kadm.Client) ([]int64, error) {
	var lags []int64
	for _, g := range cfg.GroupInputs() {
		lag, err := kafkaadmin.GroupLag(ctx, admin, g.Group, g.Topics...)
		if err != nil {
			return nil, err
		}
		lags = append(lags, lag)
	}
	return lags, nil
}

// WaitQuiet returns once the packer cfg configures has consumed everything:
// Lag is zero on two polls in a row, every apart (kafkaadmin.WaitQuiet).
// Errors from Lag are retried (a group coordinator that is still loading
// offsets after a restart says so for a while), logged at debug on log (nil:
// discarded), until ctx ends; the last one is reported then. If stopped
// delivers, the packer ended early.
func WaitQuiet(ctx context.Context, cfg packer.Config, every time.Duration, stopped <-chan error, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// One client for the whole wait, connected by the first poll that can:
	// a Kafka not reachable yet is that poll's error, retried by the next.
	var admin *kadm.Client
	defer func() {
		if admin != nil {
			admin.Close()
		}
	}()
	lags := func(ctx context.Context) ([]int64, error) {
		var lags []int64
		var err error
		if admin == nil {
			admin, err = lagAdmin(ctx, cfg.Kafka)
		}
		if err == nil {
			lags, err = groupLags(ctx, cfg, admin)
		}
		if err != nil {
			log.Debug("lag not available yet", "err", err)
		}
		return lags, err
	}
	// Which stage stalled (the lags are in the groups' order) tells where to look.
	if err := kafkaadmin.WaitQuiet(ctx, every, lags, stopped); err != nil {
		return fmt.Errorf("waiting for the packer (groups %v) to finish: %w", cfg.Groups(), err)
	}
	return nil
}

package packer

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/results"
	"github.com/northpole-workshop/northpole/internal/topicread"
)

// OutputCounts counts output records before deduplication by key: the difference is
// what redeliveries (crashes, rebalances) re-sent.
type OutputCounts struct {
	Records    int `json:"records"`
	Duplicates int `json:"duplicates"`
	// Conflicts counts keys that were written with two different values: a
	// toy in two boxes, say. It must be zero.
	Conflicts int `json:"conflicts"`
}

// ReadResults reads the five output topics and deduplicates them by key, as a
// consumer of the packer would.
func ReadResults(ctx context.Context, kc kafkaconf.Config, t Topics) (results.Set, OutputCounts, error) {
	var set results.Set
	var raw OutputCounts
	if err := readInto(ctx, kc, t.Packed, &raw, &set.Packed); err != nil {
		return set, raw, err
	}
	if err := readInto(ctx, kc, t.Unpacked, &raw, &set.Unpacked); err != nil {
		return set, raw, err
	}
	if err := readInto(ctx, kc, t.Spare, &raw, &set.Spare); err != nil {
		return set, raw, err
	}
	if err := readInto(ctx, kc, t.Late, &raw, &set.Late); err != nil {
		return set, raw, err
	}
	var dead []DeadLetter
	if err := readInto(ctx, kc, t.Dead, &raw, &dead); err != nil {
		return set, raw, err
	}
	for _, d := range dead {
		set.Dead = append(set.Dead, results.Dead{Stream: string(d.Stream), Partition: d.Partition, Offset: d.Offset, Reason: string(d.Reason)})
	}
	set.Sort()
	return set, raw, nil
}

func readInto[T any](ctx context.Context, kc kafkaconf.Config, topic string, raw *OutputCounts, out *[]T) error {
	msgs, err := topicread.All(ctx, kc, topic)
	if err != nil {
		return err
	}
	seen := map[string]string{}
	for _, m := range msgs {
		raw.Records++
		k := string(m.Key)
		if prev, ok := seen[k]; ok {
			raw.Duplicates++
			if prev != string(m.Value) {
				raw.Conflicts++
			}
			continue
		}
		seen[k] = string(m.Value)
		var v T
		if err := json.Unmarshal(m.Value, &v); err != nil {
			return fmt.Errorf("decode %s/%d@%d: %w", m.Topic, m.Partition, m.Offset, err)
		}
		*out = append(*out, v)
	}
	return nil
}

// Lag is the number of records the packer's groups have not yet committed,
// over all their inputs (including loops and the tables they read as streams).
// Zero, twice in a row after the elves stopped, means quiescence.
func (p *Packer) Lag(ctx context.Context) (int64, error) {
	admin, err := p.lagAdmin(ctx)
	if err != nil {
		return 0, err
	}
	defer admin.Close()
	lags, err := p.groupLags(ctx, admin)
	var total int64
	for _, l := range lags {
		total += l
	}
	return total, err
}

// lagAdmin connects a client to read the groups' lag with: a reader's, which
// fails within seconds (kafkaconf.Config.NewReaderClient), as its callers
// poll and retry in loops of their own.
func (p *Packer) lagAdmin(ctx context.Context) (*kadm.Client, error) {
	cl, err := p.cfg.Kafka.NewReaderClient(ctx)
	if err != nil {
		return nil, err
	}
	return kadm.NewClient(cl), nil
}

// groupLags is Lag per group, in pipeline order.
func (p *Packer) groupLags(ctx context.Context, admin *kadm.Client) ([]int64, error) {
	c := p.cfg
	inputs := map[string][]string{
		c.clockGroup(): {c.Topics.Toys, c.Topics.Boxes, c.clockGroup() + "-loop"},
		c.slotsGroup(): {c.clockGroup() + "-table"},
	}
	var lags []int64
	for _, group := range c.Groups() {
		lag, err := kafkaconf.GroupLag(ctx, admin, group, inputs[group]...)
		if err != nil {
			return nil, err
		}
		lags = append(lags, lag)
	}
	return lags, nil
}

// WaitQuiet returns once the packer has consumed everything: Lag is zero on
// two polls in a row (kafkaconf.WaitQuiet). Errors from Lag are retried (a
// group coordinator that is still loading offsets after a restart says so for
// a while) until ctx ends; the last one is reported then. If stopped
// delivers, the packer ended early.
func (p *Packer) WaitQuiet(ctx context.Context, every time.Duration, stopped <-chan error) error {
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
			admin, err = p.lagAdmin(ctx)
		}
		if err == nil {
			lags, err = p.groupLags(ctx, admin)
		}
		if err != nil {
			p.log.Debug("lag not available yet", "err", err)
		}
		return lags, err
	}
	// Which stage stalled (the lags are in the groups' order) tells where to look.
	if err := kafkaconf.WaitQuiet(ctx, every, lags, stopped); err != nil {
		return fmt.Errorf("waiting for the packer (groups %v) to finish: %w", p.cfg.Groups(), err)
	}
	return nil
}

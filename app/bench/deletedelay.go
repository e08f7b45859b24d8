package bench

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
)

// deleteDelayKey is the broker setting that delays deleting a deleted
// topic's files. The bench deletes every run's topics when the run is over;
// the broker renames their directories at once and deletes the files this
// long after, in the middle of whatever runs then. Kafka's default is 60 s,
// longer than a run: the run after next would count the deletion of the
// last one's files (for 16 partitions, some 150 directories) in its broker
// CPU.
const deleteDelayKey = "log.segment.delete.delay.ms"

// longDeleteDelay: longer than this, and a run may start before the files of
// the run before it are gone.
const longDeleteDelay = 5 * time.Second

// deleteDelay is the longest deleteDelayKey of kc's brokers, or 0 when no
// broker says.
func deleteDelay(ctx context.Context, kc kafkaconf.Config) (time.Duration, error) {
	adm, err := admin(ctx, kc)
	if err != nil {
		return 0, err
	}
	defer adm.Close()
	brokers, err := adm.ListBrokers(ctx)
	if err != nil {
		return 0, fmt.Errorf("list the brokers: %w", err)
	}
	rcs, err := adm.DescribeBrokerConfigs(ctx, brokers.NodeIDs()...)
	if err != nil {
		return 0, fmt.Errorf("describe the brokers' %s: %w", deleteDelayKey, err)
	}
	return longestDeleteDelay(rcs)
}

func longestDeleteDelay(rcs kadm.ResourceConfigs) (time.Duration, error) {
	var longest time.Duration
	for _, rc := range rcs {
		if rc.Err != nil {
			return 0, fmt.Errorf("describe broker %s's configuration: %w", rc.Name, rc.Err)
		}
		for _, c := range rc.Configs {
			if c.Key != deleteDelayKey || c.Value == nil {
				continue
			}
			ms, err := strconv.ParseInt(*c.Value, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("broker %s: %s = %q: %w", rc.Name, deleteDelayKey, *c.Value, err)
			}
			longest = max(longest, time.Duration(ms)*time.Millisecond)
		}
	}
	return longest, nil
}

// warnDeleteDelay says, once before the runs, when the real broker's CPU is
// measured and its brokers keep deleted topics' files long enough for one
// run to pay for another's.
func (b *Bench) warnDeleteDelay(ctx context.Context) {
	measured := slices.ContainsFunc(b.variants(), func(v Variant) bool {
		if v.Broker != "real" {
			return false
		}
		m, _ := b.brokerMeter(v)
		return m != nil
	})
	if !measured || b.cfg.KeepTopics {
		return
	}
	d, err := deleteDelay(ctx, b.cfg.Real)
	switch {
	case err != nil:
		b.progress("note: could not read the brokers' %s (%v): a run's broker CPU may include deleting an earlier run's files", deleteDelayKey, err)
	case d > longDeleteDelay:
		b.progress("note: the brokers delete a deleted topic's files %s later (%s): a run's broker CPU may include deleting an earlier run's; "+
			"on a broker kept for benchmarks set it to 1000 (scripts/kafka does)", d, deleteDelayKey)
	}
}

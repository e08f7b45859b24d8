package packer

import (
	"context"
	"fmt"
	"hash"
	"log/slog"
	"path/filepath"
	"strconv"
	"time"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
	"golang.org/x/sync/errgroup"

	"github.com/northpole-workshop/northpole/internal/gokaproducer"
	"github.com/northpole-workshop/northpole/internal/gokastore"
	"github.com/northpole-workshop/northpole/internal/kafkaconf"
)

// EnsureTopics creates every topic the packer uses and refuses to go on when an
// existing one has the wrong partition count.
func (p *Packer) EnsureTopics(ctx context.Context) error {
	c := p.cfg
	for _, in := range []string{c.Topics.Toys, c.Topics.Boxes} {
		n, err := kafkaconf.Partitions(c.Kafka, in)
		if err == nil && n != c.Partitions {
			return fmt.Errorf("input topic %q has %d partitions but the packer is configured for %d: "+
				"toys and boxes must be co-partitioned (same count, keyed by size); use --partitions %d or recreate the topic",
				in, n, c.Partitions, n)
		}
	}
	plain := func(name string) kafkaconf.Topic {
		return kafkaconf.Topic{Name: name, Partitions: c.Partitions, Replication: c.Replication}
	}
	loop := func(name string) kafkaconf.Topic {
		t := plain(name)
		t.Configs = map[string]string{
			"cleanup.policy": "delete",
			"retention.ms":   strconv.FormatInt(loopRetention.Milliseconds(), 10),
		}
		return t
	}
	table := func(name string) kafkaconf.Topic {
		t := plain(name)
		t.Configs = map[string]string{
			"cleanup.policy":        "compact",
			"min.compaction.lag.ms": strconv.FormatInt(c.MinCompactionLag.Milliseconds(), 10),
		}
		return t
	}
	topics := []kafkaconf.Topic{
		plain(c.Topics.Toys), plain(c.Topics.Boxes),
		plain(c.Topics.Packed), plain(c.Topics.Unpacked), plain(c.Topics.Spare), plain(c.Topics.Late), plain(c.Topics.Dead),
	}
	for _, it := range c.internalTopics() {
		if it.kind == tableTopic {
			topics = append(topics, table(it.name))
		} else {
			topics = append(topics, loop(it.name))
		}
	}
	return kafkaconf.EnsureTopics(ctx, c.Kafka, topics...)
}

// loopRetention keeps loop records long enough for any realistic backlog;
// goka checks that existing loop topics carry exactly this setting.
const loopRetention = 7 * 24 * time.Hour

// gokaSarama is a fresh sarama config for one goka builder.
func (p *Packer) gokaSarama(group string) *sarama.Config {
	kc := p.cfg.Kafka
	kc.ClientID = "northpole-" + group
	cfg := kc.Sarama()
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{goka.CopartitioningStrategy}
	if p.cfg.InstanceID != "" {
		cfg.Consumer.Group.InstanceId = p.cfg.InstanceID
	}
	return cfg
}

// options are the goka options of one group: explicit sarama configs (never
// goka's global one), our topic settings, storage and hasher.
func (p *Packer) options(group string, hasher bool) []goka.ProcessorOption {
	tmc := goka.NewTopicManagerConfig()
	tmc.Table.Replication = int(p.cfg.Replication)
	tmc.Stream.Replication = int(p.cfg.Replication)
	tmc.Stream.Retention = loopRetention
	tmc.MismatchBehavior = goka.TMConfigMismatchBehaviorFail
	sb := gokastore.Memory()
	if p.cfg.StorageDir != "" {
		sb = gokastore.FreshLevelDB(filepath.Join(p.cfg.StorageDir, group))
	}
	seq := newSequencer()
	p.seqs = append(p.seqs, seq)
	kc := p.cfg.Kafka
	kc.ClientID = "northpole-" + group
	producer := gokaproducer.Builder(append(kc.Kgo(), gokaproducer.Logger(p.log.With("group", group))))
	opts := []goka.ProcessorOption{
		goka.WithConsumerGroupBuilder(goka.ConsumerGroupBuilderWithConfig(p.gokaSarama(group))),
		goka.WithProducerBuilder(func(brokers []string, clientID string, hasher func() hash.Hash32) (goka.Producer, error) {
			inner, err := producer(brokers, clientID, hasher)
			if err != nil {
				return nil, err
			}
			return seq.producer(inner), nil
		}),
		goka.WithContextWrapper(seq.barrier),
		goka.WithTopicManagerBuilder(goka.TopicManagerBuilderWithConfig(p.gokaSarama(group), tmc)),
		goka.WithConsumerSaramaBuilder(goka.SaramaConsumerBuilderWithConfig(p.gokaSarama(group))),
		goka.WithStorageBuilder(sb),
		goka.WithLogger(gokaLogger{p.log.With("group", group)}),
	}
	if hasher {
		opts = append(opts, goka.WithHasher(sizeHasher))
	}
	if group == p.cfg.dedupeGroup() {
		// A null value (a tombstone) is a dead letter by the contract; goka's
		// default drops it before any callback runs. Only the input stage gets
		// nil messages: the later stages always write values.
		opts = append(opts, goka.WithNilHandling(goka.NilProcess))
	}
	return opts
}

// Run creates the topics and runs the three groups until ctx ends or one of
// them fails. A cancelled ctx is a clean stop and returns nil.
func (p *Packer) Run(ctx context.Context) error {
	if err := p.EnsureTopics(ctx); err != nil {
		// Stopped before it started: the same clean stop as below.
		return unlessStopped(ctx, err)
	}
	lim, err := p.readLimits(ctx)
	if err != nil {
		return unlessStopped(ctx, err)
	}
	p.lim, p.seqs = lim, nil
	graphs := p.Graphs()
	// The slots stage does not need the size hasher: slot logic does not depend
	// on order, so its keys spread over all partitions.
	hashed := []bool{true, true, false}
	g, gctx := errgroup.WithContext(ctx)
	for i, gg := range graphs {
		group := string(gg.Group())
		proc, err := goka.NewProcessor(p.cfg.Kafka.Brokers, gg, p.options(group, hashed[i])...)
		if err != nil {
			return fmt.Errorf("create goka processor %s: %w", group, err)
		}
		g.Go(func() error {
			p.log.Info("packer stage starting", "group", group)
			if err := proc.Run(gctx); err != nil {
				return fmt.Errorf("goka processor %s: %w", group, err)
			}
			return nil
		})
	}
	if err = unlessStopped(ctx, g.Wait()); err == nil {
		return nil
	}
	// goka reports every message that could not commit after a failed
	// write; the first failure is the one that matters.
	for _, s := range p.seqs {
		if f := s.firstFailure(); f != nil {
			return fmt.Errorf("a write failed, so the packer stopped before committing the record it was for "+
				"(it is processed again when the packer restarts): %w", f)
		}
	}
	return err
}

// unlessStopped is err, or nil once ctx is done: a stop asked for is clean,
// whatever the goka processors said while they shut down.
func unlessStopped(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil //nolint:nilerr // the stop was asked for: not an error
	}
	return err
}

// gokaLogger sends goka's chatter to slog at debug level.
type gokaLogger struct{ l *slog.Logger }

func (g gokaLogger) Print(v ...any)                 { g.l.Debug(fmt.Sprint(v...)) }
func (g gokaLogger) Println(v ...any)               { g.l.Debug(fmt.Sprint(v...)) }
func (g gokaLogger) Printf(format string, v ...any) { g.l.Debug(fmt.Sprintf(format, v...)) }

package packer

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"path/filepath"
	"strconv"
	"time"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
	"github.com/lovoo/goka/storage"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/northpole-workshop/northpole/internal/gokakit"
	"github.com/northpole-workshop/northpole/internal/gokastore"
	"github.com/northpole-workshop/northpole/internal/kafkaadmin"
	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/stopping"
)

// EnsureTopics creates every topic the packer uses and refuses to go on when an
// existing input topic has another partition count (a *PartitionsError).
func (p *Packer) EnsureTopics(ctx context.Context) error {
	c := p.cfg
	for _, in := range []string{c.Topics.Toys, c.Topics.Boxes} {
		n, err := kafkaadmin.Partitions(ctx, c.Kafka, in)
		if err == nil && n != c.Partitions {
			return &PartitionsError{Topic: in, Partitions: n, Configured: c.Partitions}
		}
	}
	plain := func(name string) kafkaadmin.Topic {
		return kafkaadmin.Topic{Name: name, Partitions: c.Partitions, Replication: c.Replication}
	}
	loop := func(name string) kafkaadmin.Topic {
		t := plain(name)
		t.Configs = map[string]string{
			"cleanup.policy": "delete",
			"retention.ms":   strconv.FormatInt(loopRetention.Milliseconds(), 10),
		}
		return t
	}
	// The clock table's records are restored one by one (recoverClock),
	// and a restart replays the decisions of records it did not commit: no
	// record may be compacted or deleted by age or size. The records no restart needs
	// are deleted by the packer itself (horizon.go).
	// Segments of 32 MiB: the broker frees a deleted record's disk only
	// with its whole segment, once the log start has passed the segment's
	// end (and its retention check has run), never the active segment's.
	table := func(name string) kafkaadmin.Topic {
		t := plain(name)
		t.Configs = map[string]string{"cleanup.policy": "delete", "retention.ms": "-1", "retention.bytes": "-1", "segment.bytes": strconv.Itoa(tableSegmentBytes)}
		return t
	}
	topics := []kafkaadmin.Topic{
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
	return kafkaadmin.EnsureTopics(ctx, c.Kafka, topics...)
}

// PartitionsError is an input topic whose partition count is not the
// packer's (Config.Partitions). toys and boxes must be co-partitioned: the
// same count, keyed by line, or a line's toys and boxes meet in different
// partitions.
type PartitionsError struct {
	Topic      string
	Partitions int32 // the topic's
	Configured int32 // the packer's
}

func (e *PartitionsError) Error() string {
	return fmt.Sprintf("input topic %q has %d partitions but the packer is configured for %d: "+
		"toys and boxes must be co-partitioned (same count, keyed by line); configure %d partitions or recreate the topic",
		e.Topic, e.Partitions, e.Configured, e.Partitions)
}

// tableSegmentBytes is the segment size of the packer's tables.
const tableSegmentBytes = 32 << 20

// loopRetention keeps loop records long enough for any realistic backlog;
// goka checks that existing loop topics carry exactly this setting.
const loopRetention = 7 * 24 * time.Hour

// options are the goka options of the group: the common ones (gokakit) with
// our topic settings, and what only the packer needs: its storage (a
// directory, and access to its table's other keys), writes in
// order (its producer's sequencer, inorder.go), send spans that end
// when goka is told of Kafka's answer (tracing.go), static membership
// and tombstones delivered.
func (p *Packer) options() ([]goka.ProcessorOption, *sequencer) {
	group := p.cfg.clockGroup()
	kc := p.cfg.Kafka
	log := p.log.With("group", group)
	tm := gokakit.TopicConfig(p.cfg.Replication)
	tm.Stream.Retention = loopRetention
	tm.MismatchBehavior = goka.TMConfigMismatchBehaviorFail
	tm.Table.CleanupPolicy = "delete" // EnsureTopics' tables, which goka checks
	seq := newSequencer()
	wopts := gokakit.WriterOptions(kc, group, log)
	// The consumer group is the packer's own: static membership, and the
	// aligner's pauses (align.go).
	sc := gokakit.Sarama(kc, group)
	sc.Consumer.Group.InstanceId = p.cfg.InstanceID
	sc.Consumer.Fetch.Default = p.cfg.FetchPerPartition()
	cgb := p.aligner.capture(goka.ConsumerGroupBuilderWithConfig(sc))
	opts := append(gokakit.Options(kc, group, tm, log),
		goka.WithConsumerGroupBuilder(cgb),
		goka.WithProducerBuilder(func(brokers []string, _ string, hasher func() hash.Hash32) (goka.Producer, error) {
			w, err := gokakit.NewWriter(wopts, brokers, hasher)
			if err != nil {
				return nil, err
			}
			return p.trace.Producer(seq.producer(w, p.metrics)), nil
		}),
		goka.WithContextWrapper(seq.wrap),
		// The consumer that recovers the tables fetches as the group does.
		goka.WithConsumerSaramaBuilder(goka.SaramaConsumerBuilderWithConfig(p.recoveryConfig(group))),
	)
	store := gokastore.Memory()
	if p.cfg.StorageDir != "" {
		store = gokastore.FreshLevelDB(filepath.Join(p.cfg.StorageDir, group), nil)
	}
	// A null value (a tombstone) is a dead letter by the contract; goka's
	// default drops it before any callback runs. The loop's values are never
	// null.
	return append(opts, goka.WithStorageBuilder(p.storageBuilder(store)),
		goka.WithNilHandling(goka.NilProcess), goka.WithUpdateCallback(p.recoverClock)), seq
}

// recoveryConfig is the sarama configuration of the consumer that
// recovers a group's table, with the group's fetch size.
func (p *Packer) recoveryConfig(group string) *sarama.Config {
	sc := gokakit.Sarama(p.cfg.Kafka, group)
	sc.Consumer.Fetch.Default = p.cfg.FetchPerPartition()
	return sc
}

// storageBuilder is inner, through which the group also finds the storage
// of its table at keys other than a callback's own (tablestores.go). Tests that
// replace the storage (goka's tester) wrap theirs with it too.
func (p *Packer) storageBuilder(inner storage.Builder) storage.Builder {
	return p.clockStores.builder(inner)
}

// Run creates the topics and runs the group until ctx ends or it fails for
// good. A cancelled ctx is a clean stop and returns nil. When the group
// stops on a broker's passing state (a leader or coordinator moved, a
// broker restarting), it starts again from its committed offsets
// (gokakit.Supervise), until such failures go on for longer than the Kafka
// retry window without the group getting to run.
func (p *Packer) Run(ctx context.Context) error {
	if err := p.EnsureTopics(ctx); err != nil {
		// Stopped before it started: the same clean stop as below.
		return unlessStopped(ctx, err)
	}
	lim, err := p.readLimits(ctx)
	if err != nil {
		return unlessStopped(ctx, err)
	}
	p.lim = lim
	signalled := false // Config.Ready was called
	err = gokakit.Supervise(ctx, p.log, p.cfg.Kafka.WithDefaults().RetryFor, func(ctx context.Context) (bool, error) {
		ran, err := p.runGroup(ctx, !signalled)
		signalled = signalled || ran
		return ran, err
	})
	if errors.Is(err, stopping.ErrIncomplete) {
		return fmt.Errorf("%w: what it read since its last commit is processed again at the next start, and nothing is lost or written twice", err)
	}
	return err
}

// runGroup runs the group once, until ctx ends or it fails: ran says
// whether it got to run (and, with signal, Config.Ready was called).
func (p *Packer) runGroup(ctx context.Context, signal bool) (ran bool, err error) {
	p.newStores()
	p.newAligner()
	// One client for the run reads the committed offsets of every
	// partition goka opens.
	cl, err := p.client()
	if err != nil {
		return false, fmt.Errorf("kafka client for the committed offsets: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	p.clockStores.open = func(partition int32, part *tablePart) error {
		at, err := p.committedInputs(ctx, adm, partition)
		part.committed = at
		return err
	}
	group := p.cfg.clockGroup()
	opts, seq := p.options()
	proc, err := goka.NewProcessor(p.cfg.Kafka.Brokers, p.Graph(), opts...)
	if err != nil {
		return false, fmt.Errorf("create goka processor %s: %w", group, err)
	}
	p.proc.Store(proc)
	defer p.proc.Store(nil)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		p.log.Info("packer starting", "group", group)
		if err := proc.Run(gctx); err != nil {
			return fmt.Errorf("goka processor %s: %w", group, err)
		}
		return nil
	})
	running := make(chan bool, 1)
	aligned := make(chan struct{})
	go func() {
		defer close(aligned)
		p.align(gctx)
	}()
	cleaned := make(chan struct{})
	go func() {
		defer close(cleaned)
		up := isRunning(gctx, proc)
		if up && signal && p.cfg.Ready != nil {
			p.cfg.Ready()
		}
		running <- up
		if up && p.cfg.CleanEvery > 0 {
			// Only once the group has recovered: a group that is still
			// reading its table must not see its start deleted.
			p.clean(gctx, p.cfg.CleanEvery)
		}
	}()
	err = unlessStopped(ctx, g.Wait())
	ran = <-running // Wait has cancelled gctx, so this does not wait long
	<-cleaned
	<-aligned
	if err == nil {
		return ran, nil
	}
	// goka reports every message that could not commit after a failed
	// write; the first failure is the one that matters.
	if f := seq.firstFailure(); f != nil {
		return ran, fmt.Errorf("a write failed, so the packer stopped before committing the record it was for "+
			"(it is processed again when the packer starts again): %w", f)
	}
	return ran, err
}

// client is a franz-go client of the packer's own, for what it does beside
// goka: reading the group's committed offsets, cleaning the clock table.
func (p *Packer) client() (*kgo.Client, error) {
	kc := p.cfg.Kafka
	return kgo.NewClient(append(kc.Kgo(), kgo.SeedBrokers(kc.Brokers...), kafkaconf.KgoLogger(p.log))...)
}

// isRunning reports whether proc came to run, recovered, before ctx ended
// (goka's wait also returns for a processor that stopped).
func isRunning(ctx context.Context, proc *goka.Processor) bool {
	if err := proc.WaitForReadyContext(ctx); err != nil || !proc.Recovered() {
		return false
	}
	return ctx.Err() == nil
}

// unlessStopped is err, or nil once ctx is done: a stop asked for is clean,
// whatever the goka processors said while they shut down.
func unlessStopped(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil //nolint:nilerr // the stop was asked for: not an error
	}
	return err
}

// Package gokakit is what every goka processor of northpole (the packer,
// the sleigh, the bench's one-hop floor) is built with: goka's options from
// a kafkaconf.Config, a group name and a logger (Options), a goka.Producer
// on franz-go's kgo client (Producer, on a Writer), and goka's log in slog
// (Logger). Each processor appends only what is its own (the packer: its
// producer, which keeps its writes in order on a Writer, nil handling, the
// storage of the tables it joins; a storage directory).
//
// Options puts the consumer group, the consumers and the topic manager on
// sarama configs of their own, with goka's co-partitioning strategy, and the
// tables in memory (gokastore.Memory). The producer (producer.go) partitions
// exactly as sarama's hash partitioner with goka's hasher; goka still
// consumes with sarama. Supervise (restart.go) starts processors that
// stopped on a broker error again, and BrokerTrouble tells such errors from
// the others.
package gokakit

import (
	"fmt"
	"log/slog"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/northpole-workshop/northpole/internal/gokastore"
	"github.com/northpole-workshop/northpole/internal/kafkaconf"
)

// Options are the goka options of group: its consumers, consumer group and
// topic manager (tm says how goka creates or checks the topics it needs) on
// sarama configs of their own, producing through franz-go (Producer), tables
// in memory (gokastore.Memory) and goka's log in log (Logger). goka applies
// options in order, so a builder a caller appends (storage, producer,
// consumer group) replaces the one of its kind here.
//
// Every builder gets its own sarama config, never goka's global one: goka's
// builders set the client id on the config they are given, so a shared one
// would be a data race.
func Options(kc kafkaconf.Config, group string, tm *goka.TopicManagerConfig, log *slog.Logger) []goka.ProcessorOption {
	return []goka.ProcessorOption{
		goka.WithConsumerGroupBuilder(goka.ConsumerGroupBuilderWithConfig(Sarama(kc, group))),
		goka.WithConsumerSaramaBuilder(goka.SaramaConsumerBuilderWithConfig(Sarama(kc, group))),
		goka.WithTopicManagerBuilder(TopicManager(kc, group, tm)),
		goka.WithProducerBuilder(Producer(WriterOptions(kc, group, log))),
		goka.WithStorageBuilder(gokastore.Memory()),
		goka.WithLogger(Logger(log)),
	}
}

// Sarama is a new sarama config for one goka builder of group. Its balance
// strategy is goka's co-partitioning one, not sarama's default: a member
// then gets the same partitions of every input and table of the group, which
// a goka group relies on.
func Sarama(kc kafkaconf.Config, group string) *sarama.Config {
	cfg := withClientID(kc, group).Sarama()
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{goka.CopartitioningStrategy}
	return cfg
}

// TopicConfig is goka's topic manager config with replication replicas for
// the topics it creates: only those that do not exist yet (the packer and the
// sleigh create theirs first; the bench's hop leaves its table to goka).
func TopicConfig(replication int16) *goka.TopicManagerConfig {
	tm := goka.NewTopicManagerConfig()
	tm.Table.Replication = int(replication)
	tm.Stream.Replication = int(replication)
	return tm
}

// TopicManager builds goka's topic manager for group with tm.
func TopicManager(kc kafkaconf.Config, group string, tm *goka.TopicManagerConfig) goka.TopicManagerBuilder {
	return goka.TopicManagerBuilderWithConfig(Sarama(kc, group), tm)
}

// WriterOptions are the franz-go options of group's Writer: kc's, with the
// group's client id, and the client's warnings and errors in log (nil:
// discarded).
func WriterOptions(kc kafkaconf.Config, group string, log *slog.Logger) []kgo.Opt {
	return append(withClientID(kc, group).Kgo(), kafkaconf.KgoLogger(orDiscard(log)))
}

// ClientID is the client id of group's Kafka clients: a broker's logs and
// quotas, and the processors' spans (messaging.client.id), tell the groups
// apart by it.
func ClientID(group string) string { return "northpole-" + group }

func withClientID(kc kafkaconf.Config, group string) kafkaconf.Config {
	kc.ClientID = ClientID(group)
	return kc
}

// Logger sends goka's chatter to log at debug level (nil: discarded).
func Logger(log *slog.Logger) goka.Logger { return gokaLogger{orDiscard(log)} }

type gokaLogger struct{ l *slog.Logger }

func (g gokaLogger) Print(v ...any)                 { g.l.Debug(fmt.Sprint(v...)) }
func (g gokaLogger) Println(v ...any)               { g.l.Debug(fmt.Sprint(v...)) }
func (g gokaLogger) Printf(format string, v ...any) { g.l.Debug(fmt.Sprintf(format, v...)) }

func orDiscard(log *slog.Logger) *slog.Logger {
	if log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return log
}

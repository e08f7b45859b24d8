// Package kafkaconf is the one place that builds Kafka client configuration
// for northpole: franz-go options for every client of ours (the elves'
// producer and goka's, and the short-lived readers that read topics,
// administer them and measure lag: NewReaderClient; the administration
// itself is internal/kafkaadmin), and *sarama.Config for what goka itself runs on sarama (its
// consumers and topic manager). Each goka builder asks for a fresh
// *sarama.Config: goka's *BuilderWithConfig helpers mutate the config they
// are given, so sharing one between builders is a data race.
//
// One file per concern: kafkaconf.go the Config, its validation and the
// sarama side (idempotent producer, retries by time turned into counts, the
// protocol version, DefaultVersion); kgo.go the franz-go side (Kgo for the
// producers, KgoLogger, which logs the client through kslog on the command's
// slog logger, so that --log-level debug shows kgo's debug output, and the
// fail-fast readers of NewReaderClient); security.go TLS and SASL
// (Security); env.go the settings a command leaves unset, taken from
// $NORTHPOLE_BROKERS and $NORTHPOLE_KAFKA_* in one place (Config.FromEnv).
// The defaults of what is still unset are filled in one method,
// Config.WithDefaults.
package kafkaconf

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/IBM/sarama"
)

// DefaultVersion is the protocol version northpole speaks. Apache Kafka 4
// removed request versions older than 2.1, and goka's default (2.0) is below
// that floor. sarama negotiates down to what a broker offers, never up, so this
// must not exceed the oldest broker we support (Kafka 3.9 and 4.x, kfake).
var DefaultVersion = sarama.V3_9_0_0

// Config says how to reach Kafka. The zero value plus Brokers is usable.
type Config struct {
	Brokers  []string
	ClientID string
	// Version of the Kafka protocol; zero means DefaultVersion.
	Version sarama.KafkaVersion
	// FlushFrequency bounds how long a produced record waits in the client's
	// buffer to be batched with others (kgo's linger). goka's default of
	// 100 ms makes every hop of a pipeline 100 ms slow; 0 means
	// DefaultFlushFrequency.
	FlushFrequency time.Duration
	// Compression of the batches the producers send: none, gzip, snappy,
	// lz4 or zstd; "" means DefaultCompression. The broker decompresses
	// every compressed batch to validate it, and a consumer decompresses
	// it again.
	Compression string
	// CommitEvery is how often a goka processor commits the offsets it has
	// marked (sarama's auto-commit interval); 0 means DefaultCommitEvery.
	// A crash processes again what came after the last commit.
	CommitEvery time.Duration
	// FetchMin is how many bytes a goka consumer's fetch asks the broker to
	// gather before it answers (fetch.min.bytes), and FetchWait how long the
	// broker may wait for them (fetch.max.wait.ms, whole milliseconds); 0
	// means DefaultFetchMin and DefaultFetchWait. More bytes a fetch means
	// fewer fetches for the broker to serve, and every record waiting up to
	// FetchWait on the way in.
	FetchMin  int32
	FetchWait time.Duration
	// RetryFor is how long a long-lived client keeps retrying a produce or a
	// metadata request while a broker is unreachable (a restart, a leader
	// election) before it reports the record as not written, and how long
	// goka processors stopped by broker errors are started again
	// (gokakit.Supervise). 0 means DefaultRetryFor. Start-up checks do not
	// wait this long.
	RetryFor time.Duration
	// Security: TLS and SASL. Run Security.Resolve once before use.
	Security Security
}

// DefaultRetryFor rides out a broker restart. A restart usually takes about
// ten seconds, but a broker that does not finish its controlled shutdown is
// killed after 30 s and then recovers its logs: CI once saw 50 s.
const DefaultRetryFor = 2 * time.Minute

// DefaultFlushFrequency bounds how long a produced record waits to be
// batched. Below a few thousand records a second every batch leaves when
// its linger ends, so the broker's work is per linger, not per record: on
// Apache Kafka 4.1.1 at 2,000 records/s, 15 ms against 5 ms halved the
// packer's and the broker's CPU per event, and the p99 from an input to its
// packed row (three writes: the elves', the clock table's, the row's) went
// from 19-29 to 34-41 ms, within the 50 ms goal (PERFORMANCE.md, "Live").
const DefaultFlushFrequency = 15 * time.Millisecond

// DefaultCompression: snappy when it makes a batch smaller, else none (kgo's
// default). On Apache Kafka 4.1.1 uncompressed batches cost the packer and
// the broker more CPU per event with 4 partitions, zstd more in both layouts,
// and lz4 about a tenth less with 16 partitions, the same with 4, for its
// 4 MiB blocks in every client's memory (PERFORMANCE.md, "The broker's
// share").
const DefaultCompression = "snappy"

// DefaultCommitEvery: commits and the group's heartbeats were about 1 % of
// the broker's CPU at 2,000 records/s (PERFORMANCE.md), so a longer interval
// buys little and makes a crash process more again.
const DefaultCommitEvery = 200 * time.Millisecond

// DefaultFetchMin and DefaultFetchWait are sarama's: a fetch is answered
// as soon as a record is there, and an idle one after half a second. At
// 2,000 records/s a fetch that waited for 16 or 64 KiB made the p99 from an
// input to its packed row worse than the same wait spent lingering
// (PERFORMANCE.md, "Live").
const (
	DefaultFetchMin  = 1
	DefaultFetchWait = 500 * time.Millisecond
)

// Compressions are the values Config.Compression takes.
var Compressions = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// retryBackoff is the pause between retries of produce and metadata requests.
const retryBackoff = 500 * time.Millisecond

// Validate reports every configuration error, in words a user can act on,
// each a *SettingsError (Settings lists the settings of them all).
func (c Config) Validate() error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, settingsErr("no brokers given (want host:port[,host:port])", "Brokers"))
	}
	for _, b := range c.Brokers {
		if strings.TrimSpace(b) == "" || !strings.Contains(b, ":") {
			errs = append(errs, settingsErr(fmt.Sprintf("broker address %q is not host:port", b), "Brokers"))
		}
	}
	return errors.Join(append(errs, c.Security.Validate(), c.validDurations())...)
}

// validDurations is the part of Validate that FromEnv checks too: the
// durations, which a command has whole before it knows its brokers.
func (c Config) validDurations() error {
	var errs []error
	if c.FlushFrequency < 0 {
		errs = append(errs, settingsErr(fmt.Sprintf("flush frequency %v is negative", c.FlushFrequency), "FlushFrequency"))
	}
	if c.RetryFor < 0 {
		errs = append(errs, settingsErr(fmt.Sprintf("retry duration %v is negative", c.RetryFor), "RetryFor"))
	}
	if c.CommitEvery < 0 {
		errs = append(errs, settingsErr(fmt.Sprintf("commit interval %v is negative", c.CommitEvery), "CommitEvery"))
	}
	if c.FetchMin < 0 {
		errs = append(errs, settingsErr(fmt.Sprintf("fetch minimum %d bytes is negative", c.FetchMin), "FetchMin"))
	}
	if c.FetchWait < 0 || c.FetchWait%time.Millisecond != 0 {
		errs = append(errs, settingsErr(fmt.Sprintf("fetch wait %v is not a whole number of milliseconds >= 0", c.FetchWait), "FetchWait"))
	}
	if c.Compression != "" && !slices.Contains(Compressions, c.Compression) {
		errs = append(errs, settingsErr(fmt.Sprintf("compression %q is not one of %s", c.Compression, strings.Join(Compressions, ", ")), "Compression"))
	}
	return errors.Join(errs...)
}

// SettingsError is a Config that cannot work: a setting, or settings that do
// not go together. Its text names the settings as what they mean; Settings
// names them as Config's fields ("Brokers", "Security.SASLUser"), so that a
// program can say which of its own flags or variables to fix.
type SettingsError struct {
	Problem  string
	Settings []string
}

func (e *SettingsError) Error() string { return "kafka: " + e.Problem }

func settingsErr(problem string, settings ...string) error {
	return &SettingsError{Problem: problem, Settings: settings}
}

// Settings are the settings every *SettingsError in err names, in order and
// once each: Validate joins one per problem.
func Settings(err error) []string {
	var out []string
	var walk func(error)
	walk = func(err error) {
		// A walk of the whole tree, each wrapper opened in turn: errors.As
		// finds only the first *SettingsError.
		switch e := err.(type) { //nolint:errorlint // see above
		case nil:
		case *SettingsError:
			for _, s := range e.Settings {
				if !slices.Contains(out, s) {
					out = append(out, s)
				}
			}
		case interface{ Unwrap() []error }:
			for _, inner := range e.Unwrap() {
				walk(inner)
			}
		default:
			walk(errors.Unwrap(err))
		}
	}
	walk(err)
	return out
}

// SplitBrokers turns "a:9092, b:9092" into a list, dropping empty entries.
func SplitBrokers(s string) []string {
	var out []string
	for _, b := range strings.Split(s, ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	return out
}

// Sarama returns a new *sarama.Config for one goka builder (Kgo is its
// franz-go counterpart). Producers are idempotent
// (acks=all, one request in flight per broker): the packer's correctness under
// crashes relies on each partition's writes becoming durable in the order they
// were sent, without gaps. See docs/ARCHITECTURE.md, "Why replays are harmless".
func (c Config) Sarama() *sarama.Config {
	c = c.WithDefaults()
	cfg := sarama.NewConfig()
	cfg.Version = c.Version
	cfg.ClientID = c.ClientID
	cfg.Metadata.RefreshFrequency = 30 * time.Second

	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	// Retrying for RetryFor lets every client ride through a broker restart
	// instead of failing. sarama counts retries, not time: convert.
	retries := c.retries()
	cfg.Metadata.Retry.Max = retries
	cfg.Metadata.Retry.Backoff = retryBackoff
	cfg.Producer.Retry.Max = retries
	cfg.Producer.Retry.Backoff = retryBackoff
	cfg.Producer.Partitioner = sarama.NewHashPartitioner // FNV-1a, as goka
	cfg.Producer.Flush.Frequency = c.FlushFrequency
	cfg.Producer.Flush.Bytes = 1 << 20

	cfg.Consumer.Return.Errors = true
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Interval = c.CommitEvery
	cfg.Consumer.Fetch.Min = c.FetchMin
	cfg.Consumer.MaxWaitTime = c.FetchWait
	cfg.Consumer.IsolationLevel = sarama.ReadUncommitted
	c.Security.apply(cfg)
	return cfg
}

// DefaultClientID is the client id of a Config that names none.
const DefaultClientID = "northpole"

// WithDefaults is c with every setting it leaves at zero that has a
// default set to it: ClientID, Version, FlushFrequency, Compression,
// CommitEvery, FetchMin, FetchWait and RetryFor. Every
// client built from c is built from this, so a default is decided here
// only.
func (c Config) WithDefaults() Config {
	if c.ClientID == "" {
		c.ClientID = DefaultClientID
	}
	if c.Version == (sarama.KafkaVersion{}) {
		c.Version = DefaultVersion
	}
	if c.FlushFrequency == 0 {
		c.FlushFrequency = DefaultFlushFrequency
	}
	if c.RetryFor == 0 {
		c.RetryFor = DefaultRetryFor
	}
	if c.Compression == "" {
		c.Compression = DefaultCompression
	}
	if c.CommitEvery == 0 {
		c.CommitEvery = DefaultCommitEvery
	}
	if c.FetchMin == 0 {
		c.FetchMin = DefaultFetchMin
	}
	if c.FetchWait == 0 {
		c.FetchWait = DefaultFetchWait
	}
	return c
}

// retries is RetryFor (resolved) in retries of retryBackoff (at least one).
func (c Config) retries() int {
	return max(1, int((c.WithDefaults().RetryFor+retryBackoff-1)/retryBackoff))
}

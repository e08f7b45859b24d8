package kafkaconf

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"github.com/twmb/franz-go/plugin/kslog"
)

// ProducerMaxBytes is the largest record batch, and so the largest record,
// that the producers Kgo configures will send; a record that does not fit in
// it alone fails with MESSAGE_TOO_LARGE before it reaches a broker. Writers
// whose records grow with their input size them with it (and with each
// topic's max.message.bytes, see kafkaadmin.MaxMessageBytes).
const ProducerMaxBytes = 1 << 20

// Kgo returns options for a long-lived franz-go client that produces (the
// elves', goka's through internal/gokakit): the client id and security
// of a Sarama() config, idempotent writes with acks=all, records batched for
// at most FlushFrequency, and retried for RetryFor before they fail. Brokers
// and the partitioner are left to the caller.
func (c Config) Kgo() []kgo.Opt {
	c = c.WithDefaults()
	retryFor := c.RetryFor
	opts := []kgo.Opt{
		kgo.ClientID(c.ClientID),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(c.FlushFrequency),
		kgo.ProducerBatchMaxBytes(ProducerMaxBytes),
		// A codec sends uncompressed a batch it does not make smaller.
		kgo.ProducerBatchCompression(compression(c.Compression), kgo.NoCompression()),
		kgo.RecordDeliveryTimeout(retryFor),
		// kgo fails a record after four "unknown topic" answers by default.
		// Our topics exist before anything is written to them, and a broker
		// that has just restarted can give that answer for a while: retry
		// for RetryFor instead, as the sarama config's clients do.
		kgo.UnknownTopicRetries(-1),
		kgo.RetryTimeout(retryFor),
		kgo.MetadataMaxAge(30 * time.Second),
		minMetadataAge,
	}
	return append(opts, c.Security.kgoOpts()...)
}

// KgoLogger sends a kgo client's log to l, at the levels l has enabled:
// kslog maps them both ways (l at debug asks kgo for its debug output, and
// each kgo level is logged at slog's). Without it kgo's retries are silent,
// and a broker restart a producer rides out would show nowhere. Every
// record says it comes from kgo, as kgo's messages do not.
func KgoLogger(l *slog.Logger) kgo.Opt { return kgo.WithLogger(kslog.New(l.With("client", "kgo"))) }

// minMetadataAge lets a client refresh its metadata every retryBackoff, as
// sarama's do, instead of kgo's 5 s. A write answered NOT_LEADER waits for a
// refresh: Apache Kafka gives that answer for a moment after a topic is
// created (its metadata already names the leader, which has not yet loaded
// the partition) and while a leader moves, and each write to a new topic in
// the tests took 5 s more.
var minMetadataAge = kgo.MetadataMinAge(retryBackoff)

// readerRetries is how many times a short-lived reader retries a request, or
// its first connection, readerBackoff apart: enough for a leader that moves,
// few enough that an unreachable broker or a wrong password is reported
// within seconds.
const readerRetries = 3

// readerBackoff is the pause between a reader's retries.
const readerBackoff = retryBackoff

// reader returns the options of a short-lived reader (see NewReaderClient):
// Kgo's client id and security, the seed brokers, and readerRetries instead
// of RetryFor. A long-lived client retries for RetryFor (minutes) to ride
// out a broker restart; a reader with that setting would answer a missing
// topic or an unreachable Kafka only when its caller's deadline ends, and a
// command without one (compare, the demo) would appear to hang. Readers
// retry, where they retry at all, in their own loops (kafkaadmin.WaitQuiet).
func (c Config) reader() []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.Brokers...),
		kgo.ClientID(c.WithDefaults().ClientID),
		kgo.RequestRetries(readerRetries),
		kgo.RetryBackoffFn(func(int) time.Duration { return readerBackoff }),
		minMetadataAge,
	}
	return append(opts, c.Security.kgoOpts()...)
}

// kgoOpts is the security part of Kgo and reader.
func (s Security) kgoOpts() []kgo.Opt {
	var opts []kgo.Opt
	if s.TLS {
		tc := s.tlsConfig
		if tc == nil {
			tc = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		opts = append(opts, kgo.DialTLSConfig(tc.Clone()))
	}
	switch strings.ToUpper(s.SASLMechanism) {
	case SASLPlain:
		opts = append(opts, kgo.SASL(plain.Auth{User: s.SASLUser, Pass: s.SASLPassword}.AsMechanism()))
	case SASLScramSHA256:
		opts = append(opts, kgo.SASL(scram.Auth{User: s.SASLUser, Pass: s.SASLPassword}.AsSha256Mechanism()))
	case SASLScramSHA512:
		opts = append(opts, kgo.SASL(scram.Auth{User: s.SASLUser, Pass: s.SASLPassword}.AsSha512Mechanism()))
	}
	return opts
}

// NewReaderClient connects a short-lived reader: topicread, topic
// administration, lag, and the clients compare, bench and the demo open to
// read topics, offsets or a group's lag. Its requests are retried a few
// times, not for RetryFor (see reader), and it pings the brokers before it
// returns, so that an unreachable Kafka, a wrong TLS setting or password
// is reported here, in words a user can act on, rather than by whatever
// request comes first. It gives up when ctx is done. Wrap it in
// kadm.NewClient for administration; closing either closes both.
func (c Config) NewReaderClient(ctx context.Context) (*kgo.Client, error) {
	cl, err := kgo.NewClient(c.reader()...)
	if err != nil {
		return nil, fmt.Errorf("kafka client for %v: %w", c.Brokers, err)
	}
	for attempt := 0; ; attempt++ {
		err = cl.Ping(ctx)
		var kafkaErr *kerr.Error
		// A broker's answer (a refused password) will not change.
		if err == nil || attempt == readerRetries || errors.As(err, &kafkaErr) || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(readerBackoff):
		}
	}
	if err != nil {
		cl.Close()
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("connect to kafka %v: %w", c.Brokers, c.explain(err))
	}
	return cl, nil
}

// compression is the kgo codec of a Config.Compression that Validate
// accepted.
func compression(name string) kgo.CompressionCodec {
	switch name {
	case "gzip":
		return kgo.GzipCompression()
	case "snappy":
		return kgo.SnappyCompression()
	case "lz4":
		return kgo.Lz4Compression()
	case "zstd":
		return kgo.ZstdCompression()
	default:
		return kgo.NoCompression()
	}
}

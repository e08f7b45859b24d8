package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
)

// TestKafkaOptionsConfig: the flags reach the config, $NORTHPOLE_BROKERS
// stands in for --brokers except where the default is the in-process Kafka,
// and a setting that cannot work, from a flag or a variable, is a usage
// error naming both (kafkaconf's TestFromEnv has the rules).
func TestKafkaOptionsConfig(t *testing.T) {
	t.Setenv(kafkaconf.EnvBrokers, "env:9092")
	t.Setenv(kafkaconf.EnvRetryFor, "")
	t.Setenv(kafkaconf.EnvTLS, "")
	kc, err := (&kafkaOptions{brokers: "k:9092", retryFor: time.Minute}).config("test")
	if err != nil || kc.RetryFor != time.Minute || strings.Join(kc.Brokers, ",") != "k:9092" || kc.ClientID != "test" {
		t.Errorf("config() = %+v, %v; want k:9092, RetryFor 1m, client id test", kc, err)
	}
	if kc, _ := (&kafkaOptions{}).config("test"); strings.Join(kc.Brokers, ",") != "env:9092" {
		t.Errorf("no --brokers: brokers %v, want $%s's", kc.Brokers, kafkaconf.EnvBrokers)
	}
	if kc, _ := (&kafkaOptions{inProcessDefault: true}).config("test"); len(kc.Brokers) != 0 {
		t.Errorf("no --brokers, in-process default: brokers %v, want none", kc.Brokers)
	}
	t.Setenv(kafkaconf.EnvRetryFor, "soon")
	_, err = (&kafkaOptions{brokers: "k:9092"}).config("test")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), "(--kafka-retry-for or $NORTHPOLE_KAFKA_RETRY_FOR)") {
		t.Errorf("$%s=soon: %v, want a usage error naming the flag and the variable", kafkaconf.EnvRetryFor, err)
	}
}

func TestKafkaOptionsFlush(t *testing.T) {
	o := kafkaOptions{brokers: "k:9092", flush: 20 * time.Millisecond}
	kc, err := o.config("test")
	if err != nil {
		t.Fatal(err)
	}
	if got := kc.Sarama().Producer.Flush.Frequency; got != 20*time.Millisecond {
		t.Errorf("flush frequency = %v, want 20ms", got)
	}
	o.flush = 0
	if kc, _ = o.config("test"); kc.Sarama().Producer.Flush.Frequency != kafkaconf.DefaultFlushFrequency {
		t.Errorf("default flush frequency = %v, want %v", kc.Sarama().Producer.Flush.Frequency, kafkaconf.DefaultFlushFrequency)
	}
	o.flush = -time.Millisecond
	var ee *exitError
	if _, err := o.config("test"); !errors.As(err, &ee) || ee.code != 2 {
		t.Errorf("negative --kafka-flush: %v, want a usage error", err)
	}
}

// TestKafkaOptionsFetch: --kafka-fetch-min-bytes and --kafka-fetch-wait
// reach goka's consumers, sarama's defaults when unset, and a wait finer
// than the protocol's milliseconds is a usage error that names the flag.
func TestKafkaOptionsFetch(t *testing.T) {
	o := kafkaOptions{brokers: "k:9092", fetchMin: 16 << 10, fetchWait: 20 * time.Millisecond}
	kc, err := o.config("test")
	if err != nil {
		t.Fatal(err)
	}
	if sc := kc.Sarama(); sc.Consumer.Fetch.Min != 16<<10 || sc.Consumer.MaxWaitTime != 20*time.Millisecond {
		t.Errorf("fetch min %d, wait %v; want 16384, 20ms", sc.Consumer.Fetch.Min, sc.Consumer.MaxWaitTime)
	}
	o.fetchMin, o.fetchWait = 0, 0
	if kc, err = o.config("test"); err != nil {
		t.Fatal(err)
	}
	if sc := kc.Sarama(); sc.Consumer.Fetch.Min != kafkaconf.DefaultFetchMin || sc.Consumer.MaxWaitTime != kafkaconf.DefaultFetchWait {
		t.Errorf("default fetch min %d, wait %v; want %d, %v", sc.Consumer.Fetch.Min, sc.Consumer.MaxWaitTime, kafkaconf.DefaultFetchMin, kafkaconf.DefaultFetchWait)
	}
	if err := kc.Sarama().Validate(); err != nil {
		t.Errorf("sarama refuses the defaults: %v", err)
	}
	o.fetchWait = 1500 * time.Microsecond
	var ee *exitError
	if _, err := o.config("test"); !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), "--kafka-fetch-wait") {
		t.Errorf("--kafka-fetch-wait 1.5ms: %v, want a usage error naming the flag", err)
	}
}

// TestKafkaOptionsCommitAndCompression: --kafka-commit-every reaches goka's
// consumers, and a compression nobody knows is a usage error that names
// the flag.
func TestKafkaOptionsCommitAndCompression(t *testing.T) {
	o := kafkaOptions{brokers: "k:9092", commit: time.Second, compress: "lz4"}
	kc, err := o.config("test")
	if err != nil {
		t.Fatal(err)
	}
	if got := kc.Sarama().Consumer.Offsets.AutoCommit.Interval; got != time.Second {
		t.Errorf("commit interval = %v, want 1s", got)
	}
	if kc.Compression != "lz4" {
		t.Errorf("compression = %q, want lz4", kc.Compression)
	}
	o.commit = 0
	if kc, _ = o.config("test"); kc.Sarama().Consumer.Offsets.AutoCommit.Interval != kafkaconf.DefaultCommitEvery {
		t.Errorf("default commit interval = %v, want %v", kc.Sarama().Consumer.Offsets.AutoCommit.Interval, kafkaconf.DefaultCommitEvery)
	}
	o.compress = "brotli"
	_, err = o.config("test")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 2 {
		t.Fatalf("--kafka-compression brotli: %v, want a usage error", err)
	}
	if err := withKafkaFlags(err); !strings.Contains(err.Error(), "--kafka-compression") {
		t.Errorf("--kafka-compression brotli: %v, want the flag named", err)
	}
}

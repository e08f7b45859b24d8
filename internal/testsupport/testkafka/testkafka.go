// Package testkafka gives integration tests a Kafka: the brokers named by
// $NORTHPOLE_TEST_BROKERS (a real Apache Kafka, as in CI), or else an
// in-process kfake broker. Modelled on goka's systemtest/env.go.
package testkafka

import (
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/kfakebroker"
)

// EnvBrokers names the environment variable that points tests at a real Kafka.
const EnvBrokers = "NORTHPOLE_TEST_BROKERS"

// Config returns a Kafka for t. With kfake, the broker lives until t ends.
func Config(t testing.TB) kafkaconf.Config {
	t.Helper()
	if b := kafkaconf.SplitBrokers(os.Getenv(EnvBrokers)); len(b) > 0 {
		return kafkaconf.Config{Brokers: b}
	}
	br, err := kfakebroker.Start()
	if err != nil {
		t.Fatalf("start kfake: %v", err)
	}
	t.Cleanup(br.Close)
	return kafkaconf.Config{Brokers: br.Addrs()}
}

// External reports whether tests run against brokers from the environment.
func External() bool { return os.Getenv(EnvBrokers) != "" }

var seq atomic.Int64

// Unique returns a name no other test in this process (or an earlier run on
// the same external broker, thanks to the pid) has used.
func Unique(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), seq.Add(1))
}

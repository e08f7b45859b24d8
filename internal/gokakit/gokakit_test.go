package gokakit

import (
	"testing"

	"github.com/lovoo/goka"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
)

// TestSaramaPerBuilder: every builder gets a config of its own (goka's
// builders write to it), named after the group, balancing with goka's
// co-partitioning strategy.
func TestSaramaPerBuilder(t *testing.T) {
	kc := kafkaconf.Config{Brokers: []string{"localhost:9092"}}
	a, b := Sarama(kc, "g"), Sarama(kc, "g")
	if a == b {
		t.Fatal("two calls returned one config")
	}
	if a.ClientID != "northpole-g" || a.ClientID != ClientID("g") {
		t.Errorf("client id %q, want northpole-g", a.ClientID)
	}
	if s := a.Consumer.Group.Rebalance.GroupStrategies; len(s) != 1 || s[0] != goka.CopartitioningStrategy {
		t.Errorf("balance strategies %v, want goka's co-partitioning one", s)
	}
	if err := a.Validate(); err != nil {
		t.Errorf("config does not validate: %v", err)
	}
}

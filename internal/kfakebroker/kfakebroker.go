// Package kfakebroker starts franz-go's kfake: an in-process Kafka broker that
// speaks the real wire protocol on loopback. The demo and the integration tests
// use it when no external broker is given, so that every client (sarama, goka)
// goes through the same code paths as against Apache Kafka.
package kfakebroker

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Broker is a running in-process Kafka.
type Broker struct {
	cluster *kfake.Cluster
}

// Start starts a single-node broker on a free loopback port.
func Start() (*Broker, error) {
	c, err := kfake.NewCluster(
		kfake.NumBrokers(1),
	)
	if err != nil {
		return nil, fmt.Errorf("start in-process kafka: %w", err)
	}
	return &Broker{cluster: c}, nil
}

// Addrs are the bootstrap addresses.
func (b *Broker) Addrs() []string { return b.cluster.ListenAddrs() }

// Close stops the broker; all data is lost.
func (b *Broker) Close() { b.cluster.Close() }

package packer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/kafkaadmin"
	"github.com/northpole-workshop/northpole/internal/testsupport/testkafka"
	"github.com/northpole-workshop/northpole/processors/packer"
)

// TestEnsureTopicsRefusesOtherPartitionCount: an existing input topic with
// another partition count than the packer's stops it before it creates
// anything, with a *PartitionsError that says both counts.
func TestEnsureTopicsRefusesOtherPartitionCount(t *testing.T) {
	kc := testkafka.Config(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := packer.Named(testkafka.Unique("partitions"))
	cfg.Kafka, cfg.Partitions = kc, 4
	if err := kafkaadmin.EnsureTopics(ctx, kc, kafkaadmin.Topic{Name: cfg.Topics.Boxes, Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	pk, err := packer.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = pk.EnsureTopics(ctx)
	var pe *packer.PartitionsError
	if !errors.As(err, &pe) || pe.Topic != cfg.Topics.Boxes || pe.Partitions != 2 || pe.Configured != 4 {
		t.Fatalf("EnsureTopics = %v, want a PartitionsError for %s (2 partitions, configured 4)", err, cfg.Topics.Boxes)
	}
	if _, err := kafkaadmin.Partitions(ctx, kc, cfg.Topics.Packed); err == nil {
		t.Errorf("topic %s was created although the packer refused to start", cfg.Topics.Packed)
	}
}

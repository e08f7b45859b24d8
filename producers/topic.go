package producers

import (
	"context"
	"fmt"

	"github.com/northpole-workshop/northpole/internal/kafkaadmin"
	"github.com/northpole-workshop/northpole/internal/kafkaconf"
)

// EnsureTopic creates topic with partitions partitions when it is missing.
// An existing topic is used as it is, unless exact asks for that partition
// count and the topic has another: toys and boxes must have the same count,
// or the packer refuses to start.
func EnsureTopic(ctx context.Context, kc kafkaconf.Config, topic string, partitions int32, exact bool) error {
	n, err := kafkaadmin.Partitions(ctx, kc, topic)
	if err != nil {
		return kafkaadmin.EnsureTopics(ctx, kc, kafkaadmin.Topic{Name: topic, Partitions: partitions})
	}
	if exact && n != partitions {
		return fmt.Errorf("topic %q exists with %d partitions, not the %d asked for", topic, n, partitions)
	}
	return nil
}

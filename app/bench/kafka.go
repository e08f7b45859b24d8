package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/northpole-workshop/northpole/internal/kafkaadmin"
	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/results"
	"github.com/northpole-workshop/northpole/internal/topicread"
	"github.com/northpole-workshop/northpole/processors/packer"
)

// admin connects a short-lived admin client (kafkaconf's reader client).
func admin(ctx context.Context, kc kafkaconf.Config) (*kadm.Client, error) {
	cl, err := kc.NewReaderClient(ctx)
	if err != nil {
		return nil, err
	}
	return kadm.NewClient(cl), nil
}

// waitStable waits until every group is Stable (all members joined), or the
// worker has exited.
func waitStable(ctx context.Context, kc kafkaconf.Config, groups []string, proc *process) error {
	adm, err := admin(ctx, kc)
	if err != nil {
		return err
	}
	defer adm.Close()
	for {
		ds, err := adm.DescribeGroups(ctx, groups...)
		stable := 0
		if err == nil {
			for _, d := range ds {
				if d.Err == nil && d.State == "Stable" {
					stable++
				}
			}
		}
		if stable == len(groups) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-proc.exited:
			return fmt.Errorf("packer process ended early: %w", proc.err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// endOffsets is the sum of the end offsets of every partition of topics:
// their record count, as the bench's topics are new and never compacted.
func endOffsets(ctx context.Context, kc kafkaconf.Config, topics ...string) (int64, error) {
	adm, err := admin(ctx, kc)
	if err != nil {
		return 0, err
	}
	defer adm.Close()
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return 0, err
	}
	if err := ends.Error(); err != nil {
		return 0, err
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
	return n, nil
}

// hopLag is the records of topics the hop worker's group has not committed.
func hopLag(ctx context.Context, kc kafkaconf.Config, group string, topics []string) (int64, error) {
	adm, err := admin(ctx, kc)
	if err != nil {
		return 0, err
	}
	defer adm.Close()
	return kafkaadmin.GroupLag(ctx, adm, group, topics...)
}

// packLatencies: for each packed record, its Kafka timestamp (its append
// time on a real Kafka, see appendTimed) minus the later of its toy's and its
// box's Kafka timestamps (their elves' write times), sorted.
func packLatencies(ctx context.Context, kc kafkaconf.Config, t packer.Topics) ([]time.Duration, error) {
	written := map[string]time.Time{} // stream|id -> timestamp of its first record
	for _, x := range []struct{ topic, stream string }{{t.Toys, "toys"}, {t.Boxes, "boxes"}} {
		msgs, err := topicread.All(ctx, kc, x.topic)
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			var v struct {
				Toy string `json:"toy_id"`
				Box string `json:"box_id"`
			}
			if json.Unmarshal(m.Value, &v) == nil && v.Toy+v.Box != "" {
				if _, ok := written[x.stream+"|"+v.Toy+v.Box]; !ok {
					written[x.stream+"|"+v.Toy+v.Box] = m.Timestamp
				}
			}
		}
	}
	packed, err := topicread.All(ctx, kc, t.Packed)
	if err != nil {
		return nil, err
	}
	return latencies(written, packed), nil
}

// latencies pairs each packed record (the first of each key) with the
// timestamps written holds of its toy and its box.
func latencies(written map[string]time.Time, packed []topicread.Message) []time.Duration {
	var lat []time.Duration
	seen := map[string]bool{}
	for _, m := range packed {
		if seen[string(m.Key)] {
			continue
		}
		seen[string(m.Key)] = true
		var p results.Packed
		if json.Unmarshal(m.Value, &p) != nil {
			continue
		}
		a, ok1 := written["toys|"+p.ToyID]
		b, ok2 := written["boxes|"+p.BoxID]
		if !ok1 || !ok2 {
			continue
		}
		if b.After(a) {
			a = b
		}
		lat = append(lat, m.Timestamp.Sub(a))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat
}

// dropRun deletes what the run named name left on kc's broker: its consumer
// groups, then its topics (every name that starts with name-). A run of
// millions of records leaves gigabytes on a lasting broker, and kfake holds
// them in the bench's own memory for the variants after it. A group that
// still has members is not deleted; the error says which.
func dropRun(ctx context.Context, kc kafkaconf.Config, name string) error {
	adm, err := admin(ctx, kc)
	if err != nil {
		return err
	}
	defer adm.Close()
	ours := func(names []string) []string {
		var out []string
		for _, n := range names {
			if strings.HasPrefix(n, name+"-") {
				out = append(out, n)
			}
		}
		return out
	}
	var errs []error
	groups, err := adm.ListGroups(ctx)
	if err == nil {
		var deleted kadm.DeleteGroupResponses
		deleted, err = adm.DeleteGroups(ctx, ours(groups.Groups())...)
		if err == nil {
			err = deleted.Error()
		}
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("delete the groups of %s: %w", name, err))
	}
	topics, err := adm.ListTopics(ctx)
	if err == nil {
		var deleted kadm.DeleteTopicResponses
		deleted, err = adm.DeleteTopics(ctx, ours(topics.Names())...)
		if err == nil {
			err = deleted.Error()
		}
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("delete the topics of %s: %w", name, err))
	}
	return errors.Join(errs...)
}

package bench

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/northpole-workshop/northpole/internal/testsupport/testkafka"
)

func TestLongestDeleteDelay(t *testing.T) {
	str := func(s string) *string { return &s }
	broker := func(name string, cs ...kadm.Config) kadm.ResourceConfig {
		return kadm.ResourceConfig{Name: name, Configs: cs}
	}
	delay := func(v string) kadm.Config { return kadm.Config{Key: deleteDelayKey, Value: str(v)} }
	other := kadm.Config{Key: "log.segment.bytes", Value: str("1073741824")}
	for _, tc := range []struct {
		name    string
		rcs     kadm.ResourceConfigs
		want    time.Duration
		wantErr string
	}{
		{"no brokers", nil, 0, ""},
		{"no such setting", kadm.ResourceConfigs{broker("1", other)}, 0, ""},
		{"Kafka's default", kadm.ResourceConfigs{broker("1", other, delay("60000"))}, time.Minute, ""},
		{"the longest of three", kadm.ResourceConfigs{broker("1", delay("1000")), broker("2", delay("30000")), broker("3", delay("0"))}, 30 * time.Second, ""},
		{"not a number", kadm.ResourceConfigs{broker("1", delay("soon"))}, 0, `broker 1: log.segment.delete.delay.ms = "soon"`},
		{"a broker's error", kadm.ResourceConfigs{{Name: "2", Err: errors.New("not authorized")}}, 0, "broker 2's configuration: not authorized"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := longestDeleteDelay(tc.rcs)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("= %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// TestDeleteDelayOfTheBroker: the broker scripts/kafka starts (CI's) deletes
// a deleted topic's files within a second, so that no bench run pays for
// the run before it; the bench reads that setting from the broker itself.
func TestDeleteDelayOfTheBroker(t *testing.T) {
	if !testkafka.External() {
		t.Skipf("needs a real Kafka ($%s): kfake has no such setting", testkafka.EnvBrokers)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := deleteDelay(ctx, testkafka.Config(t))
	if err != nil {
		t.Fatal(err)
	}
	if d <= 0 || d > longDeleteDelay {
		t.Errorf("the broker deletes a deleted topic's files %v later, want within %v (scripts/kafka sets 1 s)", d, longDeleteDelay)
	}
}

package producers

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/kafkaadmin"
	"github.com/northpole-workshop/northpole/internal/testsupport/testkafka"
)

// TestEnsureTopic: a missing topic is created with the count asked for; an
// existing one is kept as it is, and refused only when the count must match.
func TestEnsureTopic(t *testing.T) {
	kc, names := startKafka(t, "existing")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fresh := testkafka.Unique("fresh")
	if err := EnsureTopic(ctx, kc, fresh, 3, true); err != nil {
		t.Fatal(err)
	}
	if n, err := kafkaadmin.Partitions(ctx, kc, fresh); err != nil || n != 3 {
		t.Errorf("created %q with %d partitions (%v), want 3", fresh, n, err)
	}
	if err := EnsureTopic(ctx, kc, names[0], 2, false); err != nil {
		t.Errorf("an existing topic of 4 partitions, any count: %v", err)
	}
	err := EnsureTopic(ctx, kc, names[0], 2, true)
	if err == nil || !strings.Contains(err.Error(), "exists with 4 partitions, not the 2 asked for") {
		t.Errorf("an existing topic of 4 partitions, exactly 2: %v", err)
	}
}

package producers

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/record"
)

// TestPlanWithoutHallsUnchanged: without halls the elves make, for a seed,
// exactly the records they made before lines existed (contract version 2),
// byte for byte: a run recorded then replays the same. The digests were
// taken from the generator before halls were added; a change to them is a
// change of every recorded run, to be made on purpose.
func TestPlanWithoutHallsUnchanged(t *testing.T) {
	t.Parallel()
	every := func(s record.Stream) Config {
		c := testConfig(s, 5000)
		c.LateRate, c.DupRate, c.BadRate = 0.1, 0.1, 0.2
		return c
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"default toys", DefaultConfig(record.Toys), "34c096e30d92fdd3f9f01f88c8bd1440ac1a02240b34533a963d6d04c30df488"},
		{"default boxes", DefaultConfig(record.Boxes), "643faffba0540086e4733a3348310de1347cbc6b1521c22617e4aa6b1553b205"},
		{"every kind, toys", every(record.Toys), "5ef402fdce05fd347b0ffbdc1b3c68d024ff580857937c0318981f4dd0779cf0"},
		{"every kind, boxes", every(record.Boxes), "fc6385785d380f6539a05135cd20d39a30d47e04281ea818b7dd3bc870bf24de"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := planDigest(t, tc.cfg); got != tc.want {
				t.Errorf("plan digest %s, want %s", got, tc.want)
			}
		})
	}
}

// planDigest is a SHA-256 over everything of every message of cfg's plan.
func planDigest(t *testing.T, cfg Config) string {
	t.Helper()
	h := sha256.New()
	for _, m := range mustPlan(t, cfg) {
		fmt.Fprintf(h, "%q %q %s %d %s\n", m.Key, m.Value, m.Kind, m.Elf, m.MadeAt.Format(time.RFC3339Nano))
	}
	return hex.EncodeToString(h.Sum(nil))
}

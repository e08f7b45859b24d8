package producers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/record"
)

// TestWriteSummary: the summary says how the run ended, the counts by kind,
// the dead letters by kind (one this binary does not know of too), how the
// lines fell on the partitions, and whether the final heartbeats went out.
func TestWriteSummary(t *testing.T) {
	s := Stats{Stream: record.Toys, Topic: "toys", Records: 10, Sent: 14, Acked: 14, Elapsed: 2 * time.Second,
		Kinds:            map[string]int64{KindToy: 7, KindHeartbeat: 4, BadKinds[0]: 2, KindBadLine: 1, KindBadPrefix + "martian": 1},
		FinalHeartbeatAt: time.Date(2026, 12, 24, 0, 1, 0, 0, time.UTC),
		Spread:           Spread{Lines: []int{3, 1, 0}, Share: []float64{0.5, 0.5, 0}}}
	for _, tc := range []struct {
		err  error
		want []string
	}{
		{nil, []string{`elves done: toys: 10 records to topic "toys" in 2s (5/s); 14 messages with heartbeats, 14 acked, 0 failed`,
			"  toy 7, heartbeat 4, bad 4 (" + strings.TrimPrefix(BadKinds[0], KindBadPrefix) + " 2, line 1, " + KindBadPrefix + "martian 1)",
			"  4 lines over 3 partitions: 2 carry work, the busiest 1.5 times an even share",
			"  final heartbeats at 2026-12-24T00:01:00Z"}},
		{fmt.Errorf("elves: %w", context.Canceled), []string{"elves interrupted: toys"}},
		{errors.New("boom"), []string{"elves failed: toys"}},
	} {
		var b strings.Builder
		s.WriteSummary(&b, tc.err)
		for _, want := range tc.want {
			if !strings.Contains(b.String(), want) {
				t.Errorf("err %v: summary lacks %q:\n%s", tc.err, want, b.String())
			}
		}
	}
	var b strings.Builder
	Stats{Stream: record.Boxes}.WriteSummary(&b, nil)
	if !strings.HasSuffix(b.String(), "  final heartbeats NOT sent\n") {
		t.Errorf("a run without final heartbeats:\n%s", b.String())
	}
}

// TestStatusLine: the progress line, with the records asked for when a
// count was.
func TestStatusLine(t *testing.T) {
	s := Stats{Stream: record.Boxes, Records: 50, Sent: 60, Acked: 55, Elapsed: 5 * time.Second, Kinds: map[string]int64{BadKinds[1]: 3}}
	if got, want := s.StatusLine(100), "[  5.0s] boxes: 50/100 records made (10/s, 3 bad); 55 of 60 messages acked, 0 failed"; got != want {
		t.Errorf("StatusLine(100) = %q, want %q", got, want)
	}
	if got := s.StatusLine(0); !strings.Contains(got, ": 50 records made") {
		t.Errorf("StatusLine(0) = %q, want no count asked for", got)
	}
}

// TestDescribe: a run of a count, and a run for a time at a rate.
func TestDescribe(t *testing.T) {
	c := DefaultConfig(record.Toys)
	c.Kafka.Brokers = []string{"a:9092", "b:9092"}
	if got, want := c.Describe(), `4 toys elves make 1000 records, as fast as possible, to topic "toys" on a:9092,b:9092 (seed 1)`; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
	c.Count, c.Duration, c.Rate = 0, time.Minute, 200
	if got := c.Describe(); !strings.Contains(got, "make records for 1m0s, 200/s,") {
		t.Errorf("Describe of a run for a time = %q", got)
	}
	c.Halls = 16
	if got := c.Describe(); !strings.HasPrefix(got, "4 toys elves in 16 halls make records") {
		t.Errorf("Describe with halls = %q", got)
	}
}

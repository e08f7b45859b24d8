package producers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/northpole-workshop/northpole/internal/english"
	"github.com/northpole-workshop/northpole/internal/record"
)

// WriteSummary says, for people, what a run that ended with err handed to
// Kafka: whether it was done, interrupted or failed, its counts by kind,
// the dead letters by kind, how its lines fell on the partitions, and
// whether the final heartbeats went out.
func (s Stats) WriteSummary(w io.Writer, err error) {
	status := "done"
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		status = "interrupted"
	case err != nil:
		status = "failed"
	}
	fmt.Fprintf(w, "elves %s: %s: %s to topic %q in %v (%.0f/s); %s with heartbeats, %d acked, %d failed\n",
		status, s.Stream, english.Count(s.Records, "record"), s.Topic, s.Elapsed.Round(time.Millisecond), s.Rate(), english.Count(s.Sent, "message"), s.Acked, s.Failed)
	var parts []string
	for _, k := range []string{KindToy, KindBox, KindLate, KindDup, KindHeartbeat} {
		if n := s.Kinds[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, n))
		}
	}
	if bad := s.Bad(); bad > 0 {
		var kinds []string
		known := append(slices.Clip(BadKinds), KindBadLine)
		for _, k := range known {
			if n := s.Kinds[k]; n > 0 {
				kinds = append(kinds, fmt.Sprintf("%s %d", strings.TrimPrefix(k, KindBadPrefix), n))
			}
		}
		// Kinds this binary does not know of, should any appear.
		for k, n := range s.Kinds {
			if IsBad(k) && !slices.Contains(known, k) {
				kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
			}
		}
		parts = append(parts, fmt.Sprintf("bad %d (%s)", bad, strings.Join(kinds, ", ")))
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "  %s\n", strings.Join(parts, ", "))
	}
	if len(s.Spread.Lines) > 0 {
		fmt.Fprintf(w, "  %s\n", s.Spread)
	}
	if !s.FinalHeartbeatAt.IsZero() {
		fmt.Fprintf(w, "  final heartbeats at %s\n", record.FormatTime(s.FinalHeartbeatAt))
	} else {
		fmt.Fprintln(w, "  final heartbeats NOT sent")
	}
}

// StatusLine is s as one line of progress, for people: want is the records
// asked for (0: a run for a time).
func (s Stats) StatusLine(want int) string {
	of := ""
	if want > 0 {
		of = fmt.Sprintf("/%d", want)
	}
	return fmt.Sprintf("[%5.1fs] %s: %d%s records made (%.0f/s, %d bad); %d of %d messages acked, %d failed",
		s.Elapsed.Seconds(), s.Stream, s.Records, of, s.Rate(), s.Bad(), s.Acked, s.Sent, s.Failed)
}

// Describe says, for people, what a run of c will make and where: "4 toys
// elves make 1000 records, as fast as possible, to topic "toys" on
// localhost:9092 (seed 1)", with "in 16 halls" after "elves" when there are.
func (c Config) Describe() string {
	what := english.Count(c.Count, "record")
	if c.Duration > 0 {
		what = "records for " + c.Duration.String()
	}
	rate := "as fast as possible"
	if c.Rate > 0 {
		rate = fmt.Sprintf("%g/s", c.Rate)
	}
	where := ""
	if c.Halls > 0 {
		where = " in " + english.Count(c.Halls, "hall")
	}
	return fmt.Sprintf("%d %s elves%s make %s, %s, to topic %q on %s (seed %d)",
		c.Elves, c.Stream, where, what, rate, c.Topic, strings.Join(c.Kafka.Brokers, ","), c.Seed)
}

package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/northpole-workshop/northpole/internal/english"
	"github.com/northpole-workshop/northpole/otel/telemetry"
	"github.com/northpole-workshop/northpole/processors/packer"
	"github.com/northpole-workshop/northpole/processors/sleigh"
	"github.com/northpole-workshop/northpole/producers"
)

// MetricCounts are the key counters of the components' OpenTelemetry
// metrics once every component stopped, as the demo's own readers collected
// them (the same instruments, and so the same numbers, as go to OTLP).
type MetricCounts struct {
	// Sent is the records the elves wrote that Kafka acknowledged, by
	// topic (northpole.elves.records).
	Sent map[string]int64
	// Consumed is the records the packer consumed, by topic
	// (messaging.client.consumed.messages).
	Consumed map[string]int64
	// Rows is the packer's rows by kind, over every size and line
	// (northpole.packer.rows); DeadLetters its dead letters by reason
	// (northpole.packer.dead_letters).
	Rows, DeadLetters map[string]int64
	// Loaded is the pairs the sleigh loaded (northpole.sleigh.pairs,
	// outcome loaded).
	Loaded int64
}

// readMetrics collects each service's reader once and sums the counters
// MetricCounts holds.
func readMetrics(ctx context.Context, readers map[string]*sdkmetric.ManualReader) (MetricCounts, error) {
	m := MetricCounts{Sent: map[string]int64{}, Consumed: map[string]int64{}, Rows: map[string]int64{}, DeadLetters: map[string]int64{}}
	var errs []error
	for service, r := range readers {
		var rm metricdata.ResourceMetrics
		if err := r.Collect(ctx, &rm); err != nil {
			errs = append(errs, fmt.Errorf("demo: collect the metrics of %s: %w", service, err))
			continue
		}
		for _, sm := range rm.ScopeMetrics {
			for _, mt := range sm.Metrics {
				sum, ok := mt.Data.(metricdata.Sum[int64])
				if !ok {
					continue
				}
				for _, dp := range sum.DataPoints {
					m.add(service, mt.Name, dp.Attributes, dp.Value)
				}
			}
		}
	}
	return m, errors.Join(errs...)
}

// add counts one data point of service's metric name.
func (m *MetricCounts) add(service, name string, attrs attribute.Set, v int64) {
	value := func(k attribute.Key) string {
		a, _ := attrs.Value(k)
		return a.AsString()
	}
	topic := value(semconv.MessagingDestinationNameKey)
	switch {
	case name == producers.MetricRecords:
		m.Sent[topic] += v
	case service == telemetry.ServicePacker && name == "messaging.client.consumed.messages":
		m.Consumed[topic] += v
	case service == telemetry.ServicePacker && name == packer.MetricRows:
		m.Rows[value(packer.RowKindKey)] += v
	case service == telemetry.ServicePacker && name == packer.MetricDeadLetters:
		m.DeadLetters[value(packer.ReasonKey)] += v
	case service == telemetry.ServiceSleigh && name == sleigh.MetricPairs && value(sleigh.OutcomeKey) == sleigh.OutcomeLoaded:
		m.Loaded += v
	}
}

// MetricCount is one of the metrics' counts, against what the demo read
// back when that is comparable.
type MetricCount struct {
	Service string `json:"service"`
	// What is the count's kind ("sent", "consumed", "rows", "dead letters",
	// "loaded"), Of what it counts: a topic's role (toys), a row kind, a
	// dead letter's reason, "pairs".
	What  string `json:"what"`
	Of    string `json:"of"`
	Count int64  `json:"count"`
	// ReadBack is the same count in the records the demo read back; absent
	// when the two are not comparable (MetricsCheck.Unchecked).
	ReadBack *int64 `json:"read_back,omitempty"`
}

// MetricsCheck is the demo's metrics against the records it read back,
// in summary.json and on report.html.
type MetricsCheck struct {
	// Check is "equal" or "different".
	Check  string        `json:"check"`
	Counts []MetricCount `json:"counts"`
	// Unchecked says which counts were not compared, and why.
	Unchecked string `json:"unchecked,omitempty"`
}

// MetricsDiffer says what counts that differ from the records mean.
const MetricsDiffer = "records redelivered, or a count missed"

// CheckMetrics compares the metrics' counts m with the records the run
// read back: what the elves sent and the packer consumed with the input
// topics' records, the sleigh's pairs with the packed rows, and the
// packer's rows and dead letters with the deduplicated result sets. Those
// count every write, and so are compared only when no output record was
// written twice (RawOutput.Duplicates). The verdict goes into r.Summary
// (Metrics), and so into summary.json and report.html.
func (r *Result) CheckMetrics(m MetricCounts) MetricsCheck {
	s := &r.Summary
	c := MetricsCheck{}
	add := func(service, what, of string, n int64, want int, compared bool) {
		mc := MetricCount{Service: service, What: what, Of: of, Count: n}
		if compared {
			w := int64(want)
			mc.ReadBack = &w
		}
		c.Counts = append(c.Counts, mc)
	}
	read := map[string]int{"toys": len(r.Run.Toys), "boxes": len(r.Run.Boxes)}
	for _, role := range []string{"toys", "boxes"} {
		elves := map[string]string{"toys": telemetry.ServiceToyElves, "boxes": telemetry.ServiceBoxElves}[role]
		add(elves, "sent", role, m.Sent[s.Topics[role]], read[role], true)
	}
	for _, role := range []string{"toys", "boxes"} {
		add(telemetry.ServicePacker, "consumed", role, m.Consumed[s.Topics[role]], read[role], true)
	}
	rowsCompared := r.Run.Raw.Duplicates == 0
	got := r.Run.Goka.Counts()
	rows := map[string]int{packer.RowPacked: got.Packed, packer.RowUnpacked: got.Unpacked, packer.RowSpare: got.Spare,
		packer.RowLate: got.Late, packer.RowDead: got.Dead}
	for _, kind := range []string{packer.RowPacked, packer.RowUnpacked, packer.RowSpare, packer.RowLate, packer.RowDead} {
		add(telemetry.ServicePacker, "rows", kind, m.Rows[kind], rows[kind], rowsCompared)
	}
	reasons := map[string]bool{}
	for reason := range m.DeadLetters {
		reasons[reason] = true
	}
	for reason := range s.DeadBy {
		reasons[reason] = true
	}
	for _, reason := range slices.Sorted(maps.Keys(reasons)) {
		add(telemetry.ServicePacker, "dead letters", reason, m.DeadLetters[reason], s.DeadBy[reason], rowsCompared)
	}
	add(telemetry.ServiceSleigh, "loaded", "pairs", m.Loaded, len(r.Run.Goka.Packed), true)
	if !rowsCompared {
		c.Unchecked = fmt.Sprintf("rows and dead letters not compared: %s repeated an earlier key, and the metrics count every write",
			english.Count(r.Run.Raw.Duplicates, "output record"))
	}
	c.Check = "equal"
	if len(c.differing()) > 0 {
		c.Check = "different"
	}
	s.Metrics = &c
	return c
}

// Equal reports whether every compared count equals its records.
func (c MetricsCheck) Equal() bool { return c.Check == "equal" }

// differing are the compared counts that differ from their records.
func (c MetricsCheck) differing() []MetricCount {
	var out []MetricCount
	for _, mc := range c.Counts {
		if mc.ReadBack != nil && *mc.ReadBack != mc.Count {
			out = append(out, mc)
		}
	}
	return out
}

// String lists the counts, those of one service and kind together:
// "toy-elves sent toys 612; ...; packer rows packed 250, unpacked 3".
func (c MetricsCheck) String() string {
	var groups []string
	for i := 0; i < len(c.Counts); {
		first := c.Counts[i]
		var parts []string
		for ; i < len(c.Counts) && c.Counts[i].Service == first.Service && c.Counts[i].What == first.What; i++ {
			parts = append(parts, fmt.Sprintf("%s %d", c.Counts[i].Of, c.Counts[i].Count))
		}
		groups = append(groups, first.Service+" "+first.What+" "+strings.Join(parts, ", "))
	}
	return strings.Join(groups, "; ")
}

// Verdict says how the counts compare with the records read back: "equal
// to the records read back", or which differ and what that means; with the
// counts not compared, if any.
func (c MetricsCheck) Verdict() string {
	v := "equal to the records read back"
	if d := c.differing(); len(d) > 0 {
		parts := make([]string, len(d))
		for i, mc := range d {
			parts[i] = fmt.Sprintf("%s %s %s %d for %d read back", mc.Service, mc.What, mc.Of, mc.Count, *mc.ReadBack)
		}
		v = "DIFFERENT from the records read back: " + strings.Join(parts, ", ") + " (" + MetricsDiffer + ")"
	}
	if c.Unchecked != "" {
		v += "; " + c.Unchecked
	}
	return v
}

// WriteText prints the counts and the verdict, for people, on two lines.
func (c MetricsCheck) WriteText(w io.Writer) {
	fmt.Fprintf(w, "metrics: %s\n  %s\n", c, c.Verdict())
}

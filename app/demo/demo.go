// Package demo is `northpole demo` without its command line: the whole
// workshop in one process (the pipeline harness with the sleigh, on an
// in-process kfake unless a Kafka is given), then the Goka results checked
// against the batch reference and against the contract's SQL on the embedded
// SQLite, row for row, and the sleigh's manifest against the packed topic.
// WriteFiles writes what the run read back and computed.
package demo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/northpole-workshop/northpole/app/compare"
	"github.com/northpole-workshop/northpole/app/harness"
	"github.com/northpole-workshop/northpole/internal/contract"
	"github.com/northpole-workshop/northpole/internal/kfakebroker"
	"github.com/northpole-workshop/northpole/internal/results"
	"github.com/northpole-workshop/northpole/processors/packer"
	"github.com/northpole-workshop/northpole/processors/packer/outputs"
	"github.com/northpole-workshop/northpole/processors/sleigh"
	"github.com/northpole-workshop/northpole/producers"
)

// StartError is the one error of New that is not the configuration's: the
// in-process Kafka did not start.
type StartError struct{ Err error }

func (e *StartError) Error() string { return e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// Demo is one run of the demo.
type Demo struct {
	p      *harness.Pipeline
	broker *kfakebroker.Broker // nil on a given Kafka
	where  string
	began  time.Time
	log    *slog.Logger
}

// New starts an in-process Kafka when cfg names no brokers, and builds the
// pipeline (with the sleigh) that Run runs, traced and reporting its
// progress as cfg says. A nil log discards the components' logs. The elves
// make a number of toys and boxes (Count), at least one each; the rest of
// cfg is checked by harness.New.
func New(cfg harness.Config, log *slog.Logger) (*Demo, error) {
	cfg.Sleigh = true
	// Every problem at once, before an in-process Kafka starts: its
	// address stands in for the brokers it will be. The demo makes a count
	// of records, never runs for a time: it says so itself rather than
	// through the elves' choice of count or duration.
	check := cfg
	if len(check.Kafka.Brokers) == 0 {
		check.Kafka.Brokers = []string{"127.0.0.1:9092"}
	}
	var errs []error
	for _, e := range []*producers.Config{&check.Toys, &check.Boxes} {
		if e.Count < 1 {
			errs = append(errs, fmt.Errorf("demo: %s must be at least 1, got %d", e.Stream, e.Count))
			e.Count = 1
		}
	}
	if err := errors.Join(append(errs, check.Validate())...); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &Demo{began: time.Now(), log: log}
	if len(cfg.Kafka.Brokers) == 0 {
		b, err := kfakebroker.Start()
		if err != nil {
			return nil, &StartError{err}
		}
		d.broker, d.where = b, "in-process Kafka (kfake)"
		cfg.Kafka.Brokers = b.Addrs()
	} else {
		d.where = "Kafka at " + strings.Join(cfg.Kafka.Brokers, ",")
	}
	p, err := harness.New(cfg, log)
	if err != nil {
		d.Close()
		return nil, err
	}
	d.p = p
	return d, nil
}

// FreshPrefix is the prefix a demo names its topics and groups after on a
// given Kafka when none is chosen (harness.Named): demo-<UTC time, to the
// ms>, so that no earlier run's records count too.
func FreshPrefix(now time.Time) string { return "demo-" + now.UTC().Format("20060102-150405.000") }

// Where says which Kafka the demo runs on, for people.
func (d *Demo) Where() string { return d.where }

// Summary is DIR/summary.json.
type Summary struct {
	Brokers string `json:"brokers"`
	// Topics are the topics the run used, by role (toys, boxes, packed,
	// unpacked, spare, late, dead).
	Topics   map[string]string `json:"topics"`
	Window   string            `json:"window"`
	Lateness string            `json:"lateness"`
	Seed     int64             `json:"seed"`
	// Inputs are the records read back per stream ("toys", "boxes").
	Inputs  map[string]StreamInputs     `json:"inputs"`
	Elves   map[string]map[string]int64 `json:"elves"`
	Results results.Counts              `json:"results"`
	// BySize counts each set per size class. A dead letter counts under the
	// size its record's JSON says when that is a valid size and the record's
	// key (see deadBySize), and in DeadWithoutSize otherwise: the dead of
	// every size plus DeadWithoutSize is Results.Dead.
	BySize          map[string]results.Counts `json:"by_size"`
	DeadWithoutSize int                       `json:"dead_without_size"`
	DeadBy          map[string]int            `json:"dead_by_reason"`
	RawOutput       outputs.Counts            `json:"raw_output"`
	Reference       string                    `json:"reference_check"`
	SQLCheck        string                    `json:"sql_check"`
	// MapCheck is the service map's verdict, "equal" or "different": its
	// edges into the packer and the sleigh against the records read back
	// (MapEdges, Result.CheckMap). Both are absent when the demo drew no
	// map.
	MapCheck string   `json:"map_check,omitempty"`
	MapEdges MapEdges `json:"map_edges,omitempty"`
	// Metrics is the components' OpenTelemetry metrics against the records
	// read back (Result.CheckMetrics); absent when the demo had no metrics
	// (OTEL_SDK_DISABLED).
	Metrics *MetricsCheck `json:"metrics,omitempty"`
	Seconds float64       `json:"seconds"`
}

// Result is what Run found.
type Result struct {
	Summary Summary
	// Run is what the elves wrote and what Kafka held afterwards, the
	// dead-letters topic's records whole among it (Run.DeadLetters).
	Run harness.Result
	// Reference is the differences between Goka and the batch reference
	// (contract.Compute in mode ClosedOnly): none when they are equal.
	Reference []results.Diff
	// SQL is the embedded SQLite's five sets, and SQLComparison Goka's
	// against them (compare.Build).
	SQL           results.Set
	SQLComparison compare.Comparison
	// Params are the W and L the packer ran with.
	Params contract.Params
}

// Run runs the pipeline to the end (harness.Run) and checks what Goka wrote
// against the reference and the embedded SQL. The sleigh goes on until
// FinishSleigh or Close.
func (d *Demo) Run(ctx context.Context) (Result, error) {
	var r Result
	res, err := d.p.Run(ctx)
	if err != nil {
		return r, err
	}
	r.Run = res
	cfg := d.p.Config()
	params := cfg.Packer.Params
	r.Params = params
	inputs := res.Inputs()
	r.Reference = results.Compare(res.Goka, contract.Compute(inputs, params, contract.ClosedOnly))
	if r.SQL, err = compare.EmbeddedSQL(ctx, inputs, params, d.log); err != nil {
		return r, fmt.Errorf("embedded SQL: %w", err)
	}
	r.SQLComparison = compare.Build(res.Goka, r.SQL, inputs, params)
	r.Summary = d.summary(cfg, r)
	return r, nil
}

func (d *Demo) summary(cfg harness.Config, r Result) Summary {
	got := r.Run.Goka
	s := Summary{
		Brokers: strings.Join(cfg.Kafka.Brokers, ","), Topics: topicsByRole(cfg.Packer.Topics),
		Window: cfg.Packer.Window.String(), Lateness: cfg.Packer.Lateness.String(),
		Seed:      cfg.Toys.Seed,
		Inputs:    inputCounts(r.Run.Inputs(), got.Dead),
		Elves:     map[string]map[string]int64{"toys": r.Run.ToyStats.Kinds, "boxes": r.Run.BoxStats.Kinds},
		Results:   got.Counts(),
		BySize:    got.CountsBySize(),
		DeadBy:    map[string]int{},
		RawOutput: r.Run.Raw,
		Reference: "equal",
		SQLCheck:  "equal",
		Seconds:   time.Since(d.began).Seconds(),
	}
	delete(s.BySize, "")
	dead, without := deadBySize(r.Run.Inputs(), got.Dead)
	for size, n := range dead {
		c := s.BySize[size]
		c.Dead = n
		s.BySize[size] = c
	}
	s.DeadWithoutSize = without
	for _, dl := range got.Dead {
		s.DeadBy[dl.Reason]++
	}
	if len(r.Reference) > 0 {
		s.Reference = "different"
	}
	if !r.SQLComparison.Equal {
		s.SQLCheck = "different"
	}
	return s
}

// FinishSleigh waits until the sleigh's manifest holds the packed pairs
// (harness.WaitManifest), then stops the sleigh. It returns the manifest's
// summary and the sleigh's counts, and an error when the manifest holds
// another number of pairs or the sleigh failed.
func (d *Demo) FinishSleigh(ctx context.Context, packed int) (sleigh.Summary, sleigh.Counts, error) {
	m, err := d.p.WaitManifest(ctx, packed)
	if err == nil && m.Pairs != packed {
		err = fmt.Errorf("sleigh: the manifest holds %d pairs, the packed topic %d", m.Pairs, packed)
	}
	counts := d.p.Sleigh().Counts()
	if cerr := d.p.Close(); cerr != nil && err == nil {
		err = cerr
	}
	return m, counts, err
}

// Close stops what still runs and the in-process Kafka.
func (d *Demo) Close() {
	if d.p != nil {
		if err := d.p.Close(); err != nil {
			d.log.Warn("demo: stopping the pipeline", "err", err)
		}
	}
	if d.broker != nil {
		d.broker.Close()
		d.broker = nil
	}
}

// topicsByRole names t's topics by what they hold.
func topicsByRole(t packer.Topics) map[string]string {
	return map[string]string{"toys": t.Toys, "boxes": t.Boxes, "packed": t.Packed, "unpacked": t.Unpacked,
		"spare": t.Spare, "late": t.Late, "dead": t.Dead}
}

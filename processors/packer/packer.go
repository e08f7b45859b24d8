// Package packer is the Goka implementation of the packing contract
// (docs/SEMANTICS.md). One goka group, the clock group, reads each input
// record once:
//
//	toys, boxes --> clock --> clock table (the decisions)
//	                  |
//	                  +--> slots --> packed, unpacked, spare, late, dead-letters
//
// It validates each record, decides whether it is late, then whether it is
// a duplicate within its window (the dedupe entries), applies it to the
// clock of its line (lateness, ranks, window closing), writes that decision
// to its table, and joins it with the slots of its window. The clock's
// state and the decision are one record of the table, so a crash can never
// keep one and lose the other; the dedupe entries and the slots are
// restored from those records too, and a record delivered again after a
// crash writes its rows again from the decision kept (replay.go). State is
// kept only for the windows still open, and the table's records that no
// restart needs are deleted (horizon.go). See docs/ARCHITECTURE.md for the
// reasoning and the replay rules.
package packer

import (
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
	"github.com/northpole-workshop/northpole/otel/kafkatrace"
)

// Packer runs the packer's goka group.
type Packer struct {
	cfg    Config
	params paramsUS
	lim    limits // what every record written must fit in (fit.go)
	// clockStores: the clock group's table, partition by partition, with its
	// key clocks, dedupe entries and slots (clock.go, dedupe.go, slots.go).
	clockStores *tableStores
	log         *slog.Logger
	trace       *kafkatrace.Goka // nil: tracing off (tracing.go)
	metrics     *metrics         // nil: metrics off (metrics.go)
	// aligner keeps the clock group's inputs together in event time (align.go).
	aligner *aligner
	proc    atomic.Pointer[goka.Processor] // the group's processor while it runs (health.go)
}

// New validates cfg; it does not touch Kafka. A nil log discards the
// packer's log.
func New(cfg Config, log *slog.Logger) (*Packer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("packer config: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(cfg.Meter, cfg)
	if err != nil {
		return nil, fmt.Errorf("packer metrics: %w", err)
	}
	p := &Packer{cfg: cfg, params: cfg.params(), lim: defaultLimits(), log: log, metrics: m}
	p.newStores()
	p.newAligner()
	p.trace = newTracing(cfg, cfg.Tracer)
	return p, nil
}

// newStores starts the group's table empty, as goka does at each run. It
// follows what the clock table must keep only when the packer cleans that
// table: its horizon marks the bounds that the cleaner
// alone consumes and trims (horizon.deletable), so with cleaning off the
// marks, and the heap of the windows' first offsets, would grow with every
// decision. Not following at all, rather than trimming the marks anyway,
// also spares each decision the work whose only use is the cleaner's.
func (p *Packer) newStores() {
	counts := p.metrics != nil
	p.clockStores = newTableStores(p.cfg.clockTable(), p.cfg.CleanEvery > 0, counts)
	if p.metrics != nil {
		p.metrics.stores.Store(p.clockStores)
	}
}

// newAligner starts the aligner afresh, as each run does.
func (p *Packer) newAligner() {
	p.aligner = newAligner(p.cfg.Partitions)
	if p.metrics != nil {
		p.metrics.aligner.Store(p.aligner)
	}
}

func (p *Packer) topicOf(x record.Stream) string {
	if x == record.Boxes {
		return p.cfg.Topics.Boxes
	}
	return p.cfg.Topics.Toys
}

// Graph is the packer's group graph.
func (p *Packer) Graph() *goka.GroupGraph {
	t := p.cfg.Topics
	return goka.DefineGroup(goka.Group(p.cfg.clockGroup()),
		goka.Input(goka.Stream(t.Toys), new(codec.Bytes), commitInOrder(p.trace.Process()(p.observe(record.Toys)))),
		goka.Input(goka.Stream(t.Boxes), new(codec.Bytes), commitInOrder(p.trace.Process()(p.observe(record.Boxes)))),
		goka.Loop(binCodec[validRecord, *validRecord]{}, commitInOrder(p.stray)),
		goka.Persist(binCodec[decision, *decision]{}),
		goka.Output(goka.Stream(t.Packed), jsonCodec[results.Packed]{}),
		goka.Output(goka.Stream(t.Unpacked), jsonCodec[results.Unpacked]{}),
		goka.Output(goka.Stream(t.Spare), jsonCodec[results.Spare]{}),
		goka.Output(goka.Stream(t.Late), jsonCodec[results.Late]{}),
		goka.Output(goka.Stream(t.Dead), jsonCodec[DeadLetter]{}),
	)
}

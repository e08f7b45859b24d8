// Package packer is the Goka implementation of the packing contract
// (docs/SEMANTICS.md). Two goka groups form a pipeline:
//
//	toys, boxes --> clock --(clock table)--> slots --> packed, unpacked, spare
//	                  |                          |
//	                  +--> dead-letters          +--> late, dead-letters (duplicates)
//
// The clock group validates each record, decides whether it is late, then
// whether it is a duplicate within its window (the dedupe entries), and
// applies it to the clock of its line (lateness, ranks, window closing). The
// clock's state and the decision are one record of its table, whose
// changelog is the slots group's input, so a crash can never keep one and
// lose the other; the dedupe entry an event makes, and the slots, are
// restored from those records too. State is kept only for the windows still
// open, and the table's records that no restart needs are deleted
// (horizon.go). See docs/ARCHITECTURE.md for the reasoning and the replay
// rules.
package packer

import (
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
)

// Packer runs the two goka groups.
type Packer struct {
	cfg    Config
	params paramsUS
	lim    limits       // what every record written must fit in (fit.go)
	seqs   []*sequencer // one per group (inorder.go)
	// clockStores: the clock group's table, partition by partition, with its
	// key clocks and dedupe entries (clock.go, dedupe.go); slotStores: the
	// slots group's, with its slots (slots.go).
	clockStores, slotStores *tableStores
	log                     *slog.Logger
	trace                   stageTracing // all nil: tracing off (tracing.go)
	metrics                 *metrics     // nil: metrics off (metrics.go)
	// aligner keeps the clock group's inputs together in event time (align.go).
	aligner *aligner
	procs   atomic.Pointer[[]*goka.Processor] // the groups' processors while they run (health.go)
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
	p.trace = newStageTracing(cfg, cfg.Tracer)
	return p, nil
}

// newStores starts the groups' tables empty, as goka does at each run. Only
// the slots group follows what the clock table must keep, and only when the
// packer cleans that table: its horizon marks the bounds that the cleaner
// alone consumes and trims (horizon.deletable), so with cleaning off the
// marks, and the heap of the windows' first offsets, would grow with every
// decision. Not following at all, rather than trimming the marks anyway,
// also spares each decision the work whose only use is the cleaner's.
func (p *Packer) newStores() {
	counts := p.metrics != nil
	p.clockStores = newTableStores(p.cfg.clockTable(), false, counts)
	p.slotStores = newTableStores(p.cfg.slotTable(), p.cfg.CleanEvery > 0, counts)
	if p.metrics != nil {
		p.metrics.stores.Store(&[2]*tableStores{p.clockStores, p.slotStores})
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

// Graphs are the two group graphs, in pipeline order.
func (p *Packer) Graphs() []*goka.GroupGraph {
	t := p.cfg.Topics
	clock := goka.DefineGroup(goka.Group(p.cfg.clockGroup()),
		goka.Input(goka.Stream(t.Toys), new(codec.Bytes), p.trace.clock.Process()(p.observe(record.Toys))),
		goka.Input(goka.Stream(t.Boxes), new(codec.Bytes), p.trace.clock.Process()(p.observe(record.Boxes))),
		goka.Loop(binCodec[validRecord, *validRecord]{}, p.stray),
		goka.Persist(binCodec[decision, *decision]{}),
		goka.Output(goka.Stream(t.Dead), jsonCodec[DeadLetter]{}),
	)
	slots := goka.DefineGroup(goka.Group(p.cfg.slotsGroup()),
		goka.Input(goka.Stream(p.cfg.clockTable()), binCodec[decision, *decision]{}, p.forwardToSlots),
		// Never written: the table gives the group a storage per partition,
		// built when goka assigns it, where the slots live (slots.go).
		goka.Persist(new(codec.Bytes)),
		goka.Output(goka.Stream(t.Packed), jsonCodec[results.Packed]{}),
		goka.Output(goka.Stream(t.Unpacked), jsonCodec[results.Unpacked]{}),
		goka.Output(goka.Stream(t.Spare), jsonCodec[results.Spare]{}),
		goka.Output(goka.Stream(t.Late), jsonCodec[results.Late]{}),
		goka.Output(goka.Stream(t.Dead), jsonCodec[DeadLetter]{}),
	)
	return []*goka.GroupGraph{clock, slots}
}

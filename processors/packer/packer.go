// Package packer is the Goka implementation of the packing contract
// (docs/SEMANTICS.md). Three goka groups form a pipeline:
//
//	toys, boxes --> dedupe --(dedupe events)--> clock --(clock table)--> slots --> packed, unpacked, spare
//	                  |                           |
//	                  +--> dead-letters           +--> late (via slots)
//
// The clock stage writes only its group table, and the table's changelog is
// the next stage's input: a state change and the event it produced are one
// Kafka record, so a crash can never keep one and lose the other. The dedupe
// stage's state is write-once, so it can afford two records: a redelivery
// recomputes and re-sends the same event. See docs/ARCHITECTURE.md for the
// reasoning and the replay rules.
package packer

import (
	"fmt"
	"log/slog"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
)

// Packer runs the three goka groups.
type Packer struct {
	cfg    Config
	params paramsUS
	lim    limits       // what every record written must fit in (fit.go)
	seqs   []*sequencer // one per group (inorder.go)
	clocks *clockCache  // the clock stage's last states (clock.go)
	log    *slog.Logger
	trace  stageTracing // all nil: tracing off (tracing.go)
	ready  func()       // WithReady
}

// New validates cfg; it does not touch Kafka. A nil log discards the
// packer's log.
func New(cfg Config, log *slog.Logger, opts ...Option) (*Packer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("packer config: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Packer{cfg: cfg, params: cfg.params(), lim: defaultLimits(), log: log, clocks: newClockCache()}
	for _, o := range opts {
		o(p)
	}
	return p, nil
}

func (p *Packer) topicOf(x record.Stream) string {
	if x == record.Boxes {
		return p.cfg.Topics.Boxes
	}
	return p.cfg.Topics.Toys
}

// Graphs are the three group graphs, in pipeline order.
func (p *Packer) Graphs() []*goka.GroupGraph {
	t := p.cfg.Topics
	dedupe := goka.DefineGroup(goka.Group(p.cfg.dedupeGroup()),
		goka.Input(goka.Stream(t.Toys), new(codec.Bytes), p.trace.dedupe.Process()(p.observe(record.Toys))),
		goka.Input(goka.Stream(t.Boxes), new(codec.Bytes), p.trace.dedupe.Process()(p.observe(record.Boxes))),
		goka.Loop(binCodec[validRecord, *validRecord]{}, p.dedupe),
		goka.Persist(binCodec[firstSeen, *firstSeen]{}),
		goka.Output(goka.Stream(p.cfg.dedupeEvents()), binCodec[validRecord, *validRecord]{}),
		goka.Output(goka.Stream(t.Dead), jsonCodec[DeadLetter]{}),
	)
	clock := goka.DefineGroup(goka.Group(p.cfg.clockGroup()),
		goka.Input(goka.Stream(p.cfg.dedupeEvents()), binCodec[validRecord, *validRecord]{}, p.clock),
		goka.Persist(binCodec[clockValue, *clockValue]{}),
	)
	slots := goka.DefineGroup(goka.Group(p.cfg.slotsGroup()),
		goka.Input(goka.Stream(goka.GroupTable(goka.Group(p.cfg.clockGroup()))), binCodec[clockValue, *clockValue]{}, p.forwardToSlots),
		goka.Loop(binCodec[slotMsg, *slotMsg]{}, p.slot),
		goka.Persist(binCodec[slotState, *slotState]{}),
		goka.Output(goka.Stream(t.Packed), jsonCodec[results.Packed]{}),
		goka.Output(goka.Stream(t.Unpacked), jsonCodec[results.Unpacked]{}),
		goka.Output(goka.Stream(t.Spare), jsonCodec[results.Spare]{}),
		goka.Output(goka.Stream(t.Late), jsonCodec[results.Late]{}),
	)
	return []*goka.GroupGraph{dedupe, clock, slots}
}

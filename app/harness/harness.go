// Package harness runs the workshop in one process: the
// elves write toys and boxes, the Goka packer packs them, the sleigh (when
// asked for) loads the packed pairs; the harness waits until the packer has
// consumed everything and reads back what Kafka holds (readback).
//
// The demo, the bench and the applications' tests run the pipeline through
// it, so that the topics of a run are named after one prefix
// (packer.Named), both streams' final heartbeats reach one horizon, and
// starting and quiescence are decided in one place. The components' own
// tests do not: an application is no fixture of a layer below it
// (app/layers_test.go). A run:
//
//	p, err := harness.New(harness.Named("run-1"), log)
//	...
//	run, err := p.Run(ctx)   // start, produce, wait until quiet, stop, read back
//	defer p.Close()
//	want := contract.Compute(run.Inputs(), p.Config().Packer.Params, contract.ClosedOnly)
//
// Run is the whole of it; the steps (EnsureTopics, Start or StartPacker,
// Produce, WaitQuiet, StopPacker, ReadBack) are there for the demo's
// checks and for the bench, which runs the packer as its own OS process.
package harness

import (
	"context"
	"log/slog"
	"sync"

	"github.com/northpole-workshop/northpole/processors/packer"
	"github.com/northpole-workshop/northpole/processors/packer/readback"
	"github.com/northpole-workshop/northpole/processors/sleigh"
	"github.com/northpole-workshop/northpole/producers"
)

// Pipeline runs one Config. Its methods are not safe for concurrent use,
// except those of the packers and the sleigh it hands out.
type Pipeline struct {
	cfg        Config
	log        *slog.Logger
	pk         *packer.Packer // never run: topics and goka graphs
	running    *RunningPacker // the one Start started
	sleigh     *sleigh.Sleigh
	sleighStop context.CancelFunc
	sleighDone chan struct{}
	sleighErr  error

	mu          sync.Mutex
	phase       string
	toys, boxes producers.Stats // the elves' latest progress
}

// New completes cfg (see Config) and validates the result; it does not
// touch Kafka. A nil log discards the components' logs.
func New(cfg Config, log *slog.Logger) (*Pipeline, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.complete()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &Pipeline{cfg: cfg, log: log}
	pk, err := packer.New(cfg.Packer, log)
	if err != nil {
		return nil, err
	}
	p.pk = pk
	return p, nil
}

// Config is the completed configuration the pipeline runs.
func (p *Pipeline) Config() Config { return p.cfg }

// Packer is a packer of the pipeline's configuration that New built and
// nothing runs: for its topics and its goka graphs. Its lag, and waiting
// until the packers that run (here or in other processes) are quiet, are
// outputs.Lag and outputs.WaitQuiet of Config().Packer.
func (p *Pipeline) Packer() *packer.Packer { return p.pk }

// EnsureTopics creates the packer's topics, the elves' among them: the elves
// write only to topics that exist.
func (p *Pipeline) EnsureTopics(ctx context.Context) error {
	return p.pk.EnsureTopics(ctx)
}

// ReadBack reads the pipeline's topics (readback.Read).
func (p *Pipeline) ReadBack(ctx context.Context) (readback.Run, error) {
	return readback.Read(ctx, p.cfg.Kafka, p.cfg.Packer.Topics)
}

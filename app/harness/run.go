package harness

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/northpole-workshop/northpole/processors/packer"
	"github.com/northpole-workshop/northpole/processors/packer/outputs"
	"github.com/northpole-workshop/northpole/processors/packer/readback"
	"github.com/northpole-workshop/northpole/processors/sleigh"
	"github.com/northpole-workshop/northpole/producers"
)

// RunningPacker is a packer running in this process.
type RunningPacker struct {
	cfg    packer.Config
	log    *slog.Logger
	cancel context.CancelFunc
	done   chan struct{}
	err    error
	once   sync.Once
}

// StartPacker creates the packer's topics and runs a new packer until its
// Stop. Several may run at once: they share the work as instances of one
// group do.
func (p *Pipeline) StartPacker(ctx context.Context) (*RunningPacker, error) {
	pk, err := packer.New(p.cfg.Packer, p.log)
	if err != nil {
		return nil, err
	}
	if err := pk.EnsureTopics(ctx); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &RunningPacker{cfg: p.cfg.Packer, log: p.log, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.err = pk.Run(ctx)
		if r.err != nil && ctx.Err() == nil {
			p.log.Error("packer stopped early", "err", r.err)
		}
	}()
	return r, nil
}

// WaitQuiet returns once the packer's groups have consumed everything
// (outputs.WaitQuiet), polling every interval; or with an error once ctx
// ends or this packer has stopped.
func (r *RunningPacker) WaitQuiet(ctx context.Context, every time.Duration) error {
	stopped := make(chan error, 1)
	go func() { <-r.done; stopped <- r.err }()
	return outputs.WaitQuiet(ctx, r.cfg, every, stopped, r.log)
}

// Stop stops the packer and returns what its Run returned (nil for a clean
// stop). It may be called more than once.
func (r *RunningPacker) Stop() error {
	r.once.Do(r.cancel)
	<-r.done
	return r.err
}

// Start creates the topics, starts the sleigh (with Config.Sleigh) and a
// packer, which run until StopPacker or Close.
func (p *Pipeline) Start(ctx context.Context) error {
	if p.cfg.Sleigh {
		if err := p.startSleigh(ctx); err != nil {
			return err
		}
	}
	r, err := p.StartPacker(ctx)
	if err != nil {
		return err
	}
	p.running = r
	return nil
}

func (p *Pipeline) startSleigh(ctx context.Context) error {
	s, err := sleigh.New(p.cfg.sleighConfig(), p.log)
	if err != nil {
		return err
	}
	if err := s.EnsureTopics(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	p.sleigh, p.sleighStop, p.sleighDone = s, cancel, make(chan struct{})
	go func() {
		defer close(p.sleighDone)
		p.sleighErr = s.Run(ctx)
	}()
	return nil
}

// Produce runs both streams' elves to the end and returns what each wrote.
// progress, when not nil, gets each one's Stats as the elves report them
// (producers.Config.Progress).
func (p *Pipeline) Produce(ctx context.Context, progress func(producers.Stats)) (toys, boxes producers.Stats, err error) {
	run := func(ctx context.Context, cfg producers.Config) (producers.Stats, error) {
		cfg.Progress = progress
		e, err := producers.New(cfg, p.log)
		if err != nil {
			return producers.Stats{Stream: cfg.Stream, Topic: cfg.Topic}, err
		}
		return e.Run(ctx)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		toys, err = run(gctx, p.cfg.Toys)
		return err
	})
	g.Go(func() (err error) {
		boxes, err = run(gctx, p.cfg.Boxes)
		return err
	})
	if err := g.Wait(); err != nil {
		return toys, boxes, fmt.Errorf("elves: %w", err)
	}
	return toys, boxes, nil
}

// WaitQuiet waits until the packer Start started has consumed everything.
func (p *Pipeline) WaitQuiet(ctx context.Context, every time.Duration) error {
	if p.running == nil {
		return errors.New("pipeline: WaitQuiet before Start")
	}
	return p.running.WaitQuiet(ctx, every)
}

// StopPacker stops the packer Start started; the sleigh goes on.
func (p *Pipeline) StopPacker() error {
	if p.running == nil {
		return nil
	}
	return p.running.Stop()
}

// Sleigh is the running sleigh (nil without Config.Sleigh or before Start).
func (p *Pipeline) Sleigh() *sleigh.Sleigh { return p.sleigh }

// manifestPatience bounds how long WaitManifest waits for the sleigh.
const manifestPatience = 60 * time.Second

// WaitManifest polls the sleigh's manifest summary until it counts want
// pairs, for a minute at most (the sleigh reads the packed topic, then its
// view reads the sleigh's table), and returns the last summary read: the
// caller compares its Pairs with what it expects.
func (p *Pipeline) WaitManifest(ctx context.Context, want int) (sleigh.Summary, error) {
	if p.sleigh == nil {
		return sleigh.Summary{}, errors.New("pipeline: no sleigh running")
	}
	deadline := time.Now().Add(manifestPatience)
	for {
		m, err := p.sleigh.Summary()
		if err == nil && m.Pairs >= want {
			return m, nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return m, fmt.Errorf("sleigh: manifest: %w", err)
			}
			return m, nil
		}
		select {
		case <-ctx.Done():
			return m, fmt.Errorf("waiting for the sleigh: %w", ctx.Err())
		case <-p.sleighDone:
			return m, fmt.Errorf("sleigh stopped early: %w", p.sleighErr)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Close stops what still runs (the packer Start started, the sleigh) and
// returns what their runs returned. It may be called more than once.
func (p *Pipeline) Close() error {
	errs := []error{p.StopPacker()}
	if p.sleigh != nil {
		p.sleighStop()
		<-p.sleighDone
		if p.sleighErr != nil {
			errs = append(errs, fmt.Errorf("sleigh: %w", p.sleighErr))
		}
	}
	return errors.Join(errs...)
}

// Result is a whole Run: what the elves wrote and what Kafka then held.
type Result struct {
	ToyStats, BoxStats producers.Stats
	readback.Run
}

// quietEvery is how often Run polls the packer's lag.
const quietEvery = 200 * time.Millisecond

// Run starts the pipeline, runs the elves to the end, waits until the packer
// has consumed everything, stops the packer and reads back what Kafka holds.
// The sleigh, if any, goes on until Close.
func (p *Pipeline) Run(ctx context.Context) (Result, error) {
	var res Result
	if err := p.Start(ctx); err != nil {
		return res, err
	}
	stopProgress := p.startProgress(ctx)
	var err error
	res.ToyStats, res.BoxStats, err = p.Produce(ctx, p.noteProgress)
	p.noteProgress(res.ToyStats)
	p.noteProgress(res.BoxStats)
	if err == nil {
		p.setPhase(PhasePacking)
		err = p.WaitQuiet(ctx, quietEvery)
	}
	stopProgress()
	if err != nil {
		return res, err
	}
	if err := p.StopPacker(); err != nil {
		return res, fmt.Errorf("packer: %w", err)
	}
	res.Run, err = p.ReadBack(ctx)
	return res, err
}

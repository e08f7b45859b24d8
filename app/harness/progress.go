package harness

import (
	"context"
	"fmt"
	"time"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/processors/packer/outputs"
	"github.com/northpole-workshop/northpole/producers"
)

// Phases of a Run, as Progress reports them.
const (
	PhaseProducing = "producing"
	PhasePacking   = "packing"
	PhaseDone      = "done"
)

// Progress is where a Run is.
type Progress struct {
	Elapsed time.Duration
	Phase   string
	// Toys and Boxes are what the elves last reported.
	Toys, Boxes producers.Stats
	// Lag is the packer's backlog (outputs.Lag), or LagErr why it is unknown.
	Lag    int64
	LagErr error
}

// StatusLine is p as one line of progress, for people; toys and boxes are
// the records each stream's elves were asked for. The packer's backlog is
// in Kafka records, not toys and boxes: its inputs' heartbeats count, and
// so do the records on its loop (those an elf put in a partition other than
// their line's), so it can exceed what the elves made.
func (p Progress) StatusLine(toys, boxes int) string {
	backlog := fmt.Sprint(p.Lag)
	if p.LagErr != nil {
		backlog = "?"
	}
	beats := p.Toys.Kinds[producers.KindHeartbeat] + p.Boxes.Kinds[producers.KindHeartbeat]
	return fmt.Sprintf("[%5.1fs] %s: toys %d/%d, boxes %d/%d sent, and %d heartbeats; the packer has %s records to read (inputs and its loop)",
		p.Elapsed.Seconds(), p.Phase, p.Toys.Records, toys, p.Boxes.Records, boxes, beats, backlog)
}

func (p *Pipeline) noteProgress(s producers.Stats) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.Stream == record.Boxes {
		p.boxes = s
	} else {
		p.toys = s
	}
}

func (p *Pipeline) setPhase(phase string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.phase = phase
}

// startProgress reports progress every progressEvery until stop, which
// reports PhaseDone.
func (p *Pipeline) startProgress(ctx context.Context) (stop func()) {
	p.setPhase(PhaseProducing)
	if p.cfg.Progress == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	began := time.Now()
	report := func(phase string, lag int64, lagErr error) {
		p.mu.Lock()
		pr := Progress{Elapsed: time.Since(began), Phase: phase, Toys: p.toys, Boxes: p.boxes, Lag: lag, LagErr: lagErr}
		if phase == "" {
			pr.Phase = p.phase
		}
		p.mu.Unlock()
		p.cfg.Progress(pr)
	}
	go func() {
		defer close(done)
		t := time.NewTicker(p.cfg.ProgressEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			lag, err := outputs.Lag(ctx, p.cfg.Packer)
			if ctx.Err() != nil {
				return
			}
			report("", lag, err)
		}
	}()
	return func() {
		cancel()
		<-done
		report(PhaseDone, 0, nil)
	}
}

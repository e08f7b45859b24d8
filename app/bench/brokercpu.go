package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/northpole-workshop/northpole/internal/procfs"
)

// NotLocal is the start of Result.BrokerCPU when the real broker is not a
// process of this host, so its CPU cannot be read (give its process ids,
// Config.BrokerPIDs).
const NotLocal = "not measured (broker not on this host"

// brokerMeter reads the CPU time of the broker a variant runs on: the
// broker's processes on this host, or this process, in which kfake runs.
type brokerMeter struct {
	pids []int // none: this process
	how  string
}

func (m *brokerMeter) cpu() (time.Duration, error) {
	if len(m.pids) == 0 {
		return procfs.SelfCPU()
	}
	var sum time.Duration
	for _, pid := range m.pids {
		d, err := procfs.CPU(pid)
		if err != nil {
			return 0, err
		}
		sum += d
	}
	return sum, nil
}

// brokerMeter is how variant v's broker CPU is measured, or nil and why it
// is not.
func (b *Bench) brokerMeter(v Variant) (*brokerMeter, string) {
	if v.Broker != "real" {
		switch {
		case v.Tracing != "off":
			return nil, "not measured (the span receiver runs in the bench process, beside kfake)"
		case v.Metrics:
			return nil, "not measured (the metrics receiver runs in the bench process, beside kfake)"
		case v.Live:
			return nil, "not measured (the elves write from the bench process, beside kfake, while the packer runs)"
		case v.Instances > 0 && b.cfg.JoinFirst:
			return nil, "not measured (with join-first the elves write from the bench process, beside kfake, while the packers run)"
		}
		return &brokerMeter{how: "kfake: the bench process's CPU (getrusage) while the packer ran, less its lag polls"}, ""
	}
	pids := b.cfg.BrokerPIDs
	how := "given"
	if len(pids) == 0 {
		var notFound []string
		for _, addr := range b.cfg.Real.Brokers {
			ps, err := procfs.ListenerPIDs(addr)
			if errors.Is(err, procfs.ErrNotLocal) {
				return nil, NotLocal + ")"
			}
			if err != nil {
				notFound = append(notFound, err.Error())
			}
			pids = append(pids, ps...)
		}
		if len(notFound) > 0 {
			return nil, "not measured (" + strings.Join(notFound, "; ") + ")"
		}
		how = "listening on " + strings.Join(b.cfg.Real.Brokers, ",")
	}
	slices.Sort(pids)
	pids = slices.Compact(pids)
	var ps []string
	for _, p := range pids {
		ps = append(ps, strconv.Itoa(p))
	}
	return &brokerMeter{pids: pids, how: fmt.Sprintf("/proc/<pid>/stat of process %s (%s), less the bench's lag polls", strings.Join(ps, "+"), how)}, ""
}

// pollCost is what the broker spends (and, for kfake, this process)
// on one call of lag: the mean of n calls. The bench polls lag while the
// packer runs, and that work is the bench's, not the packer's.
func (m *brokerMeter) pollCost(ctx context.Context, lag func(context.Context) (int64, error), n int) (time.Duration, error) {
	c0, err := m.cpu()
	if err != nil {
		return 0, err
	}
	for range n {
		if _, err := lag(ctx); err != nil {
			return 0, fmt.Errorf("calibrating the lag poll: %w", err)
		}
	}
	c1, err := m.cpu()
	if err != nil {
		return 0, err
	}
	return (c1 - c0) / time.Duration(n), nil
}

// idleRate is the broker's CPU per second of wall time over d, while the
// bench is idle: what it spends without the packer (on a shared broker,
// other clients' work too).
func (m *brokerMeter) idleRate(ctx context.Context, d time.Duration) (float64, error) {
	c0, err := m.cpu()
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(d):
	}
	c1, err := m.cpu()
	if err != nil {
		return 0, err
	}
	return (c1 - c0).Seconds() / time.Since(t0).Seconds(), nil
}

// brokerSpan is a measurement of the broker's CPU over the packer's life.
type brokerSpan struct {
	m          *brokerMeter
	idleBefore float64
	cpu0       time.Duration
	began      time.Time
	// skipped is the broker's CPU and wall time left out (skip).
	skippedCPU  time.Duration
	skippedWall time.Duration
}

// begin samples the broker's idle rate for two seconds, then starts the
// measurement; call it just before the packer starts. A nil meter (not
// measured) begins a nil span.
func (m *brokerMeter) begin(ctx context.Context) (*brokerSpan, error) {
	if m == nil {
		return nil, nil
	}
	idle, err := m.idleRate(ctx, 2*time.Second)
	if err != nil {
		return nil, fmt.Errorf("broker CPU: %w", err)
	}
	cpu0, err := m.cpu()
	if err != nil {
		return nil, fmt.Errorf("broker CPU: %w", err)
	}
	return &brokerSpan{m: m, idleBefore: idle, cpu0: cpu0, began: time.Now()}, nil
}

// skip leaves out of the span the broker's CPU and the wall time from now
// until resume is called: the packer's tail after zero lag, while its
// cleaner deletes (Config.Restart). A nil span skips nothing.
func (s *brokerSpan) skip() (resume func() error, err error) {
	if s == nil {
		return func() error { return nil }, nil
	}
	c0, err := s.m.cpu()
	if err != nil {
		return nil, fmt.Errorf("broker CPU: %w", err)
	}
	t0 := time.Now()
	return func() error {
		c1, err := s.m.cpu()
		if err != nil {
			return fmt.Errorf("broker CPU: %w", err)
		}
		s.skippedCPU += c1 - c0
		s.skippedWall += time.Since(t0)
		return nil
	}, nil
}

// end, once the packer has exited, sets r's broker figures: the CPU since
// begin less what skip left out and polls calls of lag (calibrated now: ten
// calls), and the idle rate, the mean of begin's and two seconds' now.
func (s *brokerSpan) end(ctx context.Context, r *Result, lag func(context.Context) (int64, error), polls int) error {
	if s == nil {
		return nil
	}
	cpu1, err := s.m.cpu()
	if err != nil {
		return fmt.Errorf("broker CPU: %w", err)
	}
	r.BrokerSeconds = (time.Since(s.began) - s.skippedWall).Seconds()
	perPoll, err := s.m.pollCost(ctx, lag, 10)
	if err != nil {
		return fmt.Errorf("broker CPU: %w", err)
	}
	idleAfter, err := s.m.idleRate(ctx, 2*time.Second)
	if err != nil {
		return fmt.Errorf("broker CPU: %w", err)
	}
	r.BrokerIdleCPU = (s.idleBefore + idleAfter) / 2
	r.Polls, r.PollCPUSeconds = polls, (perPoll * time.Duration(polls)).Seconds()
	r.BrokerCPU, r.BrokerCPUSeconds = s.m.how, (cpu1 - s.cpu0 - s.skippedCPU - perPoll*time.Duration(polls)).Seconds()
	return nil
}

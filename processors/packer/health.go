package packer

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/lovoo/goka"
	"golang.org/x/sync/errgroup"

	"github.com/northpole-workshop/northpole/internal/httpserve"
)

// Health is what a running packer says of itself to an operator: whether it
// does its work, and what its goka group reports (a list, one group). Consumer lag is
// the broker's to tell (the collector's kafkametrics receiver, or
// kafka-consumer-groups.sh), or the packer's metrics' (metrics.go): goka
// refreshes its own view of it once a minute.
type Health struct {
	// Running: the group has joined, recovered its table and consumes.
	Running bool          `json:"running"`
	Groups  []GroupHealth `json:"groups"`
}

// GroupHealth is one goka group of this instance.
type GroupHealth struct {
	Group string `json:"group"`
	// State is goka's: idle, starting, setup (a rebalance), running,
	// stopping or stopped.
	State string `json:"state"`
	// Partitions are those this instance holds now.
	Partitions []int32 `json:"partitions"`
	// Consumed and Written count records per topic, since the group last
	// started in this process.
	Consumed map[string]uint `json:"consumed"`
	Written  map[string]uint `json:"written"`
}

// healthTimeout bounds how long goka may take to gather its statistics
// for one request.
const healthTimeout = 2 * time.Second

var stateNames = map[goka.State]string{
	goka.ProcStateIdle:     "idle",
	goka.ProcStateStarting: "starting",
	goka.ProcStateSetup:    "setup",
	goka.ProcStateRunning:  "running",
	goka.ProcStateStopping: "stopping",
	goka.ProcStateStopped:  "stopped",
}

// Health reports the packer's group as goka sees it now.
func (p *Packer) Health(ctx context.Context) Health {
	proc := p.proc.Load()
	if proc == nil {
		return Health{Groups: []GroupHealth{}}
	}
	g := GroupHealth{
		Group:      string(proc.Graph().Group()),
		State:      stateNames[proc.StateReader().State()],
		Partitions: []int32{},
		Consumed:   map[string]uint{},
		Written:    map[string]uint{},
	}
	sctx, cancel := context.WithTimeout(ctx, healthTimeout)
	stats := proc.StatsWithContext(sctx)
	cancel()
	for part, ps := range stats.Group {
		g.Partitions = append(g.Partitions, part)
		for topic, in := range ps.Input {
			g.Consumed[topic] += in.Count
		}
		for topic, out := range ps.Output {
			g.Written[topic] += out.Count
		}
	}
	slices.Sort(g.Partitions)
	return Health{Running: proc.Recovered(), Groups: []GroupHealth{g}}
}

// HealthHandler serves GET /healthz: the packer's Health as JSON, with 200
// while it runs and 503 while it starts, rebalances, recovers or has
// stopped, so that a container's or an orchestrator's probe can use it.
func (p *Packer) HealthHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		h := p.Health(r.Context())
		status := http.StatusOK
		if !h.Running {
			status = http.StatusServiceUnavailable
		}
		httpserve.WriteJSON(w, status, h)
	})
	return mux
}

// healthWriteTimeout bounds one health response.
const healthWriteTimeout = 10 * time.Second

// ListenAndRun runs the packer (Run) and serves its health on addr
// (HealthHandler) until ctx ends or either fails, which stops the other.
// Run's errors come back as Run returns them.
func (p *Packer) ListenAndRun(ctx context.Context, addr string) error {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("packer: listen on %s: %w", addr, err)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		if err := httpserve.Serve(gctx, lis, p.HealthHandler(), healthWriteTimeout, p.log); err != nil {
			return fmt.Errorf("packer: health: %w", err)
		}
		return nil
	})
	g.Go(func() error { return p.Run(gctx) })
	return g.Wait()
}

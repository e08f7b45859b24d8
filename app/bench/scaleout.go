package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lovoo/goka"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/procfs"
	"github.com/northpole-workshop/northpole/processors/packer"
	"github.com/northpole-workshop/northpole/processors/packer/outputs"
	"github.com/northpole-workshop/northpole/producers"
)

// Scale-out (the "scale" variant): N packer instances, each its own OS
// process, in one consumer group on the same topics, from a backlog whose
// records are keyed by packing line (Config.Halls), so that more partitions
// than the four sizes carry work. On a machine with few cores the rate
// cannot grow with N; what carries to a larger cluster is each instance's
// CPU per event it consumed (flat if adding instances costs nothing) and
// how evenly the partitions and the work fall on the instances. Every run
// is checked against the batch reference, as a scale-out that loses or
// doubles a record would be fast for nothing.

// ScaleOut is what a scale-out run measured beyond Result's totals, whose
// CPUSeconds are then the instances' summed and MaxRSSMiB the largest.
type ScaleOut struct {
	// Spread is how the lines fall on the partitions (producers.Spread, of
	// the toys: both streams have the same lines), for people; Busiest is
	// the busiest partition's expected share over an even one, Idle the
	// partitions no line falls on.
	Spread  string  `json:"spread"`
	Busiest float64 `json:"spread_busiest"`
	Idle    int     `json:"idle_partitions"`
	// Instances, in the order they were started.
	Instances []InstanceResult `json:"instances"`
	// Consumed are the input events the instances' clock groups say they
	// consumed (summed). Each counts since it last got its partitions, so
	// when a partition changed hands after consuming began (a late join),
	// the sum is less than Result.InputEvents and the shares of work are
	// those of the last assignment; Complete says it is not.
	Consumed int64 `json:"consumed"`
	Complete bool  `json:"counts_complete"`
	// Verification is its check against the batch reference: every
	// scale-out run is checked.
	Verification
}

// InstanceResult is one packer instance of a scale-out run: the packer is
// one goka group (ARCHITECTURE.md), whose partitions its instances share.
type InstanceResult struct {
	Instance int `json:"instance"`
	// Partitions are those it held when the group was quiet (its Health);
	// PartitionShare is their number over the topic's.
	Partitions     []int32 `json:"partitions"`
	PartitionShare float64 `json:"partition_share"`
	// ExpectedShare is the share of the work the spread of lines puts on
	// those partitions (producers.Spread), what its partitions should give
	// it.
	ExpectedShare float64 `json:"expected_work_share"`
	// Consumed are the input events (toys and boxes, heartbeats too) it
	// consumed (Health). WorkShare is that over all instances'.
	Consumed  int64   `json:"consumed"`
	WorkShare float64 `json:"work_share"`
	// CPUSeconds is the process's user+system CPU over its whole life
	// (rusage); CPUPerEventUS is that over its share of the input events
	// (WorkShare × Result.InputEvents): what an input event costs the
	// instance that handles it.
	CPUSeconds    float64 `json:"packer_cpu_s"`
	CPUPerEventUS float64 `json:"packer_cpu_us_per_event"`
	MaxRSSMiB     float64 `json:"packer_max_rss_mib"`
	// HealthError says why its Health could not be read (then its
	// partitions and counts are empty).
	HealthError string `json:"health_error,omitempty"`
}

// instance is a running packer of a scale-out run and where it serves its
// health.
type instance struct {
	proc   *process
	health string // host:port
}

// scaleOut measures variant v (Instances packers) on kc.
func (b *Bench) scaleOut(ctx context.Context, kc kafkaconf.Config, v Variant, profile string) (Result, error) {
	r := Result{Variant: v}
	name, p, err := b.freshPipeline(ctx, kc, v)
	defer b.drop(kc, name)
	if err != nil {
		return r, err
	}
	cfg := p.Config().Packer
	env, _, stopReceiver, err := b.workerEnv(v)
	if err != nil {
		return r, err
	}
	defer stopReceiver()
	uses := topicUses([]*goka.GroupGraph{p.Packer().Graph()})
	before, err := endOffsetsByTopic(ctx, kc, topicsOf(uses), true)
	if err != nil {
		return r, err
	}
	meter, why := b.brokerMeter(v)
	r.BrokerCPU = why
	lag := func(ctx context.Context) (int64, error) { return outputs.Lag(ctx, cfg) }
	var polls atomic.Int64
	countedLag := func(ctx context.Context) (int64, error) {
		polls.Add(1)
		return lag(ctx)
	}

	spread := p.Config().Toys.Spread(int(v.Partitions))
	produce := func() error {
		b.progress("  pre-loading %d records (%d partitions, %d halls: %s; %s)", b.cfg.Records, v.Partitions, v.Halls, spread, v.Broker)
		t0 := time.Now()
		if _, _, err := p.Produce(ctx, b.elvesProgress()); err != nil {
			return err
		}
		b.progress("  pre-loaded in %s", time.Since(t0).Round(time.Millisecond))
		return nil
	}
	if !b.cfg.JoinFirst {
		if err := produce(); err != nil {
			return r, err
		}
	}
	span, err := meter.begin(ctx)
	if err != nil {
		return r, err
	}
	began := time.Now()
	b.progress("  starting %s in group %s", packers(v.Instances), cfg.Group)
	ins, err := b.startInstances(ctx, v.Instances, cfg, env, profile)
	if err == nil {
		var addrs []string
		for _, in := range ins {
			addrs = append(addrs, in.health)
		}
		b.progress("  packers started, health (GET /healthz) on %s", strings.Join(addrs, ", "))
	}
	if err == nil && b.cfg.JoinFirst {
		if err = b.waitJoined(ctx, ins, cfg); err == nil {
			began = time.Now()
			err = produce()
		}
	}
	if err == nil {
		err = b.waitQuiet(ctx, countedLag, anyStopped(ins), packers(len(ins)))
	}
	if err != nil {
		_ = stopInstances(ins, &r)
		return r, err
	}
	r.Seconds = time.Since(began).Seconds()
	sc := &ScaleOut{Spread: spread.String(), Busiest: spread.Busiest(), Idle: spread.Idle()}
	r.Scale = sc
	sc.Instances = b.settledHealths(ctx, ins, cfg)
	if err := stopInstances(ins, &r); err != nil {
		return r, err
	}
	if err := span.end(ctx, &r, lag, int(polls.Load())); err != nil {
		return r, err
	}
	if err := b.count(ctx, kc, cfg.Topics, uses, before, &r); err != nil {
		return r, err
	}
	sc.shares(r.InputEvents, v.Partitions, spread, p.Config().Boxes.Spread(int(v.Partitions)))
	for _, in := range sc.Instances {
		b.progress("  instance %d: partitions %s (%.0f %%); consumed %d inputs (%.1f %% of the work, %.1f %% expected from the lines); %.1f µs CPU per event of its share",
			in.Instance, formatParts(in.Partitions), 100*in.PartitionShare, in.Consumed, 100*in.WorkShare, 100*in.ExpectedShare, in.CPUPerEventUS)
	}
	if !sc.Complete {
		b.progress("  the instances counted %d of the %d input events: partitions changed hands after consuming began, the shares are of the last assignment", sc.Consumed, r.InputEvents)
	}
	if sc.Verification, err = b.verify(ctx, kc, cfg); err != nil {
		return r, err
	}
	return r, sc.mismatch()
}

// packers is "1 packer", "2 packers".
func packers(n int) string {
	if n == 1 {
		return "1 packer"
	}
	return fmt.Sprintf("%d packers", n)
}

// startInstances starts n packer workers of cfg, each serving its health on
// a free port of the loopback. Instance k's CPU profile, if any, is
// profile with "-i<k>" before its extension.
func (b *Bench) startInstances(ctx context.Context, n int, cfg packer.Config, env []string, profile string) ([]instance, error) {
	var ins []instance
	for k := 1; k <= n; k++ {
		addr, err := freeLoopbackAddr()
		if err != nil {
			return ins, err
		}
		w := Worker{Packer: cfg, Listen: addr, GCHeadroom: b.cfg.GCHeadroom}
		if profile != "" {
			w.CPUProfile = ProfilePath(profile, fmt.Sprintf("i%d", k), 1)
		}
		proc, err := b.start(ctx, w, env, false)
		if err != nil {
			return ins, fmt.Errorf("start packer instance %d: %w", k, err)
		}
		ins = append(ins, instance{proc: proc, health: addr})
	}
	return ins, nil
}

// waitJoined waits until the instances hold every partition among them,
// each instance some when there are enough (Config.JoinFirst).
func (b *Bench) waitJoined(ctx context.Context, ins []instance, cfg packer.Config) error {
	b.progress("  waiting until every packer holds partitions (join first)")
	stopped := anyStopped(ins)
	for {
		if held(healths(ctx, ins, cfg), int(cfg.Partitions), true) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-stopped:
			return fmt.Errorf("a packer ended before all had joined: %w", exitErr(err))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// settleWait bounds how long the bench waits, at zero lag, for the
// packers to hold every partition again.
const settleWait = 30 * time.Second

// settledHealths reads the instances' Health once they hold every
// partition among them: at zero lag the group may still be rebalancing (a
// late joiner), and a packer in a rebalance holds nothing. After
// settleWait it returns what it last read.
func (b *Bench) settledHealths(ctx context.Context, ins []instance, cfg packer.Config) []InstanceResult {
	deadline := time.Now().Add(settleWait)
	for {
		hs := healths(ctx, ins, cfg)
		if held(hs, int(cfg.Partitions), false) {
			return hs
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			b.progress("  the packers did not hold every partition within %s of zero lag: their health as it was", settleWait)
			return hs
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// held says whether the instances hold all of partitions among them, each
// exactly once; with each, also whether every instance holds some (when
// there are at least as many partitions as instances).
func held(hs []InstanceResult, partitions int, each bool) bool {
	count := map[int32]int{}
	for _, h := range hs {
		if h.HealthError != "" || each && partitions >= len(hs) && len(h.Partitions) == 0 {
			return false
		}
		for _, p := range h.Partitions {
			count[p]++
		}
	}
	for p := range int32(partitions) {
		if count[p] != 1 {
			return false
		}
	}
	return true
}

// freeLoopbackAddr is a port of 127.0.0.1 that was free a moment ago. The
// worker listens on it a little later; another process taking it in
// between makes that instance fail to start, which the run reports.
func freeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port for a packer's health: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// anyStopped delivers what the first of ins to exit exited with.
func anyStopped(ins []instance) <-chan error {
	ch := make(chan error, len(ins))
	for _, in := range ins {
		go func() { <-in.proc.exited; ch <- in.proc.err }()
	}
	return ch
}

// stopInstances ends every instance at once (SIGTERM), so that none spends
// its last seconds taking over the partitions of another, and sets r's
// CPU (summed), peak RSS (the largest) and each instance's in
// r.Scale.Instances, when set.
func stopInstances(ins []instance, r *Result) error {
	rss := make([]float64, len(ins))
	for i, in := range ins {
		rss[i] = procfs.PeakRSSMiB(in.proc.cmd.Process.Pid)
		_ = in.proc.cmd.Process.Signal(syscall.SIGTERM)
	}
	var errs []error
	r.CPUSeconds, r.MaxRSSMiB = 0, 0
	for i, in := range ins {
		cpu, err := in.proc.wait()
		if err != nil {
			errs = append(errs, fmt.Errorf("packer instance %d: %w", i+1, err))
		}
		r.CPUSeconds += cpu.Seconds()
		r.MaxRSSMiB = max(r.MaxRSSMiB, rss[i])
		if r.Scale != nil && i < len(r.Scale.Instances) {
			r.Scale.Instances[i].CPUSeconds, r.Scale.Instances[i].MaxRSSMiB = cpu.Seconds(), rss[i]
		}
	}
	return errors.Join(errs...)
}

// healths reads each instance's Health: the partitions it holds and the
// input records it consumed.
func healths(ctx context.Context, ins []instance, cfg packer.Config) []InstanceResult {
	out := make([]InstanceResult, len(ins))
	for i, in := range ins {
		out[i] = InstanceResult{Instance: i + 1, Partitions: []int32{}}
		h, err := fetchHealth(ctx, in.health)
		if err != nil {
			out[i].HealthError = err.Error()
			continue
		}
		for _, g := range h.Groups {
			out[i].Partitions = g.Partitions
			out[i].Consumed = int64(g.Consumed[cfg.Topics.Toys] + g.Consumed[cfg.Topics.Boxes])
		}
	}
	return out
}

// fetchHealth reads a packer's GET /healthz at addr. Its status is not
// looked at: a packer that is not Running (503) says so in the body too.
func fetchHealth(ctx context.Context, addr string) (packer.Health, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/healthz", nil)
	if err != nil {
		return packer.Health{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return packer.Health{}, fmt.Errorf("packer health at %s: %w", addr, err)
	}
	defer resp.Body.Close()
	var h packer.Health
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		return packer.Health{}, fmt.Errorf("packer health at %s: %w", addr, err)
	}
	return h, nil
}

// shares completes each instance's shares and CPU per event, and the sum
// of their consumed input events, given the run's input events, the
// topics' partitions and the two streams' spreads of lines.
func (s *ScaleOut) shares(events int64, partitions int32, toys, boxes producers.Spread) {
	var all int64
	s.Consumed = 0
	for _, in := range s.Instances {
		s.Consumed += in.Consumed
		all += in.Consumed
	}
	s.Complete = s.Consumed == events
	expected := func(ps []int32) float64 {
		x := 0.0
		for _, p := range ps {
			if int(p) < len(toys.Share) && int(p) < len(boxes.Share) {
				x += (toys.Share[p] + boxes.Share[p]) / 2
			}
		}
		return x
	}
	for i := range s.Instances {
		in := &s.Instances[i]
		in.PartitionShare = float64(len(in.Partitions)) / float64(partitions)
		in.ExpectedShare = expected(in.Partitions)
		in.WorkShare, in.CPUPerEventUS = 0, 0
		if all > 0 {
			in.WorkShare = float64(in.Consumed) / float64(all)
		}
		if in.WorkShare > 0 && events > 0 {
			in.CPUPerEventUS = in.CPUSeconds * 1e6 / (in.WorkShare * float64(events))
		}
	}
}

// formatParts is a partition list for people: "0,3,5-7", "none".
func formatParts(ps []int32) string {
	if len(ps) == 0 {
		return "none"
	}
	ps = slices.Sorted(slices.Values(ps))
	var out []string
	for i := 0; i < len(ps); {
		j := i
		for j+1 < len(ps) && ps[j+1] == ps[j]+1 {
			j++
		}
		if j > i {
			out = append(out, fmt.Sprintf("%d-%d", ps[i], ps[j]))
		} else {
			out = append(out, fmt.Sprint(ps[i]))
		}
		i = j + 1
	}
	return strings.Join(out, ",")
}

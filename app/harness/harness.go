// Package harness runs the workshop in one process: the
// elves write toys and boxes, the Goka packer packs them, the sleigh (when
// asked for) loads the packed pairs; the harness waits until the packer has
// consumed everything and reads back what Kafka holds.
//
// The demo, the bench, compare and the integration tests all run the
// pipeline through it, so that the topics of a run are named after one
// prefix, both streams' final heartbeats reach one horizon, and starting,
// quiescence and reading back are decided in one place:
//
//	p, err := harness.New(harness.Named("run-1"), log)
//	...
//	run, err := p.Run(ctx)   // start, produce, wait until quiet, stop, read back
//	defer p.Close()
//	want := contract.Compute(run.Inputs(), p.Config().Packer.Params, contract.ClosedOnly)
//
// Run is the whole of it; the steps (EnsureTopics, Start or StartPacker,
// Produce, WaitQuiet, StopPacker, ReadBack) are there for the tests that
// restart packers and for the bench, which runs the packer as its own OS
// process.
package harness

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
	"github.com/northpole-workshop/northpole/internal/topicread"
	"github.com/northpole-workshop/northpole/otel/telemetry"
	"github.com/northpole-workshop/northpole/processors/packer"
	"github.com/northpole-workshop/northpole/processors/packer/outputs"
	"github.com/northpole-workshop/northpole/processors/sleigh"
	"github.com/northpole-workshop/northpole/producers"
)

// Topics names every topic of a pipeline after prefix: prefix-toys,
// prefix-boxes, prefix-packed, prefix-unpacked, prefix-spare, prefix-late and
// prefix-dead.
func Topics(prefix string) packer.Topics {
	return packer.Topics{
		Toys: prefix + "-toys", Boxes: prefix + "-boxes",
		Packed: prefix + "-packed", Unpacked: prefix + "-unpacked", Spare: prefix + "-spare",
		Late: prefix + "-late", Dead: prefix + "-dead",
	}
}

// Config is one pipeline on one Kafka.
type Config struct {
	Kafka kafkaconf.Config
	// Packer is the packer's configuration; New sets its Kafka to Kafka.
	Packer packer.Config
	// Toys and Boxes are the elves'. New sets their Topic to the packer's
	// input topics and their Params to the packer's, and raises their
	// FinalHeartbeatAt to the horizon of both (producers.Horizon), so that the
	// final heartbeats of each stream close every window of both.
	Toys, Boxes producers.Config
	// Sleigh, when true, also runs the sleigh on the packed topic, in goka
	// group <Packer.Group>-sleigh.
	Sleigh bool
	// Tracing, when set, traces every component with the tracer provider it
	// gives for the component's service name (telemetry.ServiceToyElves,
	// telemetry.ServiceBoxElves, telemetry.ServicePacker,
	// telemetry.ServiceSleigh). Nil: nothing is traced.
	Tracing func(service string) trace.TracerProvider
	// Metrics, when set, gives the elves and the sleigh the meter provider
	// of their service name, as Tracing does. Nil: no metrics.
	Metrics func(service string) metric.MeterProvider
	// Progress, when set, is called every ProgressEvery while Run produces
	// and packs, and once more when it is done (Phase PhaseDone).
	Progress      func(Progress)
	ProgressEvery time.Duration
}

// DefaultConfig is a pipeline on the default topics and groups (those of the
// docs and the demo), without the sleigh.
func DefaultConfig() Config {
	return Config{
		Packer: packer.DefaultConfig(),
		Toys:   producers.DefaultConfig(record.Toys),
		Boxes:  producers.DefaultConfig(record.Boxes),
	}
}

// Named is DefaultConfig with every topic named after prefix (Topics) and the
// packer's groups after prefix-packer: a run of its own on a shared Kafka.
func Named(prefix string) Config {
	c := DefaultConfig()
	c.Packer.Topics = Topics(prefix)
	c.Packer.Group = prefix + "-packer"
	return c
}

// ValidPrefix refuses a prefix that would make names Kafka refuses: a topic
// name is at most 249 characters of [a-zA-Z0-9._-]. The longest name Named
// makes from a prefix is the sleigh's table, PREFIX-packer-sleigh-table (20
// characters more); at most 200 leaves room to spare.
func ValidPrefix(prefix string) error {
	if len(prefix) > 200 {
		return fmt.Errorf("%d characters: at most 200, so that every topic name fits Kafka's 249", len(prefix))
	}
	for _, r := range prefix {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("%q is not allowed in a Kafka topic name (letters, digits, '.', '_' and '-' are)", r)
		}
	}
	return nil
}

// complete ties the parts of c together (see Config), and gives each
// component its tracer (with Tracing).
func (c Config) complete() Config {
	c.Packer.Kafka, c.Toys.Kafka, c.Boxes.Kafka = c.Kafka, c.Kafka, c.Kafka
	if c.Tracing != nil {
		c.Packer.Tracer = c.Tracing(telemetry.ServicePacker)
		c.Toys.Tracer, c.Boxes.Tracer = c.Tracing(telemetry.ServiceToyElves), c.Tracing(telemetry.ServiceBoxElves)
	}
	if c.Metrics != nil {
		c.Toys.Meter, c.Boxes.Meter = c.Metrics(telemetry.ServiceToyElves), c.Metrics(telemetry.ServiceBoxElves)
	}
	c.Toys.Topic, c.Boxes.Topic = c.Packer.Topics.Toys, c.Packer.Topics.Boxes
	c.Toys.Params, c.Boxes.Params = c.Packer.Params, c.Packer.Params
	h := producers.Horizon(c.Toys, c.Boxes)
	for _, e := range []*producers.Config{&c.Toys, &c.Boxes} {
		if h.After(e.FinalHeartbeatAt) {
			e.FinalHeartbeatAt = h
		}
	}
	return c
}

func (c Config) sleighConfig() sleigh.Config {
	s := sleigh.DefaultConfig()
	s.Kafka, s.Topic, s.Group = c.Kafka, c.Packer.Topics.Packed, c.Packer.Group+"-sleigh"
	s.Partitions, s.Replication = c.Packer.Partitions, c.Packer.Replication
	if c.Tracing != nil {
		s.Tracer = c.Tracing(telemetry.ServiceSleigh)
	}
	if c.Metrics != nil {
		s.Meter = c.Metrics(telemetry.ServiceSleigh)
	}
	return s
}

// Validate reports every reason the pipeline cannot run, or nil; a problem
// of the settings the packer shares with the others (Kafka, W and L) is said
// once.
func (c Config) Validate() error {
	c = c.complete()
	errs := []error{c.Packer.Validate()}
	packers := map[string]bool{}
	for _, err := range leaves(errs[0]) {
		packers[err.Error()] = true
	}
	for _, e := range []producers.Config{c.Toys, c.Boxes} {
		for _, err := range leaves(e.Validate()) {
			if packers[err.Error()] {
				continue
			}
			if se := (*kafkaconf.SettingsError)(nil); !errors.As(err, &se) {
				err = fmt.Errorf("%s elves: %w", e.Stream, err)
			}
			errs = append(errs, err)
		}
	}
	if c.Toys.Stream != record.Toys || c.Boxes.Stream != record.Boxes {
		errs = append(errs, fmt.Errorf("the elves' streams are %q and %q, want %q and %q", c.Toys.Stream, c.Boxes.Stream, record.Toys, record.Boxes))
	}
	if c.Sleigh {
		if err := c.sleighConfig().Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Progress != nil && c.ProgressEvery <= 0 {
		errs = append(errs, fmt.Errorf("progress interval must be positive, got %v", c.ProgressEvery))
	}
	return joinOnce(errs)
}

// joinOnce joins the problems errs report, each once: the packer, the
// elves and the sleigh each validate the Kafka settings they share.
func joinOnce(errs []error) error {
	var out []error
	seen := map[string]bool{}
	for _, err := range leaves(errors.Join(errs...)) {
		if !seen[err.Error()] {
			seen[err.Error()] = true
			out = append(out, err)
		}
	}
	return errors.Join(out...)
}

// leaves are the errors errors.Join joined into err, joins within it
// opened too.
func leaves(err error) []error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		if err == nil {
			return nil
		}
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, leaves(e)...)
	}
	return out
}

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
// the records each stream's elves were asked for.
func (p Progress) StatusLine(toys, boxes int) string {
	backlog := fmt.Sprint(p.Lag)
	if p.LagErr != nil {
		backlog = "?"
	}
	return fmt.Sprintf("[%5.1fs] %s: toys %d/%d, boxes %d/%d sent; packer backlog %s records",
		p.Elapsed.Seconds(), p.Phase, p.Toys.Records, toys, p.Boxes.Records, boxes, backlog)
}

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

// ReadBack is what a run left in Kafka: the input records, as the packer read
// them, and its five result sets deduplicated by key (outputs.Read).
type ReadBack struct {
	Toys, Boxes []record.Input
	Goka        results.Set
	// DeadLetters are Goka.Dead's records whole, as the packer wrote them.
	DeadLetters []packer.DeadLetter
	Raw         outputs.Counts
}

// Inputs are the toys and then the boxes.
func (r ReadBack) Inputs() []record.Input { return slices.Concat(r.Toys, r.Boxes) }

// Read reads the input topics and the packer's result topics of t.
func Read(ctx context.Context, kc kafkaconf.Config, t packer.Topics) (ReadBack, error) {
	var r ReadBack
	var err error
	if r.Toys, err = topicread.Inputs(ctx, kc, t.Toys, record.Toys); err != nil {
		return r, fmt.Errorf("read input topic %s: %w", t.Toys, err)
	}
	if r.Boxes, err = topicread.Inputs(ctx, kc, t.Boxes, record.Boxes); err != nil {
		return r, fmt.Errorf("read input topic %s: %w", t.Boxes, err)
	}
	out, err := outputs.Read(ctx, kc, t)
	if err != nil {
		return r, fmt.Errorf("read Goka's result topics: %w", err)
	}
	r.Goka, r.DeadLetters, r.Raw = out.Set, out.DeadLetters, out.Raw
	return r, nil
}

// ReadBack reads the pipeline's topics (Read).
func (p *Pipeline) ReadBack(ctx context.Context) (ReadBack, error) {
	return Read(ctx, p.cfg.Kafka, p.cfg.Packer.Topics)
}

// Result is a whole Run: what the elves wrote and what Kafka then held.
type Result struct {
	ToyStats, BoxStats producers.Stats
	ReadBack
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
	res.ReadBack, err = p.ReadBack(ctx)
	return res, err
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

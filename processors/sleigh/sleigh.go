// Package sleigh is the consumer of the packer's results: it loads every
// packed pair onto Santa's sleigh, keeps the sleigh manifest (the pairs per
// size class, packing line and window, one entry per output key however
// often a replay re-sent it) and serves it over HTTP.
//
// It is a goka group ("sleigh" by default) whose table, keyed like the packed
// topic (line|<window start, µs since the epoch>|toy_id, as the packer writes
// it; the line is the size alone, M, or size/hall, M/hall-7), holds each
// pair once; a goka view of that table, stored in manifest order (order.go,
// store.go), answers GET /manifest a page at a time (manifest.go, http.go):
// sizes, in each its lines, in each line its windows and their pairs. A page
// is asked for by size (every line of it), by line, by window, or by both. A
// pair is identified by its line, window and toy id together: ids are
// unique within a window only, so the same toy id packed in two windows (or
// on two lines) is two pairs at two keys, both on the sleigh. With
// tracing on, each record gets a CONSUMER span "process packed" in service
// sleigh, child of the packer's "send packed" span: the packer -> sleigh edge
// of the service map.
package sleigh

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"
	"github.com/lovoo/goka/storage"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/northpole-workshop/northpole/internal/gokakit"
	"github.com/northpole-workshop/northpole/internal/gokastore"
	"github.com/northpole-workshop/northpole/internal/kafkaadmin"
	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
	"github.com/northpole-workshop/northpole/internal/stopping"
	"github.com/northpole-workshop/northpole/otel/kafkatrace"
)

// Config configures the sleigh.
type Config struct {
	Kafka kafkaconf.Config
	// Topic is the packer's packed topic.
	Topic string
	// Group is the goka group; its table is <group>-table.
	Group string
	// Partitions of the packed topic when the sleigh has to create it (the
	// packer normally has); its table gets the packed topic's count.
	Partitions  int32
	Replication int16
	// StorageDir keeps the tables in LevelDB under this directory; empty
	// keeps them in LevelDB in memory, rebuilt from Kafka at start.
	StorageDir string
	HTTP       HTTPConfig
	// Tracer, when set and not a no-op, traces every record ("process
	// packed", CONSUMER). Nil: no tracing work.
	Tracer trace.TracerProvider
	// Meter, when set, counts the records consumed and the pairs loaded,
	// and times the HTTP requests (metrics.go). Nil: no metrics.
	Meter metric.MeterProvider
}

// DefaultConfig reads the demo's packed topic.
func DefaultConfig() Config {
	return Config{Topic: "packed", Group: "sleigh", Partitions: 4, Replication: 1, HTTP: DefaultHTTPConfig()}
}

// Validate refuses configurations that cannot work.
func (c Config) Validate() error {
	var errs []error
	if err := c.Kafka.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Topic == "" {
		errs = append(errs, errors.New("sleigh: packed topic must not be empty"))
	}
	if c.Group == "" {
		errs = append(errs, errors.New("sleigh: group must not be empty"))
	}
	if c.Partitions < 1 || c.Replication < 1 {
		errs = append(errs, fmt.Errorf("sleigh: partitions (%d) and replication (%d) must be at least 1", c.Partitions, c.Replication))
	}
	if err := c.HTTP.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (c Config) table() string { return string(goka.GroupTable(goka.Group(c.Group))) }

// Sleigh consumes packed pairs and serves the manifest.
type Sleigh struct {
	cfg       Config
	log       *slog.Logger
	tr        *kafkatrace.Goka
	tables    atomic.Pointer[manifestTables] // the view's storage, once Run started it
	gate      *gate
	metrics   *metrics
	loaded    atomic.Int64  // records applied (first sight of a key)
	repeats   atomic.Int64  // records whose key was already on the sleigh
	conflicts atomic.Int64  // keys re-sent with a different pair: a packer bug
	malformed atomic.Int64  // records that are not a packed pair
	ready     chan struct{} // closed once Run's processor and view run
	readyOnce sync.Once
}

// New validates cfg; it does not touch Kafka. A nil log discards the
// sleigh's log.
func New(cfg Config, log *slog.Logger) (*Sleigh, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(cfg.Meter, cfg.Kafka.Brokers, cfg.Topic, cfg.Group)
	if err != nil {
		return nil, fmt.Errorf("sleigh: metrics: %w", err)
	}
	s := &Sleigh{cfg: cfg, log: log.With("component", "sleigh"), ready: make(chan struct{}), gate: newGate(cfg.HTTP), metrics: m}
	s.tr = kafkatrace.NewGoka(cfg.Tracer, kafkatrace.GokaConfig{Group: cfg.Group, ClientID: gokakit.ClientID(cfg.Group), Brokers: cfg.Kafka.Brokers})
	return s, nil
}

// Graph is the sleigh's goka group.
func (s *Sleigh) Graph() *goka.GroupGraph {
	return goka.DefineGroup(goka.Group(s.cfg.Group),
		goka.Input(goka.Stream(s.cfg.Topic), new(codec.Bytes), s.tr.Process()(s.load)),
		goka.Persist(packedCodec{}),
	)
}

// load puts a pair on the sleigh once: the first value of a key stays. The
// packer re-sends identical rows on replays (counted as repeats); a key with
// a different pair would be a toy in two boxes of one window (counted,
// logged, and its span fails). A toy id packed again in another window is
// another key, another pair.
//
// The input is read as bytes and decoded here, so that a malformed record is
// reported (log, span status) and skipped instead of stopping the group.
func (s *Sleigh) load(ctx goka.Context, msg any) {
	raw, _ := msg.([]byte)
	v, err := packedCodec{}.Decode(raw)
	if err != nil {
		s.notAPair(ctx, err)
		return
	}
	p := v.(*results.Packed)
	if err := keyFits(ctx.Key(), p); err != nil {
		s.notAPair(ctx, err)
		return
	}
	if v := ctx.Value(); v != nil {
		prev := v.(*results.Packed)
		if *prev == *p {
			s.repeats.Add(1)
			s.metrics.record(ctx.Partition(), OutcomeRepeat, p.Size)
			return
		}
		s.conflicts.Add(1)
		s.metrics.record(ctx.Partition(), OutcomeConflict, p.Size)
		s.log.Error("packed key re-sent with a different pair", "key", ctx.Key(), "first", *prev, "now", *p)
		if span := trace.SpanFromContext(ctx.Context()); span.IsRecording() {
			span.SetStatus(codes.Error, "key re-sent with a different pair")
		}
		return
	}
	ctx.SetValue(p)
	s.loaded.Add(1)
	s.metrics.record(ctx.Partition(), OutcomeLoaded, p.Size)
	if span := trace.SpanFromContext(ctx.Context()); span.IsRecording() {
		span.SetAttributes(attribute.String("northpole.line", p.Line), attribute.String("northpole.size", p.Size), attribute.String("northpole.window_start", p.WindowStart),
			attribute.String("northpole.toy_id", p.ToyID), attribute.String("northpole.box_id", p.BoxID))
	}
}

// notAPair counts, logs and marks on its span a packed record that is
// not a pair; the sleigh goes on with the next.
func (s *Sleigh) notAPair(ctx goka.Context, err error) {
	s.malformed.Add(1)
	s.metrics.record(ctx.Partition(), OutcomeMalformed, "")
	s.log.Error("packed record is not a pair", "partition", ctx.Partition(), "offset", ctx.Offset(), "err", err)
	if span := trace.SpanFromContext(ctx.Context()); span.IsRecording() {
		span.RecordError(err)
		span.SetStatus(codes.Error, "not a packed pair")
	}
}

// keyFits checks that a pair's key is the packer's key for it: the manifest
// lists pairs by their keys (order.go).
func keyFits(key string, p *results.Packed) error {
	k, ok := parseKey(key)
	if !ok {
		return fmt.Errorf("key %q is not line|<window µs>|toy_id", key)
	}
	at, err := record.ParseMadeAt(p.WindowStart)
	if err != nil || p.Line != k.line.String() || p.Size != k.size() || at.UnixMicro() != k.window || at.Nanosecond()%1000 != 0 {
		return fmt.Errorf("key %q is not the key of a pair of line %q, size %q and window %q", key, p.Line, p.Size, p.WindowStart)
	}
	return nil
}

// Counts are what the sleigh processor applied since it started.
type Counts struct {
	Loaded    int64 `json:"loaded"`
	Repeats   int64 `json:"repeats"`
	Conflicts int64 `json:"conflicts"`
	Malformed int64 `json:"malformed"`
}

// Counts since start.
func (s *Sleigh) Counts() Counts {
	return Counts{Loaded: s.loaded.Load(), Repeats: s.repeats.Load(), Conflicts: s.conflicts.Load(), Malformed: s.malformed.Load()}
}

// EnsureTopics creates the packed topic (if missing) and the sleigh's table
// (compacted, with the packed topic's partition count: goka co-partitions a
// group's input and table).
func (s *Sleigh) EnsureTopics(ctx context.Context) error {
	c := s.cfg
	if err := kafkaadmin.EnsureTopics(ctx, c.Kafka, kafkaadmin.Topic{Name: c.Topic, Partitions: c.Partitions, Replication: c.Replication}); err != nil {
		return err
	}
	n, err := kafkaadmin.Partitions(ctx, c.Kafka, c.Topic)
	if err != nil {
		return err
	}
	return kafkaadmin.EnsureTopics(ctx, c.Kafka, kafkaadmin.Topic{Name: c.table(), Partitions: n, Replication: c.Replication,
		Configs: map[string]string{"cleanup.policy": "compact"}})
}

// processorStorage is where the processor's table lives: LevelDB, in
// memory without a StorageDir (store.go).
func (s *Sleigh) processorStorage() storage.Builder {
	if s.cfg.StorageDir == "" {
		return memoryLevelDB()
	}
	// The processor skips keys it already holds; kept files could hold a
	// pair whose changelog write a crash lost (see gokastore). The same
	// options as the view's: LevelDB's defaults would hold up to 16 MiB per
	// partition in memory, for a table the sleigh only looks keys up in.
	return gokastore.FreshLevelDB(filepath.Join(s.cfg.StorageDir, "processor"), levelOptions())
}

// manifestTables are where the view's table lives: LevelDB under ordered
// keys, in memory without a StorageDir, else in its subdirectory manifest,
// kept across restarts (the view writes only what its changelog holds).
func (s *Sleigh) manifestTables() *manifestTables {
	if s.cfg.StorageDir == "" {
		return newManifestTables("")
	}
	return newManifestTables(filepath.Join(s.cfg.StorageDir, "manifest"))
}

// Run creates the topics and runs the processor and the manifest's view
// until ctx ends (nil) or one of them fails for good.
//
// The view runs once for the whole of Run and reconnects by itself while a
// broker is away (goka's WithViewAutoReconnect): its tables, and with them
// the manifest and its counts, stay as they are instead of being read again
// from the start. The processor, when it stops on a broker's passing state
// (a leader or coordinator moved, a broker restarting), starts again
// (gokakit.Supervise), until such failures go on for longer than the Kafka
// retry window without it running.
//
// Once ctx ends, Run waits at most stopping.Grace for each; goka closes the
// view's tables when the view returns, so a caller serving pages from them
// must have stopped serving first (ListenAndRun does).
func (s *Sleigh) Run(ctx context.Context) error {
	if err := s.EnsureTopics(ctx); err != nil {
		return unlessStopped(ctx, err) // stopped before it started: as clean as a later stop
	}
	kc, group := s.cfg.Kafka, s.cfg.Group
	tables := s.manifestTables()
	view, err := goka.NewView(kc.Brokers, goka.Table(s.cfg.table()), packedCodec{},
		goka.WithViewConsumerSaramaBuilder(goka.SaramaConsumerBuilderWithConfig(gokakit.Sarama(kc, group))),
		goka.WithViewTopicManagerBuilder(gokakit.TopicManager(kc, group, gokakit.TopicConfig(s.cfg.Replication))),
		goka.WithViewStorageBuilder(tables.builder()),
		goka.WithViewLogger(gokakit.Logger(s.log)),
		goka.WithViewAutoReconnect(),
	)
	if err != nil {
		return fmt.Errorf("sleigh: create goka view: %w", err)
	}
	tables.complete = view.Recovered
	s.tables.Store(tables)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		err := stopping.Wait(gctx, stopping.Grace, func(ctx context.Context) error {
			if err := view.Run(ctx); err != nil {
				return fmt.Errorf("sleigh view: %w", err)
			}
			return nil
		})
		if errors.Is(err, stopping.ErrIncomplete) {
			return err
		}
		return unlessStopped(gctx, err)
	})
	g.Go(func() error {
		return gokakit.Supervise(gctx, s.log, kc.WithDefaults().RetryFor, func(ctx context.Context) (bool, error) {
			return s.runProcessor(ctx, view)
		})
	})
	err = g.Wait()
	if errors.Is(err, stopping.ErrIncomplete) {
		return fmt.Errorf("sleigh: %w: the pairs read since its last commit are read again at the next start", err)
	}
	return err
}

// runProcessor runs a new processor until ctx ends or it fails; ran says
// whether it got to run (and the view with it).
func (s *Sleigh) runProcessor(ctx context.Context, view *goka.View) (ran bool, err error) {
	kc, group := s.cfg.Kafka, s.cfg.Group
	proc, err := goka.NewProcessor(kc.Brokers, s.Graph(),
		append(gokakit.Options(kc, group, gokakit.TopicConfig(s.cfg.Replication), s.log), goka.WithStorageBuilder(s.processorStorage()))...)
	if err != nil {
		return false, fmt.Errorf("sleigh: create goka processor: %w", err)
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	running := make(chan bool, 1)
	go func() { running <- s.signalReady(pctx, proc, view) }()
	err = proc.Run(pctx)
	cancel()
	if err != nil {
		err = fmt.Errorf("sleigh processor: %w", err)
	}
	return <-running, unlessStopped(ctx, err)
}

// Ready is closed once Run's processor has joined its group and recovered
// its table and the manifest's view runs: the sleigh is loading pairs and
// answering. It stays open when Run fails or stops first.
func (s *Sleigh) Ready() <-chan struct{} { return s.ready }

// signalReady reports whether proc and view came to run before ctx ended
// (Run failed or stopped: goka's wait also returns for a stopped processor),
// and closes s.ready the first time they did.
func (s *Sleigh) signalReady(ctx context.Context, proc *goka.Processor, view *goka.View) bool {
	if err := proc.WaitForReadyContext(ctx); err != nil || !proc.Recovered() {
		return false
	}
	select {
	case <-view.WaitRunning():
	case <-ctx.Done():
		return false
	}
	if ctx.Err() != nil {
		return false
	}
	s.readyOnce.Do(func() { close(s.ready) })
	return true
}

// unlessStopped is err, or nil once ctx is done: a stop asked for is clean.
func unlessStopped(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil //nolint:nilerr // the stop was asked for: not an error
	}
	return err
}

// ErrNotRunning: the manifest is asked before Run started the view.
var ErrNotRunning = errors.New("sleigh: not running")

// Summary counts the pairs on the sleigh by size class, line and window.
func (s *Sleigh) Summary() (Summary, error) { return s.summary(lineFilter{}) }

// summary is Summary of the lines f keeps.
func (s *Sleigh) summary(f lineFilter) (Summary, error) {
	tabs := s.tables.Load()
	if tabs == nil {
		return Summary{}, ErrNotRunning
	}
	sum := summarize(tabs.counts(), f)
	sum.Complete = tabs.complete()
	return sum, nil
}

// packedCodec is the JSON of results.Packed, as the packer writes it.
type packedCodec struct{}

func (packedCodec) Encode(v any) ([]byte, error) {
	switch p := v.(type) {
	case *results.Packed:
		return json.Marshal(p)
	case results.Packed:
		return json.Marshal(p)
	}
	return nil, fmt.Errorf("sleigh codec: cannot encode %T", v)
}

func (packedCodec) Decode(b []byte) (any, error) {
	var p results.Packed
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("decode packed pair: %w", err)
	}
	return &p, nil
}

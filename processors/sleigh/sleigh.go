// Package sleigh is the consumer of the packer's results: it loads every
// packed pair onto Santa's sleigh, keeps the sleigh manifest (the pairs per
// size and window, one entry per output key however often a replay re-sent
// it) and serves it over HTTP.
//
// It is a goka group ("sleigh" by default) whose table, keyed like the packed
// topic (size|<window start, µs since the epoch>|toy_id, as the packer writes
// it), holds each pair once; a goka view of that table answers GET /manifest.
// A pair is identified by its size, window and toy id together: ids are
// unique within a window only, so the same toy id packed in two windows is
// two pairs at two keys, both on the sleigh. With tracing on, each record gets a CONSUMER span "process
// packed" in service sleigh, child of the packer's "send packed" span: the
// packer -> sleigh edge of the service map.
package sleigh

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/codec"
	"github.com/lovoo/goka/storage"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/northpole-workshop/northpole/internal/gokakit"
	"github.com/northpole-workshop/northpole/internal/gokastore"
	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
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
	// StorageDir keeps the table in LevelDB under this directory; empty keeps
	// it in memory, rebuilt from Kafka at start.
	StorageDir string
	// Tracer, when set and not a no-op, traces every record ("process
	// packed", CONSUMER). Nil: no tracing work.
	Tracer trace.TracerProvider
}

// DefaultConfig reads the demo's packed topic.
func DefaultConfig() Config {
	return Config{Topic: "packed", Group: "sleigh", Partitions: 4, Replication: 1}
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
	return errors.Join(errs...)
}

func (c Config) table() string { return string(goka.GroupTable(goka.Group(c.Group))) }

// Sleigh consumes packed pairs and serves the manifest.
type Sleigh struct {
	cfg       Config
	log       *slog.Logger
	tr        *kafkatrace.Goka
	view      atomic.Pointer[goka.View]
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
	s := &Sleigh{cfg: cfg, log: log.With("component", "sleigh"), ready: make(chan struct{})}
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
		s.malformed.Add(1)
		s.log.Error("packed record is not a pair", "partition", ctx.Partition(), "offset", ctx.Offset(), "err", err)
		if span := trace.SpanFromContext(ctx.Context()); span.IsRecording() {
			span.RecordError(err)
			span.SetStatus(codes.Error, "not a packed pair")
		}
		return
	}
	p := v.(*results.Packed)
	if v := ctx.Value(); v != nil {
		prev := v.(*results.Packed)
		if *prev == *p {
			s.repeats.Add(1)
			return
		}
		s.conflicts.Add(1)
		s.log.Error("packed key re-sent with a different pair", "key", ctx.Key(), "first", *prev, "now", *p)
		if span := trace.SpanFromContext(ctx.Context()); span.IsRecording() {
			span.SetStatus(codes.Error, "key re-sent with a different pair")
		}
		return
	}
	ctx.SetValue(p)
	s.loaded.Add(1)
	if span := trace.SpanFromContext(ctx.Context()); span.IsRecording() {
		span.SetAttributes(attribute.String("northpole.size", p.Size), attribute.String("northpole.window_start", p.WindowStart),
			attribute.String("northpole.toy_id", p.ToyID), attribute.String("northpole.box_id", p.BoxID))
	}
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
	if err := kafkaconf.EnsureTopics(ctx, c.Kafka, kafkaconf.Topic{Name: c.Topic, Partitions: c.Partitions, Replication: c.Replication}); err != nil {
		return err
	}
	n, err := kafkaconf.Partitions(c.Kafka, c.Topic)
	if err != nil {
		return err
	}
	return kafkaconf.EnsureTopics(ctx, c.Kafka, kafkaconf.Topic{Name: c.table(), Partitions: n, Replication: c.Replication,
		Configs: map[string]string{"cleanup.policy": "compact"}})
}

// storage is where the processor's and the view's tables live: memory
// (gokakit's default) without a StorageDir.
func (s *Sleigh) storage(name string) storage.Builder {
	if s.cfg.StorageDir == "" {
		return gokastore.Memory()
	}
	if name == "processor" {
		// The processor skips keys it already holds; kept files could hold
		// a pair whose changelog write a crash lost (see gokastore).
		return gokastore.FreshLevelDB(filepath.Join(s.cfg.StorageDir, name))
	}
	return storage.DefaultBuilder(filepath.Join(s.cfg.StorageDir, name))
}

// Run creates the topics and runs the processor and the manifest's view
// until ctx ends (nil) or one of them fails for good. When one stops on a
// broker's passing state (a leader or coordinator moved, a broker
// restarting), both start again (gokakit.Supervise), until such failures go
// on for longer than the Kafka retry window without both running.
func (s *Sleigh) Run(ctx context.Context) error {
	if err := s.EnsureTopics(ctx); err != nil {
		return unlessStopped(ctx, err) // stopped before it started: as clean as a later stop
	}
	return gokakit.Supervise(ctx, s.log, s.cfg.Kafka.RetryWindow(), s.runOnce)
}

// runOnce runs a new processor and view until ctx ends or one fails; ran
// says whether both got to run.
func (s *Sleigh) runOnce(ctx context.Context) (ran bool, err error) {
	kc, group := s.cfg.Kafka, s.cfg.Group
	tm := gokakit.TopicConfig(s.cfg.Replication)
	proc, err := goka.NewProcessor(kc.Brokers, s.Graph(),
		append(gokakit.Options(kc, group, tm, s.log), goka.WithStorageBuilder(s.storage("processor")))...)
	if err != nil {
		return false, fmt.Errorf("sleigh: create goka processor: %w", err)
	}
	view, err := goka.NewView(kc.Brokers, goka.Table(s.cfg.table()), packedCodec{},
		goka.WithViewConsumerSaramaBuilder(goka.SaramaConsumerBuilderWithConfig(gokakit.Sarama(kc, group))),
		goka.WithViewTopicManagerBuilder(gokakit.TopicManager(kc, group, tm)),
		goka.WithViewStorageBuilder(s.storage("view")),
		goka.WithViewLogger(gokakit.Logger(s.log)),
	)
	if err != nil {
		return false, fmt.Errorf("sleigh: create goka view: %w", err)
	}
	s.view.Store(view)
	g, gctx := errgroup.WithContext(ctx)
	running := make(chan bool, 1)
	go func() { running <- s.signalReady(gctx, proc, view) }()
	g.Go(func() error {
		if err := proc.Run(gctx); err != nil {
			return fmt.Errorf("sleigh processor: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		if err := view.Run(gctx); err != nil {
			return fmt.Errorf("sleigh view: %w", err)
		}
		return nil
	})
	err = unlessStopped(ctx, g.Wait())
	return <-running, err // Wait has cancelled gctx, so this does not wait long
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

// Pair is one toy in one box.
type Pair struct {
	ToyID string `json:"toy_id"`
	BoxID string `json:"box_id"`
}

// Window is the pairs of one (size, window).
type Window struct {
	WindowStart string `json:"window_start"`
	Pairs       []Pair `json:"pairs"`
}

// Size is the manifest of one size class.
type Size struct {
	Size    string   `json:"size"`
	Pairs   int      `json:"pairs"`
	Windows []Window `json:"windows"`
}

// Manifest is what is on the sleigh: every packed pair once, by size (S, M,
// L, XL) and window, windows and pairs in order. One toy id can be in two
// windows, as two pairs.
type Manifest struct {
	Pairs int    `json:"pairs"`
	Sizes []Size `json:"sizes"`
	// Complete is false while the view is still loading the table.
	Complete bool `json:"complete"`
}

// ErrNotRunning: the manifest is asked before Run started the view.
var ErrNotRunning = errors.New("sleigh: not running")

// Manifest reads the sleigh's table.
func (s *Sleigh) Manifest() (Manifest, error) {
	view := s.view.Load()
	if view == nil {
		return Manifest{}, ErrNotRunning
	}
	it, err := view.Iterator()
	if err != nil {
		return Manifest{}, fmt.Errorf("sleigh: read manifest: %w", err)
	}
	defer it.Release()
	var pairs []results.Packed
	for it.Next() {
		v, err := it.Value()
		if err != nil {
			return Manifest{}, fmt.Errorf("sleigh: manifest entry %q: %w", it.Key(), err)
		}
		if p, ok := v.(*results.Packed); ok && p != nil {
			pairs = append(pairs, *p)
		}
	}
	if err := it.Err(); err != nil {
		return Manifest{}, fmt.Errorf("sleigh: read manifest: %w", err)
	}
	m := build(pairs)
	m.Complete = view.Recovered()
	return m, nil
}

func build(pairs []results.Packed) Manifest {
	slices.SortFunc(pairs, func(a, b results.Packed) int {
		if c := sizeRank(a.Size) - sizeRank(b.Size); c != 0 {
			return c
		}
		if a.WindowStart != b.WindowStart {
			return compareWindow(a.WindowStart, b.WindowStart)
		}
		return cmp.Or(strings.Compare(a.ToyID, b.ToyID), strings.Compare(a.BoxID, b.BoxID))
	})
	m := Manifest{Pairs: len(pairs), Sizes: []Size{}}
	for _, p := range pairs {
		if len(m.Sizes) == 0 || m.Sizes[len(m.Sizes)-1].Size != p.Size {
			m.Sizes = append(m.Sizes, Size{Size: p.Size})
		}
		sz := &m.Sizes[len(m.Sizes)-1]
		if len(sz.Windows) == 0 || sz.Windows[len(sz.Windows)-1].WindowStart != p.WindowStart {
			sz.Windows = append(sz.Windows, Window{WindowStart: p.WindowStart})
		}
		w := &sz.Windows[len(sz.Windows)-1]
		w.Pairs = append(w.Pairs, Pair{ToyID: p.ToyID, BoxID: p.BoxID})
		sz.Pairs++
	}
	return m
}

func sizeRank(s string) int {
	if i := slices.Index(record.Sizes, s); i >= 0 {
		return i
	}
	return len(record.Sizes)
}

// compareWindow orders window starts by time (they are RFC 3339 text, whose
// order is not the time order before year 0 or with offsets).
func compareWindow(a, b string) int {
	ta, ea := time.Parse(time.RFC3339Nano, a)
	tb, eb := time.Parse(time.RFC3339Nano, b)
	if ea != nil || eb != nil {
		if a < b {
			return -1
		}
		return 1
	}
	return ta.Compare(tb)
}

// Handler serves GET /manifest (JSON; ?size=M keeps one size class, a size
// that is not one is a 400) and GET /healthz.
func (s *Sleigh) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /manifest", func(w http.ResponseWriter, r *http.Request) {
		size := r.URL.Query().Get("size")
		if r.URL.Query().Has("size") && !record.ValidSize(size) {
			http.Error(w, fmt.Sprintf("size %q is not a size class: want one of %s", size, strings.Join(record.Sizes, ", ")), http.StatusBadRequest)
			return
		}
		m, err := s.Manifest()
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		if size != "" {
			kept := []Size{}
			m.Pairs = 0
			for _, sz := range m.Sizes {
				if sz.Size == size {
					kept = append(kept, sz)
					m.Pairs += sz.Pairs
				}
			}
			m.Sizes = kept
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(m)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		c := s.Counts()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"running": s.view.Load() != nil, "counts": c})
	})
	return mux
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

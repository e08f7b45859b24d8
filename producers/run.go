package producers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/stopping"
	"github.com/northpole-workshop/northpole/otel/kafkatrace"
)

// flushFor is how long Run's flush phase may wait for the producer to
// deliver what it holds and the final heartbeats. Elves asked to stop
// (cancelled: SIGTERM, Ctrl-C) wait stopping.Grace, whatever the broker
// does, and say how many records were not acknowledged. Elves that finished
// their plan wait as long as the producer retries a record
// (kafkaconf.Config.RetryFor), and a little more, so that a broker restart
// while the last records are buffered loses none of them.
func flushFor(ctx context.Context, kc kafkaconf.Config) time.Duration {
	if ctx.Err() != nil {
		return stopping.Grace
	}
	return kc.WithDefaults().RetryFor + 5*time.Second
}

// DefaultProgressEvery is the interval of progress reports when
// Config.ProgressEvery is 0.
const DefaultProgressEvery = 250 * time.Millisecond

// Stats counts what a run handed to Kafka.
type Stats struct {
	Stream record.Stream
	Topic  string
	// Kinds counts the messages handed to the producer, by Message.Kind
	// (final heartbeats included, under "heartbeat").
	Kinds map[string]int64
	// Records counts the non-heartbeat records handed to the producer (what
	// --count counts).
	Records int64
	// Sent counts every message handed to the producer; Acked those Kafka
	// confirmed, Failed those it refused (each is reported in Run's error).
	Sent   int64
	Acked  int64
	Failed int64
	// FinalHeartbeatAt is the made_at of the final heartbeats; zero when they
	// were not sent.
	FinalHeartbeatAt time.Time
	Elapsed          time.Duration
	// Spread is how the lines fall on the topic's partitions.
	Spread Spread
}

// Bad is the number of dead letters in s.Kinds.
func (s Stats) Bad() int64 {
	var n int64
	for k, v := range s.Kinds {
		if IsBad(k) {
			n += v
		}
	}
	return n
}

// InFlight is the number of messages handed over but not yet answered.
func (s Stats) InFlight() int64 { return s.Sent - s.Acked - s.Failed }

// Rate is records handed over per second of elapsed time.
func (s Stats) Rate() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Records) / s.Elapsed.Seconds()
}

// maxBuffered bounds the records handed to the producer and not yet
// answered. It is kgo's own default limit, said out loud because the elves
// wait for room themselves (see runner.send).
const maxBuffered = 50_000

// maxErrors bounds the distinct producer errors kept for Run's error (and
// logged); the rest are counted.
const maxErrors = 10

// failure is one distinct producer error: the same error on the same
// partition is reported once, with how many messages it hit.
type failure struct {
	partition int32
	text      string
	err       error // the first, wrapped with kind, topic and partition
	count     int64
}

// runner is the shared state of one Run.
type runner struct {
	cfg      Config
	log      *slog.Logger
	start    time.Time
	mu       sync.Mutex
	stats    Stats
	maxMade  time.Time
	failures []*failure
	answered chan struct{} // a token whenever an ack or error arrives
	room     chan struct{} // a token per record handed over and not yet answered
	failed   chan struct{} // closed on the first producer error
	failOnce sync.Once
	tracer   *kafkatrace.Producer // nil: tracing off
	metrics  *metrics
}

func (r *runner) snapshot() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.stats
	s.Kinds = maps.Clone(r.stats.Kinds)
	s.Elapsed = time.Since(r.start)
	return s
}

// handing counts m as sent before it goes into the producer, so that an
// answer can never be counted before its message.
func (r *runner) handing(m Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stats.Sent++
	r.stats.Kinds[m.Kind]++
	if m.Kind != KindHeartbeat {
		r.stats.Records++
	}
	if !m.MadeAt.IsZero() && m.MadeAt.After(r.maxMade) {
		r.maxMade = m.MadeAt
	}
}

func (r *runner) poke() {
	select {
	case r.answered <- struct{}{}:
	default:
	}
}

// answer counts Kafka's answer to a record of kind: kgo calls it, from one
// goroutine, for every record handed to Produce.
func (r *runner) answer(kind string, span trace.Span, rec *kgo.Record, err error) {
	kafkatrace.End(span, rec, err)
	r.metrics.answered(kind, rec, err)
	if err != nil {
		r.failedOne(kind, rec, err)
		r.failOnce.Do(func() { close(r.failed) })
	} else {
		r.mu.Lock()
		r.stats.Acked++
		r.mu.Unlock()
	}
	<-r.room
	r.poke()
}

// failedOne counts a producer error under its distinct (partition, error).
func (r *runner) failedOne(kind string, rec *kgo.Record, cause error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stats.Failed++
	text := cause.Error()
	for _, f := range r.failures {
		if f.partition == rec.Partition && f.text == text {
			f.count++
			return
		}
	}
	if len(r.failures) >= maxErrors {
		return
	}
	err := fmt.Errorf("produce %s record to topic %q partition %d: %w", kind, rec.Topic, rec.Partition, cause)
	r.failures = append(r.failures, &failure{partition: rec.Partition, text: text, err: err, count: 1})
	r.log.Error("elves: record not written", "err", err)
}

// failureError is the error of every message Kafka refused.
func (r *runner) failureError() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stats.Failed == 0 {
		return nil
	}
	var errs []error
	var listed int64
	for _, f := range r.failures {
		errs = append(errs, fmt.Errorf("%w (%d messages)", f.err, f.count))
		listed += f.count
	}
	if rest := r.stats.Failed - listed; rest > 0 {
		errs = append(errs, fmt.Errorf("%d more messages failed with other errors", rest))
	}
	return fmt.Errorf("elves: %d of %d messages were not written to topic %q: %w",
		r.stats.Failed, r.stats.Sent, r.cfg.Topic, errors.Join(errs...))
}

// waitAnswered waits until every message handed over has been acked or failed.
func (r *runner) waitAnswered(ctx context.Context) error {
	for {
		s := r.snapshot()
		if s.InFlight() <= 0 {
			return nil
		}
		select {
		case <-r.answered:
		case <-ctx.Done():
			return fmt.Errorf("%d records not acknowledged by Kafka (written or not, no one can tell): %w", s.InFlight(), ctx.Err())
		}
	}
}

// Elves are one run of elves: New validates a Config, Run runs it.
type Elves struct {
	cfg     Config
	log     *slog.Logger
	metrics *metrics
}

// New validates cfg; it does not touch Kafka. log gets the elves' log (nil:
// discarded).
func New(cfg Config, log *slog.Logger) (*Elves, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("elves: %w", err)
	}
	if cfg.ProgressEvery == 0 {
		cfg.ProgressEvery = DefaultProgressEvery
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(cfg.Meter, cfg.Kafka.Brokers, cfg.Topic, metricKinds(cfg))
	if err != nil {
		return nil, fmt.Errorf("elves: metrics: %w", err)
	}
	return &Elves{cfg: cfg, log: log.With("component", "elves", "stream", string(cfg.Stream), "topic", cfg.Topic), metrics: m}, nil
}

// Run produces the records of the configuration to Kafka and returns what
// it sent. It stops early when ctx is cancelled or a record cannot be
// written; either way it then flushes what the producer holds, sends the
// final heartbeats (unless a write failed) and returns the counts with an
// error that says why it stopped. Config.Progress, when set, is called at
// most every Config.ProgressEvery.
func (e *Elves) Run(ctx context.Context) (Stats, error) {
	cfg, kc, log, progress := e.cfg, e.cfg.Kafka, e.log, e.cfg.Progress
	none := Stats{Stream: cfg.Stream, Topic: cfg.Topic, Kinds: map[string]int64{}}
	producer, err := kgo.NewClient(append(kc.Kgo(),
		kgo.SeedBrokers(kc.Brokers...),
		// A key's partition is the one sarama's hash partitioner and goka
		// give it: the packer's stages rely on every record of a line
		// being in the partition that line hashes to.
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(partitionOf)),
		kgo.MaxBufferedRecords(maxBuffered),
		// Retries are silent otherwise: a broker restart the elves ride
		// out shows in the log, as it does for the goka processors.
		kafkaconf.KgoLogger(log),
	)...)
	if err != nil {
		return none, fmt.Errorf("elves: producer for topic %q: %w", cfg.Topic, err)
	}
	// The admin shares the producer's client; closing it would close both.
	topics, err := kadm.NewClient(producer).ListTopics(ctx, cfg.Topic)
	if err != nil {
		producer.Close()
		return none, fmt.Errorf("elves: connect to kafka %v: %w", kc.Brokers, err)
	}
	if err := topics[cfg.Topic].Err; err != nil {
		producer.Close()
		return none, fmt.Errorf("elves: topic %q on %v (it must exist before the elves start): %w", cfg.Topic, kc.Brokers, err)
	}
	parts := topics[cfg.Topic].Partitions
	spread := cfg.Spread(len(parts))
	// Without halls one of four partitions carrying nothing is how the sizes
	// hash, nothing to warn of; more partitions than that, or halls, were
	// asked for to fill them.
	if spread.Idle() > 0 && (cfg.Halls > 0 || len(parts) > len(record.Sizes)) {
		log.Warn("elves: partitions that no line falls on carry no work; more halls fill them (halls about the partition count gives every partition several lines)",
			"halls", cfg.Halls, "partitions", len(parts), "idle", spread.Idle(), "spread", spread.String())
	}

	r := &runner{
		cfg:      cfg,
		log:      log,
		start:    time.Now(),
		stats:    Stats{Stream: cfg.Stream, Topic: cfg.Topic, Kinds: map[string]int64{}, Spread: spread},
		answered: make(chan struct{}, 1),
		room:     make(chan struct{}, maxBuffered),
		failed:   make(chan struct{}),
		tracer:   kafkatrace.NewProducer(cfg.Tracer, producer.OptValue(kgo.ClientID).(string), kc.Brokers...),
		metrics:  e.metrics,
	}

	stopProgress := make(chan struct{})
	progressDone := make(chan struct{})
	go func() {
		defer close(progressDone)
		if progress == nil {
			return
		}
		// A timer set again after each report, not a ticker: a ticker that
		// fell behind delivers its next tick early, and reports would come
		// closer together than ProgressEvery.
		t := time.NewTimer(cfg.ProgressEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				progress(r.snapshot())
				t.Reset(cfg.ProgressEvery)
			case <-stopProgress:
				return
			}
		}
	}()

	log.Info("elves started", "count", cfg.Count, "duration", cfg.Duration, "rate", cfg.Rate,
		"elves", cfg.Elves, "partitions", len(parts), "halls", cfg.Halls, "lines", spread.String(),
		"seed", cfg.Seed, "sizes", cfg.SizeMix.String())

	runErr := r.produce(ctx, producer)

	// Flush phase: runs even when ctx is cancelled.
	flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushFor(ctx, kc))
	defer cancel()
	var errs []error
	if err := r.waitAnswered(flushCtx); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w: %w", stopping.ErrIncomplete, err)
		}
		errs = append(errs, fmt.Errorf("elves: flush topic %q: %w", cfg.Topic, err))
	}
	if len(errs) == 0 && !r.hasFailed() {
		if err := r.sendFinal(flushCtx, producer); err != nil {
			errs = append(errs, err)
		}
	}
	// Closing fails what is still buffered, which only a flush that timed
	// out leaves; those records are counted as failed.
	producer.Close()
	close(stopProgress)
	<-progressDone

	stats := r.snapshot()
	if err := r.failureError(); err != nil {
		errs = append(errs, err)
	}
	if runErr != nil {
		errs = append(errs, fmt.Errorf("elves: stopped after %d records (%d of %d messages acked): %w", stats.Records, stats.Acked, stats.Sent, runErr))
	}
	log.Info("elves finished", "records", stats.Records, "sent", stats.Sent, "acked", stats.Acked,
		"failed", stats.Failed, "final_heartbeat_at", stats.FinalHeartbeatAt, "elapsed", stats.Elapsed)
	return stats, errors.Join(errs...)
}

func (r *runner) hasFailed() bool {
	select {
	case <-r.failed:
		return true
	default:
		return false
	}
}

// produce runs the generator and the elves until the plan is done, the
// duration is over, ctx is cancelled or a write fails. It returns ctx's error
// when ctx was cancelled, nil otherwise (write failures are counted by answer).
func (r *runner) produce(ctx context.Context, producer *kgo.Client) error {
	cfg := r.cfg
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-r.failed:
			cancel()
		case <-runCtx.Done():
		}
	}()

	var lim *limiter
	if cfg.Rate > 0 {
		lim = newLimiter(cfg.Rate)
	}
	var deadline <-chan time.Time
	if cfg.Duration > 0 {
		t := time.NewTimer(cfg.Duration)
		defer t.Stop()
		deadline = t.C
	}

	g, gctx := errgroup.WithContext(runCtx)
	chans := make([]chan []Message, cfg.Elves)
	for i := range chans {
		chans[i] = make(chan []Message)
	}
	g.Go(func() error { return r.generate(gctx, chans, deadline) })
	for i := range chans {
		g.Go(func() error { return r.elf(gctx, producer, lim, chans[i]) })
	}
	_ = g.Wait() // only context errors; what matters is why
	return ctx.Err()
}

// generate makes the plan's messages and deals them to the elves, until the
// plan is done or deadline fires; it closes every elf's channel then.
func (r *runner) generate(ctx context.Context, elves []chan []Message, deadline <-chan time.Time) error {
	defer func() {
		for _, ch := range elves {
			close(ch)
		}
	}()
	gen := NewGenerator(r.cfg)
	for r.cfg.Count == 0 || gen.Generated() < r.cfg.Count {
		msgs := gen.Next()
		select {
		case elves[msgs[0].Elf] <- msgs:
		case <-deadline:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// elf sends the messages dealt to it, at the rate lim allows (nil: as fast
// as Kafka takes them; heartbeats do not count against the rate).
func (r *runner) elf(ctx context.Context, producer *kgo.Client, lim *limiter, dealt <-chan []Message) error {
	for msgs := range dealt {
		for _, m := range msgs {
			if lim != nil && m.Kind != KindHeartbeat {
				if err := lim.wait(ctx); err != nil {
					return err
				}
			}
			if err := r.send(ctx, producer, m); err != nil {
				return err
			}
		}
	}
	return nil
}

// send hands one message to the producer, or gives up when ctx is done
// before there is room for it. The elves wait for room here, where ctx is
// heeded, and hand records over with a context that never ends: kgo would
// fail a buffered record whose context ends, and Run delivers every record
// it handed over, also after a cancellation.
func (r *runner) send(ctx context.Context, producer *kgo.Client, m Message) error {
	select {
	case r.room <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	rec := &kgo.Record{Topic: r.cfg.Topic, Key: m.Key, Value: m.Value}
	// The span starts before the record is handed over, so that its context
	// can go into the headers; it ends when Kafka answers.
	span := r.tracer.Start(ctx, rec)
	r.handing(m)
	producer.Produce(context.WithoutCancel(ctx), rec, func(rec *kgo.Record, err error) { r.answer(m.Kind, span, rec, err) })
	return nil
}

// sendFinal writes the final heartbeats once everything else is acked, so
// that they follow every other record of their partition.
func (r *runner) sendFinal(ctx context.Context, producer *kgo.Client) error {
	r.mu.Lock()
	maxMade := r.maxMade
	r.mu.Unlock()
	final := FinalHeartbeats(r.cfg, maxMade)
	for _, m := range final {
		if err := r.send(ctx, producer, m); err != nil {
			return fmt.Errorf("elves: send final heartbeats to topic %q: %w", r.cfg.Topic, err)
		}
	}
	if err := r.waitAnswered(ctx); err != nil {
		return fmt.Errorf("elves: flush final heartbeats to topic %q: %w", r.cfg.Topic, err)
	}
	if !r.hasFailed() {
		r.mu.Lock()
		r.stats.FinalHeartbeatAt = final[0].MadeAt
		r.mu.Unlock()
		r.log.Debug("final heartbeats written", "made_at", record.FormatTime(final[0].MadeAt))
	}
	return nil
}

// limiter is a token bucket shared by the elves: each wait reserves the next
// slot, 1/rate apart, so the long-run rate holds even when sleeps overshoot.
// After an idle spell at most burst worth of slots may go at once.
type limiter struct {
	mu       sync.Mutex
	interval time.Duration
	burst    time.Duration
	next     time.Time
}

func newLimiter(rate float64) *limiter {
	iv := time.Duration(float64(time.Second) / rate)
	return &limiter{interval: iv, burst: max(iv, 20*time.Millisecond), next: time.Now()}
}

func (l *limiter) wait(ctx context.Context) error {
	l.mu.Lock()
	now := time.Now()
	if l.next.Before(now.Add(-l.burst)) {
		l.next = now.Add(-l.burst)
	}
	at := l.next
	l.next = l.next.Add(l.interval)
	l.mu.Unlock()
	d := time.Until(at)
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Package sleighbench is the sleigh's load test, `northpole bench-sleigh`
// without its flags: the sleigh as its own OS process (northpole process
// sleigh) loads a million packed pairs written straight onto its topic, then
// a hundred clients page through its whole manifest at once, on loopback.
// It reports the sleigh's memory (empty, idle, peaks while loading and
// paging) and the clients' pages per second and latencies. docs/PERFORMANCE.md
// has the numbers.
package sleighbench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/northpole-workshop/northpole/internal/kafkaadmin"
	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/kfakebroker"
	"github.com/northpole-workshop/northpole/internal/procfs"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
)

// Config is a load test of the sleigh's manifest: a sleigh process
// (northpole process sleigh) loads Pairs packed pairs, then Clients clients
// page through its whole manifest at once, on loopback.
type Config struct {
	// Kafka is the broker, its settings resolved (kafkaconf.Config.FromEnv);
	// the sleigh gets the same (sleighKafka). Without brokers, an
	// in-process kfake, without TLS or SASL.
	Kafka kafkaconf.Config
	// Executable is the northpole program; the sleigh runs as
	// `Executable process sleigh ...`.
	Executable string
	// MaxReaders and ReaderWait are the sleigh's --max-readers and
	// --reader-wait; zero leaves the sleigh's defaults.
	MaxReaders int
	ReaderWait time.Duration
	// Pairs are written straight onto the packed topic (no packer), 250 per
	// size class and window of 10 s.
	Pairs int
	// Clients each page through the whole manifest once, Limit pairs a
	// page, honouring 503's Retry-After.
	Clients int
	Limit   int
	// StorageDir runs the sleigh with --storage-dir (a temporary directory).
	StorageDir bool
	// Duration bounds the paging: clients still paging then stop.
	Duration time.Duration
	// Idle is how long the sleigh stands idle after loading before its
	// resident set is read: the Go runtime returns the memory that loading
	// freed to the system over some seconds.
	Idle time.Duration
	// Progress gets what the bench and the sleigh say as they go.
	Progress io.Writer
}

// DefaultConfig is the load test of issue 26's goals.
func DefaultConfig() Config {
	return Config{Pairs: 1_000_000, Clients: 100, Limit: 1000, Duration: 10 * time.Minute, Idle: 30 * time.Second, Progress: io.Discard}
}

// Validate refuses a load test that cannot run or would not stop.
func (c Config) Validate() error {
	var errs []error
	if c.Executable == "" {
		errs = append(errs, errors.New("sleigh load: no northpole program to run the sleigh"))
	}
	if c.Pairs < 1 || c.Clients < 1 {
		errs = append(errs, fmt.Errorf("sleigh load: pairs (%d) and clients (%d) must be at least 1", c.Pairs, c.Clients))
	}
	if c.Limit < 1 || c.Limit > 10000 {
		errs = append(errs, fmt.Errorf("sleigh load: limit %d is not from 1 to 10000", c.Limit))
	}
	if c.Duration <= 0 || c.Idle < 0 {
		errs = append(errs, fmt.Errorf("sleigh load: duration %v must be positive, idle %v not negative", c.Duration, c.Idle))
	}
	if c.MaxReaders < 0 || c.ReaderWait < 0 {
		errs = append(errs, fmt.Errorf("sleigh load: max-readers %d and reader-wait %v must not be negative", c.MaxReaders, c.ReaderWait))
	}
	return errors.Join(errs...)
}

// Result is what one load test measured.
type Result struct {
	Pairs   int    `json:"pairs"`
	Storage string `json:"storage"` // memory | disk
	Clients int    `json:"clients"`
	Limit   int    `json:"limit"`
	// EmptyRSSMiB is the sleigh's resident set once it ran with no pair,
	// IdleRSSMiB once it had loaded every pair and stood idle (Idle),
	// LoadingPeakMiB its peak (VmHWM) while loading.
	EmptyRSSMiB    float64 `json:"empty_rss_mib"`
	IdleRSSMiB     float64 `json:"idle_rss_mib"`
	LoadingPeakMiB float64 `json:"loading_peak_mib"`
	// BytesPerPair is (idle - empty) RSS over the pairs.
	BytesPerPair float64 `json:"bytes_per_pair"`
	LoadSeconds  float64 `json:"load_seconds"` // first pair written to the last one counted
	// PagingPeakMiB is the peak resident set while the clients paged
	// (VmHWM, reset before they started).
	PagingPeakMiB float64 `json:"paging_peak_mib"`
	Seconds       float64 `json:"seconds"` // of paging
	Requests      int     `json:"requests"`
	Pages         int     `json:"pages"`  // 200s
	Busy          int     `json:"busy"`   // 503s
	Failed        int     `json:"failed"` // anything else
	FirstFailure  string  `json:"first_failure,omitempty"`
	// ClientsDone paged through the whole manifest and saw Pairs pairs.
	ClientsDone int `json:"clients_done"`
	// Latencies of the pages of Limit pairs, request sent to body read.
	P50ms float64 `json:"p50_ms"`
	P99ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
	// BusyP99ms is the p99 of the 503s' latencies (the wait before them).
	BusyP99ms float64 `json:"busy_p99_ms"`
}

// RequestsPerSecond is every answer the clients got per second of paging.
func (r Result) RequestsPerSecond() float64 { return float64(r.Requests) / r.Seconds }

// PagesPerSecond is the 200s per second of paging.
func (r Result) PagesPerSecond() float64 { return float64(r.Pages) / r.Seconds }

// Run runs one load test. It stops early, with ctx's error, once ctx ends.
func Run(ctx context.Context, cfg Config) (_ Result, err error) {
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	kc := cfg.Kafka
	if len(kc.Brokers) == 0 {
		kf, err := kfakebroker.Start()
		if err != nil {
			return Result{}, err
		}
		defer kf.Close()
		kc.Brokers, kc.Security = kf.Addrs(), kafkaconf.Security{}
	}
	name := fmt.Sprintf("sleigh-load-%d", time.Now().UnixNano())
	topic := name + "-packed"
	if err := kafkaadmin.EnsureTopics(ctx, kc, kafkaadmin.Topic{Name: topic, Partitions: 4, Replication: 1}); err != nil {
		return Result{}, err
	}
	defer deleteTopics(kc, topic, name+"-table")
	addr, err := freeLoopbackAddr()
	if err != nil {
		return Result{}, err
	}
	kafkaArgs, env := sleighKafka(kc, os.Environ())
	args := append([]string{"process", "sleigh", "--packed-topic", topic, "--group", name, "--listen", addr}, kafkaArgs...)
	r := Result{Pairs: cfg.Pairs, Storage: "memory", Clients: cfg.Clients, Limit: cfg.Limit}
	if cfg.StorageDir {
		dir, err := os.MkdirTemp("", "northpole-sleigh-load-")
		if err != nil {
			return r, err
		}
		defer os.RemoveAll(dir)
		args, r.Storage = append(args, "--storage-dir", dir), "disk"
	}
	if cfg.MaxReaders > 0 {
		args = append(args, "--max-readers", strconv.Itoa(cfg.MaxReaders))
	}
	if cfg.ReaderWait > 0 {
		args = append(args, "--reader-wait", cfg.ReaderWait.String())
	}
	// Not CommandContext: the deferred stop below ends it, and waits.
	sleigh := exec.Command(cfg.Executable, args...)
	sleigh.Env, sleigh.Stdout, sleigh.Stderr = env, cfg.Progress, cfg.Progress
	if err := sleigh.Start(); err != nil {
		return r, fmt.Errorf("sleigh load: start the sleigh: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- sleigh.Wait() }()
	defer func() {
		_ = sleigh.Process.Signal(syscall.SIGTERM)
		var werr error
		select {
		case werr = <-exited:
		case <-time.After(30 * time.Second):
			_ = sleigh.Process.Kill()
			werr = fmt.Errorf("still running 30 s after SIGTERM, killed: %w", <-exited)
		}
		if werr != nil && err == nil {
			err = fmt.Errorf("sleigh load: the sleigh's exit: %w", werr)
		}
	}()
	pid := sleigh.Process.Pid
	base := "http://" + addr

	if err := waitPairs(ctx, base, 0, exited); err != nil {
		return r, err
	}
	if err := sleep(ctx, 2*time.Second); err != nil {
		return r, err
	}
	r.EmptyRSSMiB = procfs.RSSMiB(pid)
	fmt.Fprintf(cfg.Progress, "sleigh load: the sleigh runs (%.0f MiB); writing %d pairs to %s\n", r.EmptyRSSMiB, cfg.Pairs, topic)
	start := time.Now()
	if err := writePairs(ctx, kc, topic, cfg.Pairs); err != nil {
		return r, err
	}
	if err := waitPairs(ctx, base, cfg.Pairs, exited); err != nil {
		return r, err
	}
	r.LoadSeconds = time.Since(start).Seconds()
	r.LoadingPeakMiB = procfs.PeakRSSMiB(pid)
	fmt.Fprintf(cfg.Progress, "sleigh load: %d pairs loaded in %.1f s; the sleigh stands idle for %v\n", cfg.Pairs, r.LoadSeconds, cfg.Idle)
	if err := sleep(ctx, cfg.Idle); err != nil {
		return r, err
	}
	r.IdleRSSMiB = procfs.RSSMiB(pid)
	r.BytesPerPair = (r.IdleRSSMiB - r.EmptyRSSMiB) * (1 << 20) / float64(cfg.Pairs)
	fmt.Fprintf(cfg.Progress, "sleigh load: idle at %.0f MiB; %d clients page through the pairs\n", r.IdleRSSMiB, cfg.Clients)
	if err := procfs.ResetPeakRSS(pid); err != nil {
		return r, fmt.Errorf("sleigh load: %w", err)
	}
	page(ctx, cfg, base, &r)
	r.PagingPeakMiB = procfs.PeakRSSMiB(pid)
	select {
	case err := <-exited:
		exited <- err
		return r, fmt.Errorf("sleigh load: the sleigh exited while paged: %w", err)
	default:
	}
	return r, nil
}

// sleep waits d, or until ctx ends (then its error).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// freeLoopbackAddr is a loopback address with a port free now.
func freeLoopbackAddr() (string, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("sleigh load: find a free port: %w", err)
	}
	defer lis.Close()
	return lis.Addr().String(), nil
}

// deleteTopics removes the load test's topics from a lasting broker.
func deleteTopics(kc kafkaconf.Config, topics ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kc.NewReaderClient(ctx)
	if err != nil {
		return
	}
	defer cl.Close()
	_, _ = kadm.NewClient(cl).DeleteTopics(ctx, topics...)
}

// writePairs writes n packed pairs as the packer would: 250 per size class
// and window of 10 s, on the size's bare line (no halls, so that the figures
// stay those of earlier runs), keyed line|<window µs>|toy_id.
func writePairs(ctx context.Context, kc kafkaconf.Config, topic string, n int) error {
	cl, err := kgo.NewClient(append(kc.Kgo(), kgo.SeedBrokers(kc.Brokers...), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond))...)
	if err != nil {
		return fmt.Errorf("sleigh load: producer: %w", err)
	}
	defer cl.Close()
	first := time.Date(2026, 12, 24, 0, 0, 0, 0, time.UTC).UnixMicro()
	var mu sync.Mutex
	var failed error
	for i := range n {
		size := record.Sizes[i%len(record.Sizes)]
		window := first + int64(i/(250*len(record.Sizes)))*10_000_000
		p := results.Packed{ToyID: fmt.Sprintf("toy-5eed0001-%07d", i), BoxID: fmt.Sprintf("box-5eed0002-%07d", i), Line: size, Size: size, WindowStart: record.FormatMicros(window)}
		v, err := json.Marshal(p)
		if err != nil {
			return err
		}
		key := p.Line + "|" + strconv.FormatInt(window, 10) + "|" + p.ToyID
		cl.Produce(ctx, &kgo.Record{Key: []byte(key), Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				if failed == nil {
					failed = err
				}
				mu.Unlock()
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("sleigh load: write pairs: %w", err)
	}
	if failed != nil {
		return fmt.Errorf("sleigh load: write pairs: %w", failed)
	}
	return nil
}

// waitPairs polls the summary until the sleigh has loaded want pairs and
// its whole table, for ten minutes at most.
func waitPairs(ctx context.Context, base string, want int, exited chan error) error {
	deadline := time.Now().Add(10 * time.Minute)
	var last string
	for {
		res, err := http.Get(base + "/manifest/summary")
		if err == nil {
			var s struct {
				Pairs    int  `json:"pairs"`
				Complete bool `json:"complete"`
			}
			err = json.NewDecoder(res.Body).Decode(&s)
			res.Body.Close()
			if err == nil && res.StatusCode == http.StatusOK && s.Complete && s.Pairs >= want {
				return nil
			}
			last = fmt.Sprintf("%d pairs, complete %v (%s)", s.Pairs, s.Complete, res.Status)
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("sleigh load: the sleigh did not hold %d pairs within ten minutes: %s", want, last)
		}
		select {
		case err := <-exited:
			exited <- err
			return fmt.Errorf("sleigh load: the sleigh exited: %w", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

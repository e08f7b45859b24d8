package sleigh

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/northpole-workshop/northpole/internal/httpserve"
)

// HTTPConfig bounds the work the manifest's HTTP server takes on.
type HTTPConfig struct {
	// MaxReaders is how many manifest requests (pages and summaries) are
	// answered at once. Each holds a page's LevelDB iterators and a 32 KiB
	// buffer, and a core: more readers than cores only make each slower.
	MaxReaders int
	// ReaderWait is how long a request beyond MaxReaders waits for a place
	// before it gets 503 Service Unavailable with Retry-After.
	ReaderWait time.Duration
	// WriteTimeout bounds the time from the end of a request's header to
	// the end of its response: a client that does not read its page lets go
	// of its place then.
	WriteTimeout time.Duration
}

// DefaultHTTPConfig answers as many requests at once as Go runs threads
// (GOMAXPROCS, the cores): with 100 clients on 2 cores, 2 readers answered as
// many pages a second as 4, with half the p99 latency (docs/PERFORMANCE.md).
func DefaultHTTPConfig() HTTPConfig {
	return HTTPConfig{MaxReaders: runtime.GOMAXPROCS(0), ReaderWait: 20 * time.Millisecond, WriteTimeout: 30 * time.Second}
}

// Validate refuses limits that would refuse every request or none.
func (c HTTPConfig) Validate() error {
	var errs []error
	if c.MaxReaders < 1 {
		errs = append(errs, fmt.Errorf("sleigh: max readers (%d) must be at least 1", c.MaxReaders))
	}
	if c.ReaderWait < 0 {
		errs = append(errs, fmt.Errorf("sleigh: reader wait (%v) must not be negative", c.ReaderWait))
	}
	if c.WriteTimeout <= 0 {
		errs = append(errs, fmt.Errorf("sleigh: write timeout (%v) must be positive", c.WriteTimeout))
	}
	return errors.Join(errs...)
}

// HTTPHelp says what Handler serves, for the sleigh command's help.
const HTTPHelp = `  curl -s localhost:8089/manifest
      the first page: up to 1000 pairs by size class (S, M, L, XL), line (the
      size alone, then size/hall), window start and toy id, as sizes -> lines
      -> windows -> pairs; "total" counts the pairs of the query, "next"
      (absent on the last page) is the URL of the next page
  curl -s 'localhost:8089/manifest?size=M&window=2026-12-24T10:00:00Z&limit=5000'
      one size class (every line of it), one window, up to 5000 pairs a page
  curl -s 'localhost:8089/manifest?line=M/hall-7&limit=5000'
      one line
  curl -s 'localhost:8089/manifest?limit=5000&cursor=AQAGXm...'
      the page after the one whose "next" gave this cursor; pass it back as
      it came, with the same size, line and window
  curl -s localhost:8089/manifest/summary[?size=M|?line=M/hall-7]
      the number of pairs per size class, line and window, without the pairs
  curl -s localhost:8089/healthz
      whether the sleigh is ready (200; 503 until it has joined its group and
      its view runs), and its counts since start

Parameters: size (S, M, L or XL), line (M or M/hall-7: a size, or a size, a
slash and a hall), window (an RFC 3339 window start), limit (1 to 10000,
default 1000), cursor; any other parameter, or a wrong value, is a 400 that
says what is allowed.`

// retryAfter is what a 503 tells the client to wait, in seconds.
const retryAfter = 1

// Serve answers the manifest's HTTP requests (Handler) on lis until ctx
// ends, then lets the requests under way finish for a few seconds.
func (s *Sleigh) Serve(ctx context.Context, lis net.Listener) error {
	if err := httpserve.Serve(ctx, lis, s.Handler(), s.cfg.HTTP.WriteTimeout, s.log); err != nil {
		return fmt.Errorf("sleigh: the manifest: %w", err)
	}
	return nil
}

// ListenAndRun runs the sleigh (Run) and serves its manifest on addr
// (Serve) until ctx ends or either fails, which stops the other. Once both
// the server listens and the sleigh runs (Ready) it calls ready with the
// address it listens on, so that a sleigh that cannot reach Kafka fails
// without having announced a manifest.
//
// A page being served iterates the view's tables, which goka closes when
// the view stops, and goleveldb must not close a database with iterators
// open. So the server stops first (its requests get a few seconds, then are
// cut off), the manifest requests under way leave (at most drainWait more),
// and only then does Run stop.
func (s *Sleigh) ListenAndRun(ctx context.Context, addr string, ready func(net.Addr)) error {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("sleigh: listen on %s: %w", addr, err)
	}
	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRun()
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer stopRun()
		err := s.Serve(gctx, lis)
		if !s.gate.drain(drainWait) {
			s.log.Warn("manifest requests still under way after the server stopped; the tables close under them", "waited", drainWait)
		}
		return err
	})
	g.Go(func() error {
		return s.Run(runCtx) // its errors name the sleigh already
	})
	g.Go(func() error {
		select {
		case <-s.Ready():
			ready(lis.Addr())
		case <-gctx.Done():
		}
		return nil
	})
	return g.Wait()
}

// Handler serves
//
//	GET /manifest           a page of the manifest (size, line, window, limit, cursor; see writePage)
//	GET /manifest/summary   the number of pairs per size class, line and window (size, line)
//	GET /healthz            whether the sleigh runs and is ready (200; 503 until Ready), and its counts since start
//
// A parameter that is not one of these, or a value that is wrong, is a 400
// that says what is allowed. At most HTTPConfig.MaxReaders manifest
// requests run at once; one more waits up to ReaderWait, then gets a 503
// with Retry-After. With a meter provider, each request of these routes is
// timed in http.server.request.duration (metrics.go).
func (s *Sleigh) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /manifest", s.gate.limit(http.HandlerFunc(s.servePage)))
	mux.Handle("GET /manifest/summary", s.gate.limit(http.HandlerFunc(s.serveSummary)))
	mux.Handle("GET /healthz", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status, ready := http.StatusServiceUnavailable, false
		select {
		case <-s.Ready():
			status, ready = http.StatusOK, true
		default:
		}
		httpserve.WriteJSON(w, status, map[string]any{"running": s.tables.Load() != nil, "ready": ready, "counts": s.Counts()})
	}))
	return s.metrics.measure(mux)
}

func (s *Sleigh) servePage(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	tabs := s.tables.Load()
	if tabs == nil {
		unavailable(w, ErrNotRunning)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if err := writePage(w, tabs.tables(), q, tabs.complete(), tabs.counts(), r.URL.Path); err != nil {
		// The status and part of the page are out: the client sees JSON
		// cut short.
		s.log.Warn("manifest page cut short", "query", r.URL.RawQuery, "err", err)
	}
}

func (s *Sleigh) serveSummary(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	errs := checkParams(v, []string{"size", "line"})
	f, err := parseLineFilter(v)
	if err := errors.Join(append(errs, err)...); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	sum, err := s.summary(f)
	if err != nil {
		unavailable(w, err)
		return
	}
	httpserve.WriteJSON(w, http.StatusOK, sum)
}

// unavailable answers 503 with Retry-After: the sleigh is not running yet,
// or too busy now.
func unavailable(w http.ResponseWriter, err error) {
	w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	http.Error(w, err.Error(), http.StatusServiceUnavailable)
}

// gate lets at most cap(slots) requests through at once.
type gate struct {
	slots chan struct{}
	wait  time.Duration
}

func newGate(c HTTPConfig) *gate {
	return &gate{slots: make(chan struct{}, c.MaxReaders), wait: c.ReaderWait}
}

func (g *gate) limit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.enter(r.Context()) {
			unavailable(w, fmt.Errorf("the sleigh is answering %d manifest requests already: retry after %d s", cap(g.slots), retryAfter))
			return
		}
		defer func() { <-g.slots }()
		next.ServeHTTP(w, r)
	})
}

// drainWait bounds how long ListenAndRun waits for the manifest requests
// the server cut off to leave: cut off, a page stops at its next write.
const drainWait = 2 * time.Second

// drain waits, at most d, until no request holds a place, and keeps them
// all: no request enters after it. It says whether every place came free.
func (g *gate) drain(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for range cap(g.slots) {
		select {
		case g.slots <- struct{}{}:
		case <-t.C:
			return false
		}
	}
	return true
}

// enter takes a place, waiting up to g.wait for one; false if none came
// free or the request was given up.
func (g *gate) enter(ctx context.Context) bool {
	select {
	case g.slots <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(g.wait)
	defer t.Stop()
	select {
	case g.slots <- struct{}{}:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

package bench

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/northpole-workshop/northpole/internal/procfs"
	"github.com/northpole-workshop/northpole/otel/backend/metricsink"
	"github.com/northpole-workshop/northpole/otel/backend/servicemap"
	"github.com/northpole-workshop/northpole/processors/packer"
)

// process is a worker running as its own OS process.
type process struct {
	cmd     *exec.Cmd
	started time.Time // just before the exec
	exited  chan struct{}
	err     error
	// ready, when start was asked to watch, notes when the worker has
	// printed a line that starts with packer.ReadyPrefix.
	ready *lineWatch
}

// start runs the worker w with environment env, and w itself in WorkerEnv,
// until ctx ends or stop. Its output goes to Config.Progress; with watch,
// through a lineWatch for packer.ReadyPrefix (then a goroutine of this
// process copies it: not for a run whose broker CPU is this process's).
func (b *Bench) start(ctx context.Context, w Worker, env []string, watch bool) (*process, error) {
	enc, err := w.Encode()
	if err != nil {
		return nil, err
	}
	c := exec.CommandContext(ctx, b.cfg.Executable, b.cfg.Args...)
	c.Env, c.Stdout, c.Stderr = append(slices.Clip(env), WorkerEnv+"="+enc), b.cfg.Progress, b.cfg.Progress
	var ready *lineWatch
	if watch {
		// One writer for both: exec then copies them in one goroutine, so
		// the watch and Progress see one write at a time.
		ready = newLineWatch(b.cfg.Progress, packer.ReadyPrefix)
		c.Stdout, c.Stderr = ready, ready
	}
	c.Cancel = func() error { return c.Process.Signal(syscall.SIGTERM) }
	c.WaitDelay = 30 * time.Second
	started := time.Now()
	if err := c.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: c, started: started, exited: make(chan struct{}), ready: ready}
	go func() {
		p.err = c.Wait()
		close(p.exited)
	}()
	return p, nil
}

// stopped delivers what the process exited with, once it has.
func (p *process) stopped() <-chan error {
	ch := make(chan error, 1)
	go func() { <-p.exited; ch <- p.err }()
	return ch
}

// stop ends the process with SIGTERM and records its peak RSS and its CPU
// time in r.
func (p *process) stop(r *Result) error {
	// Peak RSS: VmHWM of the worker's own address space, read before it
	// exits. rusage's Maxrss is no good here: at exec Linux keeps the
	// high-water mark of the forking process, this one, whose RSS holds the
	// in-process broker's data.
	r.MaxRSSMiB = procfs.PeakRSSMiB(p.cmd.Process.Pid)
	cpu, err := p.halt()
	r.CPUSeconds = cpu.Seconds()
	return err
}

// halt ends the process with SIGTERM, waits until it has exited and returns
// its CPU time (user + system, rusage) and what it exited with.
func (p *process) halt() (time.Duration, error) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	return p.wait()
}

// wait waits until the process has exited and returns its CPU time (user
// + system, rusage) and what it exited with. A worker takes a second
// SIGTERM as an order to die at once: signal it once, then wait.
func (p *process) wait() (time.Duration, error) {
	<-p.exited
	var cpu time.Duration
	if ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return cpu, p.err
}

// cpu is the CPU time the running process has used so far (/proc, in
// ticks of 10 ms).
func (p *process) cpu() (time.Duration, error) { return procfs.CPU(p.cmd.Process.Pid) }

// lineWatch passes what a worker writes on to out and notes when a line
// starting with prefix first comes by.
type lineWatch struct {
	out    io.Writer
	prefix []byte
	mu     sync.Mutex
	line   []byte // the start of the current line, while not seen
	at     time.Time
	seen   chan struct{}
}

func newLineWatch(out io.Writer, prefix string) *lineWatch {
	return &lineWatch{out: out, prefix: []byte(prefix), seen: make(chan struct{})}
}

// Write passes p on to out (its failure is not the worker's: ignored) and
// looks for the line.
func (l *lineWatch) Write(p []byte) (int, error) {
	_, _ = l.out.Write(p)
	l.mu.Lock()
	defer l.mu.Unlock()
	for rest := p; len(rest) > 0 && l.at.IsZero(); {
		chunk, after, newline := bytes.Cut(rest, []byte{'\n'})
		// Only the line's first len(prefix) bytes matter.
		if n := len(l.prefix) - len(l.line); n > 0 {
			l.line = append(l.line, chunk[:min(n, len(chunk))]...)
		}
		if bytes.Equal(l.line, l.prefix) {
			l.at = time.Now()
			close(l.seen)
		}
		if !newline {
			break
		}
		l.line, rest = l.line[:0], after
	}
	return len(p), nil
}

// when is the time the line was seen, or zero.
func (l *lineWatch) when() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.at
}

// workerEnv is the worker's environment: the bench decides its tracing; only
// the batch span processor's sizes (OTEL_BSP_*) may come from the bench's
// environment. A traced variant exports to a receiver in this process:
// received counts its spans, stop closes it.
func (b *Bench) workerEnv(v Variant) (env []string, received func() int64, stop func(), err error) {
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "OTEL_") || strings.HasPrefix(e, "OTEL_BSP_") {
			env = append(env, e)
		}
	}
	if v.Metrics {
		rcv, err := metricsink.Listen("127.0.0.1:0", "", nil)
		if err != nil {
			return nil, nil, nil, err
		}
		env = append(env, "OTEL_EXPORTER_OTLP_ENDPOINT=http://"+rcv.GRPCAddr(), "OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
			"OTEL_TRACES_EXPORTER=none", "OTEL_METRIC_EXPORT_INTERVAL=1000")
		return env, rcv.Requests, rcv.Close, nil
	}
	if v.Tracing == "off" {
		return env, func() int64 { return 0 }, func() {}, nil
	}
	rcv, err := servicemap.Listen(servicemap.NewBuilder(servicemap.Options{}), "127.0.0.1:0", "", slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, nil, nil, err
	}
	env = append(env, "OTEL_EXPORTER_OTLP_ENDPOINT=http://"+rcv.GRPCAddr(), "OTEL_EXPORTER_OTLP_PROTOCOL=grpc", "OTEL_METRICS_EXPORTER=none")
	switch v.Tracing {
	case "10%":
		env = append(env, "OTEL_TRACES_SAMPLER=parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG=0.1")
	case "0%":
		env = append(env, "OTEL_TRACES_SAMPLER=parentbased_always_off")
	default:
		env = append(env, "OTEL_TRACES_SAMPLER=always_on")
	}
	received = func() int64 {
		_, spans := rcv.Received()
		return spans
	}
	return env, received, func() { rcv.Close() }, nil
}

// storageDir is the disk variant's directory, and how to clean up after it.
func (b *Bench) storageDir() (dir string, cleanup func(), err error) {
	if b.cfg.StorageDir != "" {
		return b.cfg.StorageDir, func() {}, nil
	}
	dir, err = os.MkdirTemp("", "northpole-bench-")
	if err != nil {
		return "", nil, err
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

package bench

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/northpole-workshop/northpole/otel/servicemap"
)

// process is a worker running as its own OS process.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
}

// start runs the worker w with environment env until ctx ends or stop.
func (b *Bench) start(ctx context.Context, w Worker, env []string) (*process, error) {
	c := exec.CommandContext(ctx, b.cfg.Executable, b.cfg.Args(w)...)
	c.Env, c.Stdout, c.Stderr = env, b.cfg.Progress, b.cfg.Progress
	c.Cancel = func() error { return c.Process.Signal(syscall.SIGTERM) }
	c.WaitDelay = 30 * time.Second
	if err := c.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: c, exited: make(chan struct{})}
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
	r.MaxRSSMiB = vmHWM(p.cmd.Process.Pid)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.exited
	if ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.CPUSeconds = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	}
	return p.err
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
	if v.Tracing == "off" {
		return env, func() int64 { return 0 }, func() {}, nil
	}
	rcv, err := servicemap.Listen(servicemap.NewBuilder(servicemap.Options{}), "127.0.0.1:0", "", slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, nil, nil, err
	}
	env = append(env, "OTEL_EXPORTER_OTLP_ENDPOINT=http://"+rcv.GRPCAddr(), "OTEL_EXPORTER_OTLP_PROTOCOL=grpc", "OTEL_METRICS_EXPORTER=none")
	if v.Tracing == "10%" {
		env = append(env, "OTEL_TRACES_SAMPLER=parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG=0.1")
	} else {
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

// vmHWM is the peak resident set of process pid in MiB (Linux), 0 if unknown.
func vmHWM(pid int) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				return 0
			}
			return kib / 1024
		}
	}
	return 0
}

package main

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/northpole-workshop/northpole/app/bench"
	"github.com/northpole-workshop/northpole/processors/packer"
)

// TestProcessPackerUsesItsFlags: process packer runs the packer its flags
// describe even with $NORTHPOLE_BENCH_WORKER set, which is the hidden
// bench-worker's alone. The worker there has a window the packer refuses,
// the flags a partition count: the refusal must be the flags'.
func TestProcessPackerUsesItsFlags(t *testing.T) {
	w := bench.Worker{Packer: packer.DefaultConfig()}
	w.Packer.Kafka.Brokers, w.Packer.Window = []string{"127.0.0.1:1"}, 0
	enc, err := w.Encode()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(bench.WorkerEnv, enc)
	err = execute(t, "process", "packer", "--brokers", "127.0.0.1:1", "--partitions", "0")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitUsage || !strings.Contains(err.Error(), "partitions must be at least 1, got 0") || strings.Contains(err.Error(), "window") {
		t.Errorf("process packer --partitions 0 with $%s set: %v; want the usage error of its flags (partitions), not the worker's (window)", bench.WorkerEnv, err)
	}
}

// TestBenchWorkerNeedsItsWorker: run without $NORTHPOLE_BENCH_WORKER, the
// bench's worker says what it needs.
func TestBenchWorkerNeedsItsWorker(t *testing.T) {
	t.Setenv(bench.WorkerEnv, "") // restores it after the test
	if err := os.Unsetenv(bench.WorkerEnv); err != nil {
		t.Fatal(err)
	}
	err := execute(t, "bench-worker")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitUsage || !strings.Contains(err.Error(), "$"+bench.WorkerEnv) {
		t.Errorf("bench-worker without $%s: %v; want a usage error naming it", bench.WorkerEnv, err)
	}
}

// execute runs the command line args in this process.
func execute(t *testing.T, args ...string) error {
	t.Helper()
	var out bytes.Buffer
	cmd := newRootCmd()
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	err := cmd.Execute()
	t.Logf("%s: %v\n%s", strings.Join(args, " "), err, out.String())
	return err
}

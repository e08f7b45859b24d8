package main

import (
	"context"
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
	out, code := runCLI(t, context.Background(), "process", "packer", "--brokers", "127.0.0.1:1", "--partitions", "0")
	if code != exitUsage || !strings.Contains(out, "partitions must be at least 1, got 0") || strings.Contains(out, "window") {
		t.Errorf("process packer --partitions 0 with $%s set: exit %d, %s\nwant the usage error of its flags (partitions), not the worker's (window)", bench.WorkerEnv, code, out)
	}
}

// TestBenchWorkerNeedsItsWorker: run without $NORTHPOLE_BENCH_WORKER, the
// bench's worker says what it needs.
func TestBenchWorkerNeedsItsWorker(t *testing.T) {
	t.Setenv(bench.WorkerEnv, "") // restores it after the test
	if err := os.Unsetenv(bench.WorkerEnv); err != nil {
		t.Fatal(err)
	}
	out, code := runCLI(t, context.Background(), "bench-worker")
	if code != exitUsage || !strings.Contains(out, "$"+bench.WorkerEnv) {
		t.Errorf("bench-worker without $%s: exit %d, %s\nwant a usage error naming it", bench.WorkerEnv, code, out)
	}
}

// TestProcessPackerSettingFlags: a fetch budget, a collector's headroom
// and an aligner interval that cannot work are usage errors that say what
// is wrong, before any Kafka is touched.
func TestProcessPackerSettingFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--fetch-budget-kib", "lots"}, "want a whole number of KiB"},
		{[]string{"--fetch-budget-kib", "-1"}, "want 0 to"},
		{[]string{"--gc-headroom-mib", "much"}, "want a whole number of MiB"},
		{[]string{"--gc-headroom-mib", "2000000"}, "want 0 to 1048576 MiB"},
		{[]string{"--align-every", "-1s"}, "align-every must not be negative"},
		{[]string{"--kafka-compression", "brotli"}, `compression "brotli" is not one of`},
		{[]string{"--kafka-commit-every", "-1s"}, "commit interval -1s is negative"},
	} {
		args := append([]string{"process", "packer", "--brokers", "127.0.0.1:1"}, tc.args...)
		out, code := runCLI(t, context.Background(), args...)
		if code != exitUsage || !strings.Contains(out, tc.want) {
			t.Errorf("%v: exit %d, %s\nwant a usage error saying %q", tc.args, code, out, tc.want)
		}
	}
}

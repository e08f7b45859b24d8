package bench

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/testsupport/syncbuf"
	"github.com/northpole-workshop/northpole/processors/packer"
)

// testWorkerArg, as the first argument of this test binary, makes it a
// packer worker (runTestWorker) instead of running the tests: the bench
// starts its workers as processes of their own.
const testWorkerArg = "northpole-bench-test-worker"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == testWorkerArg {
		os.Exit(runTestWorker())
	}
	os.Exit(m.Run())
}

// runTestWorker runs the packer of its Worker (from WorkerEnv) as `northpole
// bench-worker` does, until SIGTERM, and prints packer.ReadyLine when it is
// ready; with Worker.Listen it serves its health there.
func runTestWorker() int {
	w, ok, err := WorkerFromEnv()
	if err == nil && !ok {
		err = fmt.Errorf("no $%s", WorkerEnv)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "test worker:", err)
		return 2
	}
	cfg := w.Packer
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg.Ready = func() { fmt.Fprintln(os.Stderr, packer.ReadyLine(cfg)) }
	pk, err := packer.New(cfg, log)
	if err == nil && w.Listen != "" {
		err = pk.ListenAndRun(ctx, w.Listen)
	} else if err == nil {
		err = pk.Run(ctx)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "test worker:", err)
		return 1
	}
	return 0
}

// TestBenchStateAfterRun runs the baseline on kfake with the packer as its own
// process (this test binary, runTestWorker) on enough records, in windows
// short enough, that the packer's cleaner deletes part of its clock table:
// the state fields are filled, every internal topic keeps at most what was
// written and the clock table less, and a restart is timed. No figure is
// held against a performance bound.
func TestBenchStateAfterRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the packer on 20,000 records and restarts it; -short skips it")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	progress := &syncbuf.Buffer{}
	c := DefaultConfig()
	c.Records, c.Partitions, c.Variants = 20_000, []int32{2}, []string{"base"}
	c.Window, c.Lateness = time.Second, time.Second
	c.Timeout, c.Executable, c.Args, c.Progress = 4*time.Minute, exe, []string{testWorkerArg}, progress
	b, err := New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rs, err := b.Run(ctx)
	t.Logf("progress:\n%s", progress.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Error != "" {
		t.Fatalf("results %+v", rs)
	}
	r := rs[0]
	if r.RestartReadySeconds <= 0 || r.RestartMaxRSSMiB <= 0 {
		t.Errorf("restart: ready after %v s, max RSS %v MiB; want both measured", r.RestartReadySeconds, r.RestartMaxRSSMiB)
	}
	wait := cleanWait(packer.DefaultConfig()).Seconds()
	if r.CleanWaitSeconds < wait || r.CleanWaitCPUSeconds < 0 {
		t.Errorf("the packer ran on for %v s using %v s of CPU, want at least %v s", r.CleanWaitSeconds, r.CleanWaitCPUSeconds, wait)
	}
	if r.CPUSeconds <= 0 || r.EventsPerSec <= 0 || r.MaxRSSMiB <= 0 {
		t.Errorf("throughput figures: %v s CPU, %v events/s, %v MiB", r.CPUSeconds, r.EventsPerSec, r.MaxRSSMiB)
	}
	if !(0 < r.InternalRecordsKept && r.InternalRecordsKept < r.InternalRecordsWritten) {
		t.Errorf("internal topics keep %d of %d records, want some but fewer than written", r.InternalRecordsKept, r.InternalRecordsWritten)
	}
	// kfake answers DescribeLogDirs with its batches' sizes.
	if r.InternalBytes <= 0 || r.InternalBytesError != "" {
		t.Errorf("internal bytes %d (%q), want them measured on kfake", r.InternalBytes, r.InternalBytesError)
	}
	var suffixes []string
	var kept, written, size int64
	for _, ts := range r.InternalTopics {
		_, suffix, _ := strings.Cut(ts.Topic, "-packer-")
		suffixes = append(suffixes, suffix+":"+ts.Kind)
		if ts.Kept < 0 || ts.Kept > ts.Written || ts.Bytes < 0 {
			t.Errorf("topic %+v: kept must be between 0 and written, bytes measured", ts)
		}
		if suffix == "clock-table" && ts.Kept >= ts.Written {
			t.Errorf("the clock table keeps %d of %d records: nothing was cleaned", ts.Kept, ts.Written)
		}
		kept, written, size = kept+ts.Kept, written+ts.Written, size+ts.Bytes
	}
	if got, want := strings.Join(suffixes, ","), "clock-loop:loops,clock-table:tables"; got != want {
		t.Errorf("internal topics %s, want %s", got, want)
	}
	if kept != r.InternalRecordsKept || written != r.InternalRecordsWritten || size != r.InternalBytes {
		t.Errorf("the totals %d/%d/%d are not the topics' sums %d/%d/%d", r.InternalRecordsKept, r.InternalRecordsWritten, r.InternalBytes, kept, written, size)
	}
}

// TestBenchHandover runs the lines variant on kfake with two packer
// processes (this test binary) after the run: the one holding the clock
// table leaves and the other takes every partition, which the bench times.
// No figure is held against a bound.
func TestBenchHandover(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the packer, then two more; -short skips it")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	progress := &syncbuf.Buffer{}
	c := DefaultConfig()
	c.Records, c.Partitions, c.Variants, c.Halls = 4_000, []int32{2}, []string{"lines"}, []int{4}
	c.Timeout, c.Executable, c.Args, c.Progress = 4*time.Minute, exe, []string{testWorkerArg}, progress
	b, err := New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rs, err := b.Run(ctx)
	t.Logf("progress:\n%s", progress.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Error != "" || !rs[0].Handover {
		t.Fatalf("results %+v, want one run of the lines variant", rs)
	}
	if r := rs[0]; !(0 < r.HandoverExitSeconds && r.HandoverExitSeconds < r.HandoverSeconds) {
		t.Errorf("handover in %v s, the leaver gone after %v s: want both measured, the exit first", r.HandoverSeconds, r.HandoverExitSeconds)
	}
	var text strings.Builder
	WriteText(&text, rs)
	if !strings.Contains(text.String(), "handover s") {
		t.Errorf("the state table has no handover column:\n%s", text.String())
	}
}

// TestBenchRestartReady: the restart is timed to the worker's ready line, even
// when the line comes in pieces after other output; a worker that exits
// before it is an error.
func TestBenchRestartReady(t *testing.T) {
	for _, tc := range []struct {
		script, wantErr string
	}{
		{`trap 'exit 0' TERM; echo "starting, not packer ready"; sleep 0.3; printf 'pack' >&2; sleep 0.1; printf 'er ready: now\n' >&2; while :; do sleep 0.05; done`, ""},
		{`echo "  packer ready, but indented"; exit 3`, "ended before it printed \"packer ready\": exit status 3"},
		{`exit 0`, "exit status 0"},
	} {
		c := validConfig()
		progress := &syncbuf.Buffer{}
		c.Executable, c.Args, c.Progress = "/bin/sh", []string{"-c", tc.script}, progress
		b, err := New(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		var r Result
		err = b.restart(context.Background(), Worker{CPUProfile: "kept"}, nil, &r)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.script, err)
		case tc.wantErr == "" && (r.RestartReadySeconds < 0.4 || r.RestartMaxRSSMiB <= 0):
			t.Errorf("%s: ready after %v s with %v MiB, want at least 0.4 s and the RSS", tc.script, r.RestartReadySeconds, r.RestartMaxRSSMiB)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: %v, want an error saying %q", tc.script, err, tc.wantErr)
		}
		if !strings.Contains(progress.String(), "starting") && tc.wantErr == "" {
			t.Errorf("the worker's output did not reach Progress: %q", progress.String())
		}
	}
}

// TestLineWatch: only a line that starts with the prefix counts, however
// the writes cut it; everything is passed on.
func TestLineWatch(t *testing.T) {
	for _, tc := range []struct {
		writes []string
		seen   bool
	}{
		{[]string{"packer ready: x\n"}, true},
		{[]string{"log line\npa", "cker rea", "dy"}, true},
		{[]string{"x packer ready\n", "packer\n", "ready\n"}, false},
		{[]string{"packer rea\n", "dy\n"}, false},
	} {
		var out bytes.Buffer
		l := newLineWatch(&out, packer.ReadyPrefix)
		for _, w := range tc.writes {
			if n, err := l.Write([]byte(w)); n != len(w) || err != nil {
				t.Errorf("Write(%q) = %d, %v", w, n, err)
			}
		}
		if seen := !l.when().IsZero(); seen != tc.seen {
			t.Errorf("%q: seen %v, want %v", tc.writes, seen, tc.seen)
		}
		if out.String() != strings.Join(tc.writes, "") {
			t.Errorf("%q: passed on %q", tc.writes, out.String())
		}
	}
}

// TestMeasuresState: the state is measured for the packer's backlog
// variants only, and not at all without Restart.
func TestMeasuresState(t *testing.T) {
	c := validConfig()
	b, _ := New(c, nil)
	for _, v := range []struct {
		v    Variant
		want bool
	}{
		{Variant{Name: "baseline"}, true}, {Variant{Storage: "disk"}, true}, {Variant{Tracing: "100%"}, true},
		{Variant{Live: true}, false}, {Variant{Hop: true}, false},
	} {
		if got := b.measuresState(v.v); got != v.want {
			t.Errorf("%+v: %v, want %v", v.v, got, v.want)
		}
	}
	c.Restart = false
	b, _ = New(c, nil)
	if b.measuresState(Variant{Name: "baseline"}) {
		t.Error("measured without Restart")
	}
	uses := []topicUse{{"in", KindInputs, 1}, {"loop", KindLoops, 1}, {"ev", KindEvents, 1}, {"t", KindTables, 0}, {"out", KindOutputs, 0}}
	var names []string
	for _, u := range internalTopics(uses) {
		names = append(names, u.topic)
	}
	if got := strings.Join(names, ","); got != "loop,ev,t" {
		t.Errorf("internal topics %s, want loop,ev,t", got)
	}
}

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/stopping"
)

// TestMain runs main itself when TestInterrupt re-executes the test binary,
// or when bench-sleigh starts it as its sleigh (with its own arguments).
func TestMain(m *testing.M) {
	switch os.Getenv("NORTHPOLE_TEST_RUN_MAIN") {
	case "1":
		os.Args = append(os.Args[:1], strings.Fields(os.Getenv("NORTHPOLE_TEST_ARGS"))...)
		main()
		return
	case "argv":
		main()
		return
	}
	os.Exit(m.Run())
}

func TestExitStatus(t *testing.T) {
	canceled := errors.New("context canceled (last error: context canceled)")
	for _, tc := range []struct {
		name     string
		err      error
		sig      os.Signal
		code     int
		wantText string
	}{
		{"done", nil, nil, 0, ""},
		{"a service stopped by a signal is done", nil, syscall.SIGINT, 0, ""},
		{"an error", errors.New("boom"), nil, 1, "boom"},
		{"bad flags", usageErr("--toys must be at least 1"), nil, 2, "--toys must be at least 1"},
		{"results differ", &exitError{code: exitDiffer, err: errors.New("differ")}, nil, 3, "differ"},
		{"the map differs", &exitError{code: exitMapDiffers, err: errors.New("map")}, nil, 4, "map"},
		{"Ctrl-C", canceled, syscall.SIGINT, 130, "interrupted by SIGINT"},
		{"SIGTERM", canceled, syscall.SIGTERM, 143, "interrupted by SIGTERM"},
		{"results that differ stay 3 after a late signal", &exitError{code: exitDiffer, err: errors.New("differ")}, syscall.SIGINT, 3, "differ"},
		{"a map that differs stays 4 after a late signal", &exitError{code: exitMapDiffers, err: errors.New("map")}, syscall.SIGTERM, 4, "map"},
		{"a stop that could not finish", fmt.Errorf("packer: %w: read again", stopping.ErrIncomplete), syscall.SIGTERM, 5, "packer: did not finish stopping: read again"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, text := exitStatus(tc.err, tc.sig)
			if code != tc.code || text != tc.wantText {
				t.Errorf("exitStatus = %d %q, want %d %q", code, text, tc.code, tc.wantText)
			}
		})
	}
}

// TestInterrupt: Ctrl-C on a running demo prints "interrupted" and exits
// 130, not a context error with exit 1.
func TestInterrupt(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "NORTHPOLE_TEST_RUN_MAIN=1",
		"NORTHPOLE_TEST_ARGS=demo --toys 1000000 --boxes 1000000 --rate 10000 --servicemap=false")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stderr)
	var out []string
	for lines.Scan() {
		out = append(out, lines.Text())
		if strings.Contains(lines.Text(), " heartbeats; the packer has ") { // a progress line: the elves are writing
			if err := cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	for lines.Scan() {
		out = append(out, lines.Text())
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 || !strings.Contains(strings.Join(out, "\n"), "northpole: interrupted by SIGINT") {
		t.Errorf("demo interrupted: %v, want exit 130 and \"interrupted by SIGINT\":\n%s", err, strings.Join(out, "\n"))
	}
}

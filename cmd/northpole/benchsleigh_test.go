package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/northpole-workshop/northpole/app/bench"
)

// TestBenchSleighSmall runs the load test on a small manifest, on kfake, with
// this test binary as the sleigh: every client pages through every pair,
// nothing fails but by a 503, and the sleigh's memory is read.
func TestBenchSleighSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	t.Setenv("NORTHPOLE_TEST_RUN_MAIN", "argv") // for the sleigh process only: this one is past TestMain
	var stdout, stderr bytes.Buffer
	cmd := newRootCmd()
	cmd.SetArgs([]string{"bench-sleigh", "--pairs", "3000", "--clients", "5", "--limit", "100", "--idle", "0s", "--max-readers", "2", "--json"})
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	if err := cmd.Execute(); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	var rs []bench.SleighLoadResult
	if err := json.Unmarshal(stdout.Bytes(), &rs); err != nil || len(rs) != 1 {
		t.Fatalf("%v: %s", err, stdout.String())
	}
	r := rs[0]
	if r.ClientsDone != 5 || r.Failed != 0 || r.Pages < 5*30 || r.Pages+r.Busy != r.Requests || r.IdleRSSMiB <= 0 || r.PagingPeakMiB <= 0 {
		t.Errorf("result %+v", r)
	}
	if !strings.Contains(stderr.String(), "sleigh ready: manifest at http://127.0.0.1:") {
		t.Errorf("the sleigh did not say it was ready on loopback:\n%s", stderr.String())
	}
}

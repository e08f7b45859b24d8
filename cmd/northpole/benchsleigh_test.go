package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/northpole-workshop/northpole/app/sleighbench"
	"github.com/northpole-workshop/northpole/internal/kafkaconf"
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
	var rs []sleighbench.Result
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

// TestBenchSleighKafkaSettings: bench-sleigh takes the Kafka settings every
// command takes, from its flags or else from the environment, and refuses
// those that cannot work before it starts anything.
func TestBenchSleighKafkaSettings(t *testing.T) {
	for _, tc := range []struct {
		env  string // $NORTHPOLE_KAFKA_SASL_MECHANISM
		args []string
		want string
	}{
		{"", []string{"--sasl-mechanism", "PLAIN"}, "needs a user (--sasl-user"},
		{"", []string{"--brokers", "k:9092", "--tls-ca", "ca.pem"}, "given with TLS off (--tls"},
		{"PLAIN", nil, "needs a user (--sasl-user"},
	} {
		t.Setenv(kafkaconf.EnvSASLMechanism, tc.env)
		out, code := runCLI(t, context.Background(), append([]string{"bench-sleigh"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(out, tc.want) {
			t.Errorf("%s=%q bench-sleigh %s: exit %d, want 2 and %q:\n%s", kafkaconf.EnvSASLMechanism, tc.env, strings.Join(tc.args, " "), code, tc.want, out)
		}
	}
}

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

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/northpole-workshop/northpole/internal/kfakebroker"
)

// TestStopWithTheBrokerGone: each of the long-running commands, once it
// runs, loses its broker (an in-process Kafka closed under it); then
// SIGTERM ends it within seconds, with exit 0 or, when it could not finish
// stopping, exit 5 and what it left undone. Before, the packer went on
// retrying for minutes. The bound below only tells a stop from a hang.
func TestStopWithTheBrokerGone(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	for _, tc := range []struct {
		name, args, ready, undone string
		backlog                   bool // give it input to work on when the broker goes
	}{
		{"packer", "process packer --group stop-packer", "packer ready", "processed again at the next start", true},
		{"sleigh", "process sleigh --group stop-sleigh --listen 127.0.0.1:0", "sleigh ready", "read again at the next start", false},
		{"elves", "elves toys --duration 10m --rate 5000", "records made", "not acknowledged by Kafka", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			broker, err := kfakebroker.Start()
			if err != nil {
				t.Fatal(err)
			}
			defer broker.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "NORTHPOLE_TEST_RUN_MAIN=1", "NORTHPOLE_BROKERS="+strings.Join(broker.Addrs(), ","),
				"NORTHPOLE_TEST_ARGS="+tc.args)
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
				if strings.Contains(lines.Text(), tc.ready) {
					break
				}
			}
			if tc.backlog {
				backlog(t, ctx, broker.Addrs())
			}
			time.Sleep(time.Second) // at work for a moment
			broker.Close()
			time.Sleep(time.Second) // and noticing that the broker is gone
			signalled := time.Now()
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			for lines.Scan() {
				out = append(out, lines.Text())
			}
			err = cmd.Wait()
			took := time.Since(signalled)
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			}
			text := strings.Join(out, "\n")
			t.Logf("exit %d after %v", code, took.Round(10*time.Millisecond))
			switch {
			case took > stopDeadline+5*time.Second:
				t.Errorf("stopped %v after SIGTERM, want within %v:\n%s", took, stopDeadline, text)
			case code == exitStopIncomplete && !strings.Contains(text, tc.undone):
				t.Errorf("exit 5 without saying what was left undone (%q):\n%s", tc.undone, text)
			case code != 0 && code != exitStopIncomplete:
				t.Errorf("exit %d, want 0 or %d:\n%s", code, exitStopIncomplete, text)
			}
		})
	}
}

// backlog writes toys to the packer's input on brokers, more than it packs
// in a second, so that it is writing decisions when the broker goes.
func backlog(t *testing.T, ctx context.Context, brokers []string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("toys"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	at := time.Date(2026, 12, 24, 10, 0, 0, 0, time.UTC)
	var rs []*kgo.Record
	for i := range 100_000 {
		v := fmt.Sprintf(`{"toy_id":"t%d","kind":"teddy-bear","size":"M","elf":"e","made_at":%q}`, i, at.Add(time.Duration(i)*time.Millisecond).Format(time.RFC3339Nano))
		rs = append(rs, &kgo.Record{Key: []byte("M"), Value: []byte(v)})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

package sleighbench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/testsupport/syncbuf"
)

// fakeSleighEnv, set, makes this test binary a fake sleigh (fakeSleigh)
// instead of running the tests: Run starts its sleigh as a process.
const fakeSleighEnv = "NORTHPOLE_SLEIGHBENCH_TEST_SLEIGH"

func TestMain(m *testing.M) {
	if os.Getenv(fakeSleighEnv) != "" {
		os.Exit(fakeSleigh(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// fakeSleigh serves, on the address after --listen, a manifest summary that
// says every pair is loaded, until SIGTERM.
func fakeSleigh(args []string) int {
	i := slices.Index(args, "--listen")
	if i < 0 || i+1 >= len(args) {
		fmt.Fprintln(os.Stderr, "fake sleigh: no --listen")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	mux := http.NewServeMux()
	mux.HandleFunc("/manifest/summary", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"pairs": 1000000000, "complete": true}`)
	})
	srv := &http.Server{Addr: args[i+1], Handler: mux, ReadHeaderTimeout: time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "fake sleigh:", err)
		return 1
	}
	return 0
}

// cancelOn passes writes on to out and calls cancel once a write holds
// text.
type cancelOn struct {
	text   string
	cancel context.CancelFunc
	out    *syncbuf.Buffer
}

func (c cancelOn) Write(p []byte) (int, error) {
	if strings.Contains(string(p), c.text) {
		c.cancel()
	}
	return c.out.Write(p)
}

// TestRunStopsWhenCancelled: cancelled while the sleigh stands idle (here an
// hour), Run stops at once with the context's error. The sleigh is this
// test binary (fakeSleigh), on kfake.
func TestRunStopsWhenCancelled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a sleigh process and kfake; -short skips it")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(fakeSleighEnv, "1")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	progress := &syncbuf.Buffer{}
	cfg := DefaultConfig()
	cfg.Executable, cfg.Pairs, cfg.Clients, cfg.Idle = exe, 10, 1, time.Hour
	cfg.Progress = cancelOn{text: "stands idle", cancel: cancel, out: progress}
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, cfg)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run cancelled while idle: %v, want context.Canceled\n%s", err, progress.String())
		}
	case <-time.After(2 * time.Minute): // a hang, not a measurement
		t.Fatalf("Run still waits two minutes after it was cancelled in its hour of idle:\n%s", progress.String())
	}
}

// TestSleighKafka: the sleigh gets this process's Kafka settings as flags,
// the password in its environment, and none of this process's Kafka
// variables, which the in-process Kafka must not see.
func TestSleighKafka(t *testing.T) {
	environ := []string{"HOME=/home/elf", "NORTHPOLE_BROKERS=elsewhere:9092", "NORTHPOLE_KAFKA_TLS=true", "NORTHPOLE_KAFKA_SASL_PASSWORD=old", "OTEL_SDK_DISABLED=true"}
	for _, tc := range []struct {
		name      string
		kc        kafkaconf.Config
		args, env []string
	}{
		{"in-process", kafkaconf.Config{Brokers: []string{"127.0.0.1:1", "127.0.0.1:2"}},
			[]string{"--brokers", "127.0.0.1:1,127.0.0.1:2"}, []string{"HOME=/home/elf", "OTEL_SDK_DISABLED=true"}},
		{"TLS and SASL", kafkaconf.Config{Brokers: []string{"k:9093"}, RetryFor: time.Minute, FlushFrequency: time.Millisecond, FetchMin: 65536, FetchWait: 20 * time.Millisecond, Security: kafkaconf.Security{
			TLS: true, TLSCAFile: "ca.pem", TLSCertFile: "c.pem", TLSKeyFile: "k.pem", InsecureSkipVerify: true,
			SASLMechanism: "SCRAM-SHA-512", SASLUser: "santa", SASLPasswordFile: "pw", SASLPassword: "hohoho",
		}},
			[]string{"--brokers", "k:9093", "--kafka-retry-for", "1m0s", "--kafka-flush", "1ms", "--kafka-fetch-min-bytes", "65536", "--kafka-fetch-wait", "20ms", "--tls", "--tls-insecure-skip-verify",
				"--tls-ca", "ca.pem", "--tls-cert", "c.pem", "--tls-key", "k.pem", "--sasl-mechanism", "SCRAM-SHA-512", "--sasl-user", "santa"},
			[]string{"HOME=/home/elf", "OTEL_SDK_DISABLED=true", "NORTHPOLE_KAFKA_SASL_PASSWORD=hohoho"}},
	} {
		args, env := sleighKafka(tc.kc, environ)
		if !slices.Equal(args, tc.args) || !slices.Equal(env, tc.env) {
			t.Errorf("%s:\n args %q\n want %q\n env %q\n want %q", tc.name, args, tc.args, env, tc.env)
		}
	}
}

// TestConfigValidate: Validate names every problem.
func TestConfigValidate(t *testing.T) {
	err := Config{Limit: 0, Duration: -1, MaxReaders: -1}.Validate()
	for _, want := range []string{"no northpole program", "pairs (0) and clients (0)", "limit 0", "duration -1ns must be positive", "max-readers -1"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to say %q", err, want)
		}
	}
	good := DefaultConfig()
	good.Executable = "/bin/northpole"
	if err := good.Validate(); err != nil {
		t.Errorf("a good load test: %v", err)
	}
}

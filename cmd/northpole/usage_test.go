package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/kafkaadmin"
	"github.com/northpole-workshop/northpole/internal/testsupport/testkafka"
	"github.com/northpole-workshop/northpole/processors/packer"
	"github.com/northpole-workshop/northpole/producers"
)

// TestUsageErrors: bad flags, arguments and values exit 2 with a message
// that says what is wrong, before anything connects or listens.
func TestUsageErrors(t *testing.T) {
	t.Setenv("NORTHPOLE_BROKERS", "")
	t.Setenv("NORTHPOLE_KAFKA_TLS", "")
	t.Setenv("NORTHPOLE_KAFKA_SASL_MECHANISM", "")
	t.Setenv("NORTHPOLE_KAFKA_SASL_USER", "")
	for _, tc := range []struct {
		args []string
		want string // in the output
	}{
		{nil, "say which command to run: bench, bench-sleigh, compare"},
		{[]string{"bogus"}, `unknown command "bogus"`},
		{[]string{"--bogus"}, "unknown flag: --bogus"},
		{[]string{"demo", "--bogus"}, "unknown flag: --bogus (see 'northpole demo --help')"},
		{[]string{"demo", "--toys", "abc"}, `invalid argument "abc" for "--toys"`},
		{[]string{"demo", "extra-arg"}, `"extra-arg"`},
		{[]string{"process"}, "process: say which command to run: packer, sleigh"},
		{[]string{"process", "foo"}, `process: unknown command "foo"`},
		{[]string{"process", "pakcer"}, `did you mean "packer"?`},
		{[]string{"completion"}, "completion: say which command to run: bash"},
		{[]string{"elves"}, "toys or boxes"},
		{[]string{"elves", "toys", "--brokers", "k:9092", "--partitions", "0"}, "elves: --partitions must be at least 1, got 0"},
		{[]string{"elves", "toys", "--brokers", "k:9092", "--count", "-1"}, "elves: count must be >= 0, got -1"},
		{[]string{"elves", "toys", "--brokers", "k:9092", "--halls", "-1"}, "elves: halls must be between 0 (keys are sizes alone) and 10000, got -1"},
		{[]string{"elves", "toys", "--brokers", "k:9092", "--halls", "10001"}, "elves: halls must be between 0 (keys are sizes alone) and 10000, got 10001"},
		{[]string{"bench", "--instances", "1,0"}, `--instances "1,0": want a list of counts such as 1,2,4`},
		{[]string{"bench", "--halls", "-1"}, `--halls "-1": want a list of hall counts such as 16,10000 (0: keys are sizes alone)`},
		{[]string{"bench", "--halls", "16,10001"}, "bench: halls must be between 0 (keys are sizes alone) and 10000, got 10001"},
		{[]string{"--log-level", "x", "demo"}, `--log-level "x"`},
		{[]string{"demo", "--toys", "0"}, "demo: toys must be at least 1, got 0"},
		{[]string{"demo", "--boxes", "-1"}, "demo: boxes must be at least 1, got -1"},
		{[]string{"demo", "--window", "0"}, "contract: window must be positive"},
		{[]string{"demo", "--late-rate", "2"}, "toys elves: late rate must be between 0 and 1, got 2"},
		{[]string{"demo", "--halls", "-1"}, "boxes elves: halls must be between 0 (keys are sizes alone) and 10000, got -1"},
		{[]string{"demo", "--timeout", "0"}, "--timeout must be positive"},
		{[]string{"demo", "--timeout", "-1s"}, "--timeout must be positive"},
		{[]string{"demo", "--topic-prefix", "a b"}, `--topic-prefix "a b": ' ' is not allowed in a Kafka topic name`},
		{[]string{"process", "sleigh", "--brokers", "k:9092", "--listen", "nonsense"}, `--listen "nonsense"`},
		{[]string{"process", "sleigh", "--brokers", "k:9092", "--listen", "127.0.0.1:99999"}, `--listen "127.0.0.1:99999"`},
		{[]string{"servicemap", "--for", "-1s"}, "--for must be >= 0"},
		{[]string{"servicemap", "--print-every", "-1s", "--for", "1ms"}, "--print-every must be >= 0"},
		{[]string{"compare", "--brokers", "nohost"}, `broker address "nohost" is not host:port`},
		{[]string{"compare", "--brokers", "k:9092", "--timeout", "0"}, "--timeout must be positive"},
		{[]string{"compare", "--brokers", "k:9092", "--rows", "-1"}, "--rows must be >= 0"},
		{[]string{"compare"}, "no brokers given (want host:port[,host:port]) (--brokers)"},
		{[]string{"compare", "--brokers", "k:9092", "--load"}, "compare: load needs a DSN, sql"},
		{[]string{"compare", "--brokers", "k:9092", "--schema", "A b"}, `schema "A b": want a lowercase SQL identifier`},
		{[]string{"compare", "--brokers", "k:9092", "--window", "0"}, "window must be positive"},
		{[]string{"compare", "--risingwave-sql", "--window", "0"}, "window must be positive"},
		{[]string{"bench", "--records", "1"}, "bench: records must be at least 2, got 1"},
		{[]string{"bench", "--timeout", "-1s"}, "bench: timeout must be positive"},
		{[]string{"bench", "--live-duration", "0"}, "bench: live duration must be positive"},
		{[]string{"bench", "--live-rate", "0"}, "bench: live rate must be a positive"},
		{[]string{"bench", "--elves", "0"}, "bench: elves must be between"},
		{[]string{"bench", "--window", "0"}, "window must be positive"},
		{[]string{"bench", "--brokers", "nohost"}, `broker address "nohost" is not host:port`},
		// kafkaconf names the settings; the command line says which flags set them.
		{[]string{"bench", "--brokers", "nohost"}, "(--brokers)"},
		{[]string{"elves", "toys"}, "no brokers given (want host:port[,host:port]) (--brokers)"},
		{[]string{"process", "packer"}, "no brokers given (want host:port[,host:port]) (--brokers)"},
		{[]string{"elves", "toys", "--brokers", "k:9092", "--sasl-user", "elf"}, "without a SASL mechanism (--sasl-user or $NORTHPOLE_KAFKA_SASL_USER; --sasl-mechanism"},
		{[]string{"process", "sleigh", "--brokers", "k:9092", "--sasl-mechanism", "PLAIN"}, "needs a user (--sasl-user"},
		{[]string{"process", "packer", "--brokers", "k:9092", "--tls-ca", "ca.pem"}, "given with TLS off (--tls or $NORTHPOLE_KAFKA_TLS)"},
		{[]string{"compare", "--brokers", "k:9092", "--tls", "--tls-cert", "c.pem"}, "go together (--tls-cert"},
	} {
		t.Run("northpole "+strings.Join(tc.args, " "), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			out, code := runCLI(t, ctx, tc.args...)
			if code != 2 || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d, want 2 and %q in the output:\n%s", code, tc.want, out)
			}
		})
	}
	for _, args := range [][]string{{"--help"}, {"process", "--help"}, {"completion", "--help"}} {
		if out, code := runCLI(t, context.Background(), args...); code != 0 {
			t.Errorf("%v: exit %d, want 0:\n%s", args, code, out)
		}
	}
}

// TestOutRefusedEarly: demo and compare refuse an --out that is a file, or
// under a file, with exit 2 before the run starts (the demo used to run to
// the end and then fail to write).
func TestOutRefusedEarly(t *testing.T) {
	t.Setenv("NORTHPOLE_BROKERS", "")
	file := filepath.Join(t.TempDir(), "afile")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"demo", "--out", file},
		{"demo", "--out", filepath.Join(file, "sub")},
		{"compare", "--brokers", "k:9092", "--out", file},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			out, code := runCLI(t, ctx, args...)
			if code != 2 || !strings.Contains(out, "--out "+args[len(args)-1]+": cannot create the output directory") || strings.Contains(out, "northpole demo on") {
				t.Errorf("exit %d, want 2, the reason, and no run:\n%s", code, out)
			}
		})
	}
}

// TestCompareFailsFast: compare reports unreachable Kafka and missing topics
// within seconds (not after the long-lived clients' minutes of metadata
// retries), and gives up at --timeout or cancellation (Ctrl-C) even while
// sarama is still connecting.
func TestCompareFailsFast(t *testing.T) {
	t.Setenv("NORTHPOLE_BROKERS", "")
	refused := func() string { // a port nothing listens on
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		return addr
	}
	// silent accepts connections and never answers: sarama waits for its
	// read timeout (30 s) on every attempt.
	silent := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				t.Cleanup(func() { c.Close() })
			}
		}()
		return l.Addr().String()
	}
	for _, tc := range []struct {
		name    string
		brokers func() string
		timeout string
		cancel  time.Duration // cancel the context (Ctrl-C) after this long
		within  time.Duration
		want    string
	}{
		{name: "connection refused", brokers: refused, timeout: "5m", within: 15 * time.Second, want: "cannot reach kafka"},
		{name: "missing topics", brokers: func() string { return strings.Join(testkafka.Config(t).Brokers, ",") },
			timeout: "5m", within: 15 * time.Second, want: `"np-missing-toys"`},
		{name: "silent broker, --timeout", brokers: silent, timeout: "1s", within: 5 * time.Second, want: "deadline exceeded"},
		{name: "silent broker, interrupted", brokers: silent, timeout: "5m", cancel: time.Second, within: 5 * time.Second, want: "canceled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel > 0 {
				time.AfterFunc(tc.cancel, cancel)
			}
			began := time.Now()
			out, code := runCLI(t, ctx, "compare", "--brokers", tc.brokers(), "--timeout", tc.timeout,
				"--toys-topic", "np-missing-toys", "--boxes-topic", "np-missing-boxes")
			took := time.Since(began)
			if code != 1 || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d, want 1 and %q in the output:\n%s", code, tc.want, out)
			}
			if took > tc.within {
				t.Errorf("took %v, want at most %v", took, tc.within)
			}
		})
	}
}

// TestPackerPartitionsFlag: an input topic with another partition count
// stops the packer with an error that says which flag to change.
func TestPackerPartitionsFlag(t *testing.T) {
	kc := testkafka.Config(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := testkafka.Unique("np-partitions")
	topics := packer.NamedTopics(name)
	if err := kafkaadmin.EnsureTopics(ctx, kc, kafkaadmin.Topic{Name: topics.Toys, Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	out, code := runCLI(t, ctx, "process", "packer", "--brokers", strings.Join(kc.Brokers, ","), "--group", name,
		"--toys-topic", topics.Toys, "--boxes-topic", topics.Boxes, "--partitions", "4")
	if want := "configured for 4"; code != 1 || !strings.Contains(out, want) || !strings.Contains(out, "(--partitions 2)") {
		t.Errorf("exit %d, want 1 and %q and (--partitions 2) in the output:\n%s", code, want, out)
	}
}

// TestHallsHelp: elves and demo explain lines and their --halls in the same
// words, and the sleigh's help says how to ask for a line.
func TestHallsHelp(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"elves", "--help"}, []string{producers.LinesHelp, producers.WrongRecordsHelp, producers.HeartbeatsHelp, "--halls int"}},
		{[]string{"demo", "--help"}, []string{producers.LinesHelp, producers.WrongRecordsHelp, producers.HeartbeatsHelp, "--halls int"}},
		{[]string{"process", "sleigh", "--help"}, []string{"manifest?line=M/hall-7", "per size class, line and window"}},
	} {
		out, code := runCLI(t, context.Background(), tc.args...)
		for _, want := range tc.want {
			if code != 0 || !strings.Contains(out, want) {
				t.Errorf("%v: exit %d, want 0 and %q in:\n%s", tc.args, code, want, out)
			}
		}
	}
}

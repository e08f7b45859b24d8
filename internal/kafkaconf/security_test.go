package kafkaconf

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestSecurityValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    Security
		want string // substring of the error; "" = valid
	}{
		{"none", Security{}, ""},
		{"scram", Security{SASLMechanism: "SCRAM-SHA-512", SASLUser: "elf"}, ""},
		{"lowercase mechanism", Security{SASLMechanism: "plain", SASLUser: "elf"}, ""},
		{"mechanism without user", Security{SASLMechanism: "PLAIN"}, "needs a user"},
		{"user without mechanism", Security{SASLUser: "elf"}, "without a SASL mechanism"},
		{"unknown mechanism", Security{SASLMechanism: "GSSAPI", SASLUser: "elf"}, "not supported"},
		{"cert without key", Security{TLS: true, TLSCertFile: "c.pem"}, "go together"},
		{"tls option without tls", Security{TLSCAFile: "ca.pem"}, "with TLS off"},
		{"tls", Security{TLS: true, TLSCAFile: "ca.pem"}, ""},
		// The last of three problems: each is reported, not the first only.
		{"every problem at once", Security{SASLUser: "elf", TLSCertFile: "c.pem"}, "with TLS off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.s.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to mention %q", err, tc.want)
			}
			if se := (*SettingsError)(nil); !errors.As(err, &se) || len(se.Settings) == 0 {
				t.Errorf("error %v names no setting (a *SettingsError with Settings)", err)
			}
		})
	}
}

func TestSecurityResolvePassword(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(file, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvSASLPassword, "from-env")
	s, err := Security{SASLMechanism: "scram-sha-512", SASLUser: "elf", SASLPasswordFile: file}.Resolve()
	if err != nil || s.SASLPassword != "from-file" || s.SASLMechanism != SASLScramSHA512 {
		t.Fatalf("file: got %q %q %v", s.SASLPassword, s.SASLMechanism, err)
	}
	s, err = Security{SASLMechanism: "PLAIN", SASLUser: "elf"}.Resolve()
	if err != nil || s.SASLPassword != "from-env" {
		t.Fatalf("env: got %q %v", s.SASLPassword, err)
	}
	t.Setenv(EnvSASLPassword, "")
	if _, err := (Security{SASLMechanism: "PLAIN", SASLUser: "elf"}).Resolve(); err == nil || !strings.Contains(err.Error(), EnvSASLPassword) {
		t.Fatalf("missing password: error %v should name %s", err, EnvSASLPassword)
	}
	if _, err := (Security{TLS: true, TLSCAFile: file}).Resolve(); err == nil || !strings.Contains(err.Error(), "no PEM") {
		t.Fatalf("bad CA file: %v", err)
	}
}

func TestSecurityNeverPrintsPassword(t *testing.T) {
	s := Security{SASLMechanism: "PLAIN", SASLUser: "elf", SASLPassword: "hunter2"}
	c := Config{Brokers: []string{"x:1"}, Security: s}
	for _, out := range []string{s.String(), fmt.Sprint(s), fmt.Sprintf("%v", c), fmt.Sprintf("%+v", s.LogValue())} {
		if strings.Contains(out, "hunter2") {
			t.Fatalf("password printed: %s", out)
		}
	}
}

// TestSCRAMAgainstRealBroker needs a Kafka with a SASL_PLAINTEXT listener and
// a SCRAM-SHA-512 user (scripts/kafka start creates one; `scripts/kafka env`
// prints the variables). In CI the broker is required.
func TestSCRAMAgainstRealBroker(t *testing.T) {
	brokers := SplitBrokers(os.Getenv("NORTHPOLE_TEST_SASL_BROKERS"))
	if len(brokers) == 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but NORTHPOLE_TEST_SASL_BROKERS is not set: .ci/run must start the broker (scripts/kafka start)")
		}
		t.Skip("NORTHPOLE_TEST_SASL_BROKERS not set (env gate; see scripts/kafka env)")
	}
	user, password := os.Getenv("NORTHPOLE_TEST_SASL_USER"), os.Getenv("NORTHPOLE_TEST_SASL_PASSWORD")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	topic := fmt.Sprintf("sasl-test-%d", time.Now().UnixNano())

	for _, mech := range []string{SASLScramSHA512, SASLPlain} {
		t.Run(mech+" wrong password", func(t *testing.T) {
			t.Setenv(EnvSASLPassword, password+"-wrong")
			c := Config{Brokers: brokers, Security: Security{SASLMechanism: mech, SASLUser: user}}
			var err error
			if c.Security, err = c.Security.Resolve(); err != nil {
				t.Fatal(err)
			}
			_, err = c.NewReaderClient(ctx)
			if err == nil {
				t.Fatal("a wrong password was accepted")
			}
			if !errors.Is(err, kerr.SaslAuthenticationFailed) || !strings.Contains(err.Error(), "refused SASL") || !strings.Contains(err.Error(), user) {
				t.Fatalf("error is not a clear authentication failure: %v", err)
			}
			if strings.Contains(err.Error(), password) {
				t.Fatalf("error shows the password: %v", err)
			}
			t.Logf("refused as expected: %v", err)
			c.RetryFor = 5 * time.Second
			if err := KgoProduceForTest(ctx, c, topic); err == nil {
				t.Fatal("the franz-go producer got through with a wrong password")
			} else {
				t.Logf("franz-go producer refused as expected: %v", err)
			}
		})
		t.Run(mech+" right password", func(t *testing.T) {
			t.Setenv(EnvSASLPassword, password)
			c := Config{Brokers: brokers, Security: Security{SASLMechanism: mech, SASLUser: user}}
			var err error
			if c.Security, err = c.Security.Resolve(); err != nil {
				t.Fatal(err)
			}
			cl, err := c.NewReaderClient(ctx)
			if err != nil {
				t.Fatalf("authenticated admin: %v", err)
			}
			_, err = kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic)
			cl.Close()
			if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
				t.Fatalf("authenticated admin: create topic %s: %v", topic, err)
			}
			// goka's consumers connect with the sarama config.
			p, err := sarama.NewSyncProducer(c.Brokers, c.Sarama())
			if err != nil {
				t.Fatalf("authenticated producer: %v", err)
			}
			defer p.Close()
			if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder("M"), Value: sarama.StringEncoder("{}")}); err != nil {
				t.Fatalf("produce with SASL: %v", err)
			}
			if err := KgoProduceForTest(ctx, c, topic); err != nil {
				t.Fatalf("franz-go produce with SASL: %v", err)
			}
		})
	}
}

// KgoProduceForTest writes one record with a franz-go client made from
// c.Kgo(), as the goka processors' producer (internal/gokakit) is.
// Exported for the external tests (tls_test.go).
func KgoProduceForTest(ctx context.Context, c Config, topic string) error {
	cl, err := kgo.NewClient(append(c.Kgo(), kgo.SeedBrokers(c.Brokers...))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte("M"), Value: []byte("{}")}).FirstErr()
}

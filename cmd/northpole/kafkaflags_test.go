package main

import (
	"errors"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
)

// TestKafkaOptionsEnv: --kafka-retry-for and $NORTHPOLE_KAFKA_RETRY_FOR, --tls
// and $NORTHPOLE_KAFKA_TLS.
func TestKafkaOptionsEnv(t *testing.T) {
	for _, tc := range []struct {
		name     string
		flag     time.Duration
		env      string
		tlsFlag  bool
		tlsEnv   string
		want     time.Duration
		wantTLS  bool
		wantCode int // 0: no error
	}{
		{name: "default", want: 0},
		{name: "flag", flag: time.Minute, want: time.Minute},
		{name: "env", env: "90s", want: 90 * time.Second},
		{name: "flag wins over env", flag: time.Minute, env: "90s", want: time.Minute},
		{name: "env not a duration", env: "soon", wantCode: 2},
		{name: "negative", flag: -time.Second, wantCode: 2},
		{name: "TLS env true", tlsEnv: "true", wantTLS: true},
		{name: "TLS env 1", tlsEnv: "1", wantTLS: true},
		{name: "TLS env false", tlsEnv: "false"},
		{name: "TLS flag", tlsFlag: true, wantTLS: true},
		{name: "TLS env not a bool", tlsEnv: "yes", wantCode: 2},
		{name: "TLS env empty", tlsEnv: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("NORTHPOLE_KAFKA_RETRY_FOR", tc.env)
			t.Setenv(kafkaconf.EnvTLS, tc.tlsEnv)
			o := kafkaOptions{brokers: "k:9092", retryFor: tc.flag}
			o.sec.TLS = tc.tlsFlag
			kc, err := o.config("test")
			if tc.wantCode != 0 {
				var ee *exitError
				if !errors.As(err, &ee) || ee.code != tc.wantCode {
					t.Fatalf("config() = %v, want a usage error (exit %d)", err, tc.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if kc.RetryFor != tc.want {
				t.Errorf("RetryFor = %v, want %v", kc.RetryFor, tc.want)
			}
			if kc.Security.TLS != tc.wantTLS {
				t.Errorf("TLS = %v, want %v", kc.Security.TLS, tc.wantTLS)
			}
		})
	}
}

func TestKafkaOptionsFlush(t *testing.T) {
	o := kafkaOptions{brokers: "k:9092", flush: 20 * time.Millisecond}
	kc, err := o.config("test")
	if err != nil {
		t.Fatal(err)
	}
	if got := kc.Sarama().Producer.Flush.Frequency; got != 20*time.Millisecond {
		t.Errorf("flush frequency = %v, want 20ms", got)
	}
	o.flush = 0
	if kc, _ = o.config("test"); kc.Sarama().Producer.Flush.Frequency != kafkaconf.DefaultFlushFrequency {
		t.Errorf("default flush frequency = %v, want %v", kc.Sarama().Producer.Flush.Frequency, kafkaconf.DefaultFlushFrequency)
	}
	o.flush = -time.Millisecond
	var ee *exitError
	if _, err := o.config("test"); !errors.As(err, &ee) || ee.code != 2 {
		t.Errorf("negative --kafka-flush: %v, want a usage error", err)
	}
}

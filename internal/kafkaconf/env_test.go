package kafkaconf_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
)

// TestFromEnv: each variable fills its setting when the config leaves it
// unset, a set one wins, and a value that does not parse is a
// *SettingsError naming the setting.
func TestFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name         string
		retryFor     time.Duration
		retryEnv     string
		tls          bool
		tlsEnv       string
		want         time.Duration
		wantTLS      bool
		wantSettings []string // a *SettingsError naming these
	}{
		{name: "default", want: 0},
		{name: "set", retryFor: time.Minute, want: time.Minute},
		{name: "env", retryEnv: "90s", want: 90 * time.Second},
		{name: "set wins over env", retryFor: time.Minute, retryEnv: "90s", want: time.Minute},
		{name: "env not a duration", retryEnv: "soon", wantSettings: []string{"RetryFor"}},
		{name: "negative", retryFor: -time.Second, wantSettings: []string{"RetryFor"}},
		{name: "env negative", retryEnv: "-1m", wantSettings: []string{"RetryFor"}},
		{name: "TLS env true", tlsEnv: "true", wantTLS: true},
		{name: "TLS env 1", tlsEnv: "1", wantTLS: true},
		{name: "TLS env false", tlsEnv: "false"},
		{name: "TLS set", tls: true, wantTLS: true},
		{name: "TLS env not a bool", tlsEnv: "yes", wantSettings: []string{"Security.TLS"}},
		{name: "TLS env empty", tlsEnv: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(kafkaconf.EnvRetryFor, tc.retryEnv)
			t.Setenv(kafkaconf.EnvTLS, tc.tlsEnv)
			c := kafkaconf.Config{Brokers: []string{"k:9092"}, RetryFor: tc.retryFor}
			c.Security.TLS = tc.tls
			kc, err := c.FromEnv(true)
			if tc.wantSettings != nil {
				var se *kafkaconf.SettingsError
				if !errors.As(err, &se) || !slices.Equal(se.Settings, tc.wantSettings) {
					t.Fatalf("FromEnv() = %v, want a *SettingsError naming %v", err, tc.wantSettings)
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

// TestFromEnvBrokers: $NORTHPOLE_BROKERS stands in for missing brokers only
// when the command asks for it, and never for given ones.
func TestFromEnvBrokers(t *testing.T) {
	t.Setenv(kafkaconf.EnvBrokers, "a:9092, b:9092")
	for _, tc := range []struct {
		brokers []string
		fromEnv bool
		want    []string
	}{
		{nil, true, []string{"a:9092", "b:9092"}},
		{nil, false, nil},
		{[]string{"c:9092"}, true, []string{"c:9092"}},
	} {
		kc, err := kafkaconf.Config{Brokers: tc.brokers}.FromEnv(tc.fromEnv)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(kc.Brokers, tc.want) {
			t.Errorf("brokers %v, from env %v: got %v, want %v", tc.brokers, tc.fromEnv, kc.Brokers, tc.want)
		}
	}
}

// TestFromEnvSecurity: the TLS files and the SASL settings come from their
// variables, and FromEnv resolves them (the password read).
func TestFromEnvSecurity(t *testing.T) {
	t.Setenv(kafkaconf.EnvTLS, "")
	t.Setenv(kafkaconf.EnvTLSCA, "")
	t.Setenv(kafkaconf.EnvTLSCert, "")
	t.Setenv(kafkaconf.EnvTLSKey, "")
	t.Setenv(kafkaconf.EnvSASLPassFile, "")
	t.Setenv(kafkaconf.EnvSASLMechanism, "scram-sha-256")
	t.Setenv(kafkaconf.EnvSASLUser, "elf")
	t.Setenv(kafkaconf.EnvSASLPassword, "secret")
	kc, err := kafkaconf.Config{Brokers: []string{"k:9092"}}.FromEnv(true)
	if err != nil {
		t.Fatal(err)
	}
	if s := kc.Security; s.SASLMechanism != kafkaconf.SASLScramSHA256 || s.SASLUser != "elf" || s.SASLPassword != "secret" {
		t.Errorf("security %v (password %q), want SCRAM-SHA-256 for elf with the password of the environment", s, s.SASLPassword)
	}
	kc, err = kafkaconf.Config{Brokers: []string{"k:9092"}, Security: kafkaconf.Security{SASLMechanism: "PLAIN", SASLUser: "santa"}}.FromEnv(true)
	if err != nil {
		t.Fatal(err)
	}
	if s := kc.Security; s.SASLMechanism != kafkaconf.SASLPlain || s.SASLUser != "santa" {
		t.Errorf("security %v, want the given PLAIN for santa", s)
	}
}

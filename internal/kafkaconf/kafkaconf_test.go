package kafkaconf

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRetryForBecomesRetries(t *testing.T) {
	for _, tc := range []struct {
		retryFor time.Duration
		want     int
	}{
		{0, int(DefaultRetryFor / retryBackoff)},
		{time.Minute, 120},
		{1250 * time.Millisecond, 3}, // rounded up: never shorter than asked
		{time.Millisecond, 1},
	} {
		cfg := Config{Brokers: []string{"k:9092"}, RetryFor: tc.retryFor}.Sarama()
		if cfg.Producer.Retry.Max != tc.want || cfg.Metadata.Retry.Max != tc.want {
			t.Errorf("RetryFor %v: producer retries %d, metadata retries %d, want %d",
				tc.retryFor, cfg.Producer.Retry.Max, cfg.Metadata.Retry.Max, tc.want)
		}
		if got := time.Duration(cfg.Producer.Retry.Max) * cfg.Producer.Retry.Backoff; tc.retryFor > 0 && got < tc.retryFor {
			t.Errorf("RetryFor %v: retries cover only %v", tc.retryFor, got)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Config
		want string // "" means valid
	}{
		{"ok", Config{Brokers: []string{"k:9092"}}, ""},
		{"no brokers", Config{}, "no brokers"},
		{"no port", Config{Brokers: []string{"kafka"}}, "not host:port"},
		{"negative flush", Config{Brokers: []string{"k:9092"}, FlushFrequency: -1}, "flush frequency"},
		{"negative retry", Config{Brokers: []string{"k:9092"}, RetryFor: -time.Second}, "retry duration"},
		{"negative commit interval", Config{Brokers: []string{"k:9092"}, CommitEvery: -time.Second}, "commit interval"},
		{"negative fetch minimum", Config{Brokers: []string{"k:9092"}, FetchMin: -1}, "fetch minimum"},
		{"negative fetch wait", Config{Brokers: []string{"k:9092"}, FetchWait: -time.Millisecond}, "fetch wait"},
		{"fetch wait finer than a millisecond", Config{Brokers: []string{"k:9092"}, FetchWait: 1500 * time.Microsecond}, "whole number of milliseconds"},
		{"fetch settings", Config{Brokers: []string{"k:9092"}, FetchMin: 64 << 10, FetchWait: 20 * time.Millisecond}, ""},
		{"unknown compression", Config{Brokers: []string{"k:9092"}, Compression: "brotli"}, `compression "brotli"`},
		{"zstd", Config{Brokers: []string{"k:9092"}, Compression: "zstd"}, ""},
		{"none", Config{Brokers: []string{"k:9092"}, Compression: "none"}, ""},
		{"every error at once", Config{Brokers: []string{"kafka"}, RetryFor: -time.Second, Security: Security{SASLUser: "elf"}}, "not host:port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate() = %v, want an error containing %q", err, tc.want)
			}
			if se := (*SettingsError)(nil); tc.want != "" && (!errors.As(err, &se) || len(se.Settings) == 0) {
				t.Errorf("Validate() = %v names no setting (a *SettingsError with Settings)", err)
			}
		})
	}
}

// TestValidateJoinsEveryError: a config wrong in three ways says all three,
// and Settings names the settings of each.
func TestValidateJoinsEveryError(t *testing.T) {
	err := Config{Brokers: []string{"kafka"}, RetryFor: -time.Second, Security: Security{SASLUser: "elf"}}.Validate()
	for _, want := range []string{"not host:port", "retry duration", "without a SASL mechanism"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to say %q", err, want)
		}
	}
	got := strings.Join(Settings(err), ",")
	if want := "Brokers,Security.SASLUser,Security.SASLMechanism,RetryFor"; got != want {
		t.Errorf("Settings = %s, want %s", got, want)
	}
}

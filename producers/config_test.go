package producers

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/record"
)

func TestDefaultConfigIsValid(t *testing.T) {
	for _, s := range []record.Stream{record.Toys, record.Boxes} {
		c := DefaultConfig(s)
		c.Kafka.Brokers = []string{"k:9092"}
		if err := c.Validate(); err != nil {
			t.Errorf("DefaultConfig(%s).Validate() = %v", s, err)
		}
		if c.Topic != string(s) || c.Count != 1000 || c.Elves != 4 || !c.Start.Equal(DefaultStart) ||
			c.Spacing != 10*time.Millisecond || c.Window != 10*time.Second || c.Lateness != 5*time.Second ||
			c.HeartbeatEvery != time.Second || c.SizeMix.String() != "S=4,M=3,L=2,XL=1" {
			t.Errorf("DefaultConfig(%s) = %+v", s, c)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Config)
		want   string // substring of the error; "" = valid
	}{
		{"default", func(c *Config) {}, ""},
		{"boxes", func(c *Config) { c.Stream = record.Boxes }, ""},
		{"duration instead of count", func(c *Config) { c.Count, c.Duration = 0, time.Second }, ""},
		{"all rates", func(c *Config) { c.LateRate, c.DupRate, c.BadRate = 0.2, 0.3, 0.5 }, ""},
		{"no heartbeats", func(c *Config) { c.HeartbeatEvery = 0 }, ""},
		{"zero spacing", func(c *Config) { c.Spacing = 0 }, ""},
		{"bad stream", func(c *Config) { c.Stream = "gifts" }, "stream must be"},
		{"empty topic", func(c *Config) { c.Topic = " " }, "topic must not be empty"},
		{"negative count", func(c *Config) { c.Count = -1 }, "count must be >= 0"},
		{"negative duration", func(c *Config) { c.Duration = -time.Second }, "duration must be >= 0"},
		{"count and duration", func(c *Config) { c.Duration = time.Second }, "exactly one of count and duration"},
		{"neither count nor duration", func(c *Config) { c.Count = 0 }, "exactly one of count and duration"},
		{"negative rate", func(c *Config) { c.Rate = -1 }, "rate must be >= 0"},
		{"NaN rate", func(c *Config) { c.Rate = math.NaN() }, "rate must be >= 0"},
		{"infinite rate", func(c *Config) { c.Rate = math.Inf(1) }, "rate must be >= 0"},
		{"no elves", func(c *Config) { c.Elves = 0 }, "elves must be between 1 and"},
		{"too many elves", func(c *Config) { c.Elves = MaxElves + 1 }, "elves must be between 1 and"},
		{"empty size mix", func(c *Config) { c.SizeMix = SizeMix{} }, "size mix"},
		{"zero size mix", func(c *Config) { c.SizeMix = SizeMix{"S": 0} }, "size mix"},
		{"unknown size", func(c *Config) { c.SizeMix = SizeMix{"XXL": 1} }, "size mix"},
		{"negative weight", func(c *Config) { c.SizeMix = SizeMix{"S": 1, "M": -1} }, "size mix"},
		{"halls", func(c *Config) { c.Halls = 16 }, ""},
		{"most halls", func(c *Config) { c.Halls = MaxHalls }, ""},
		{"negative halls", func(c *Config) { c.Halls = -1 }, "halls must be between 0 (keys are sizes alone) and 10000, got -1"},
		{"too many halls", func(c *Config) { c.Halls = MaxHalls + 1 }, "halls must be between 0 (keys are sizes alone) and 10000, got 10001"},
		{"no start", func(c *Config) { c.Start = time.Time{} }, "start must be set"},
		{"negative spacing", func(c *Config) { c.Spacing = -1 }, "spacing must be >= 0"},
		{"negative disorder", func(c *Config) { c.Disorder = -1 }, "disorder must be >= 0"},
		{"late rate > 1", func(c *Config) { c.LateRate = 1.5 }, "late rate must be between 0 and 1"},
		{"dup rate < 0", func(c *Config) { c.DupRate = -0.1 }, "dup rate must be between 0 and 1"},
		{"bad rate NaN", func(c *Config) { c.BadRate = math.NaN() }, "bad rate must be between 0 and 1"},
		{"rates sum > 1", func(c *Config) { c.LateRate, c.DupRate, c.BadRate = 0.5, 0.4, 0.2 }, "must be <= 1"},
		{"zero window", func(c *Config) { c.Window = 0 }, "window must be positive"},
		{"sub-microsecond window", func(c *Config) { c.Window = time.Second + 1 }, "window must be a whole number of microseconds"},
		{"negative lateness", func(c *Config) { c.Lateness = -time.Second }, "lateness must not be negative"},
		{"sub-microsecond lateness", func(c *Config) { c.Lateness = 1 }, "lateness must be a whole number"},
		{"negative heartbeat", func(c *Config) { c.HeartbeatEvery = -1 }, "heartbeat interval must be >= 0"},
		{"negative progress interval", func(c *Config) { c.ProgressEvery = -1 }, "progress interval must be >= 0"},
		{"no brokers", func(c *Config) { c.Kafka.Brokers = nil }, "no brokers"},
		{"every error at once", func(c *Config) { c.Count, c.Elves, c.Kafka.Brokers = -1, 0, nil },
			"no brokers given (want host:port[,host:port])\ncount must be >= 0, got -1\nelves must be between 1 and"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig(record.Toys)
			c.Kafka.Brokers = []string{"k:9092"}
			tt.change(&c)
			err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tt.want != "" && err == nil:
				t.Fatalf("Validate() = nil, want error containing %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Fatalf("Validate() = %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestParseSizeMix(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{"S=4,M=3,L=2,XL=1", "S=4,M=3,L=2,XL=1", ""},
		{" XL=1 , S=2 ", "S=2,XL=1", ""},
		{"M=1,L=0", "M=1", ""},
		{"", "", "at least one size"},
		{"S=0", "", "at least one size"},
		{"S", "", "not SIZE=WEIGHT"},
		{"XXL=1", "", "not one of S, M, L, XL"},
		{"s=1", "", "not one of S, M, L, XL"},
		{"S=-1", "", "whole number >= 0"},
		{"S=x", "", "whole number >= 0"},
		{"S=1,S=2", "", "given twice"},
	}
	for _, tt := range tests {
		m, err := ParseSizeMix(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "size mix") {
				t.Errorf("ParseSizeMix(%q) error = %v, want one containing size mix and %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseSizeMix(%q) = %v", tt.in, err)
			continue
		}
		if got := m.String(); got != tt.want {
			t.Errorf("ParseSizeMix(%q).String() = %q, want %q", tt.in, got, tt.want)
		}
		again, err := ParseSizeMix(m.String())
		if err != nil || again.String() != m.String() {
			t.Errorf("round trip of %q: %v, %v", m.String(), again, err)
		}
	}
}

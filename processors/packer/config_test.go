package packer

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/contract"
)

func validConfig() Config {
	c := DefaultConfig()
	c.Kafka.Brokers = []string{"unused:9092"}
	return c
}

func TestConfigValidate(t *testing.T) {
	if err := validConfig().Validate(); err != nil {
		t.Fatalf("default config with a broker: %v", err)
	}
	cases := []struct {
		name string
		edit func(*Config)
		// every string must appear in the error message
		want []string
	}{
		{"zero window", func(c *Config) { c.Window = 0 }, []string{"window", "positive"}},
		{"negative window", func(c *Config) { c.Window = -time.Second }, []string{"window", "positive", "-1s"}},
		{"window not whole µs", func(c *Config) { c.Window = 10*time.Second + 500*time.Nanosecond }, []string{"window", "microseconds"}},
		{"window below 1µs", func(c *Config) { c.Window = 999 * time.Nanosecond }, []string{"window", "microseconds"}},
		{"negative lateness", func(c *Config) { c.Lateness = -time.Millisecond }, []string{"lateness", "negative"}},
		{"lateness not whole µs", func(c *Config) { c.Lateness = time.Nanosecond }, []string{"lateness", "microseconds"}},
		{"partitions 0", func(c *Config) { c.Partitions = 0 }, []string{"partitions", "0"}},
		{"negative partitions", func(c *Config) { c.Partitions = -3 }, []string{"partitions", "-3"}},
		{"replication 0", func(c *Config) { c.Replication = 0 }, []string{"replication"}},
		{"empty group", func(c *Config) { c.Group = "" }, []string{"group"}},
		{"empty toys topic", func(c *Config) { c.Topics.Toys = "" }, []string{"topic", "toys"}},
		{"empty boxes topic", func(c *Config) { c.Topics.Boxes = "" }, []string{"topic", "boxes"}},
		{"empty packed topic", func(c *Config) { c.Topics.Packed = "" }, []string{"topic", "packed"}},
		{"empty unpacked topic", func(c *Config) { c.Topics.Unpacked = "" }, []string{"topic", "unpacked"}},
		{"empty spare topic", func(c *Config) { c.Topics.Spare = "" }, []string{"topic", "spare"}},
		{"empty late topic", func(c *Config) { c.Topics.Late = "" }, []string{"topic", "late"}},
		{"empty dead topic", func(c *Config) { c.Topics.Dead = "" }, []string{"topic", "dead"}},
		{"toys and boxes share a topic", func(c *Config) { c.Topics.Boxes = c.Topics.Toys }, []string{`"toys"`, "toys", "boxes"}},
		{"packed and dead share a topic", func(c *Config) { c.Topics.Dead = "out"; c.Topics.Packed = "out" }, []string{`"out"`, "packed", "dead"}},
		{"input and output share a topic", func(c *Config) { c.Topics.Late = c.Topics.Boxes }, []string{`"boxes"`, "boxes", "late"}},
		{"missing brokers", func(c *Config) { c.Kafka.Brokers = nil }, []string{"brokers"}},
		{"broker not host:port", func(c *Config) { c.Kafka.Brokers = []string{"localhost"} }, []string{"broker", "localhost"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := validConfig()
			tc.edit(&c)
			err := c.Validate()
			if err == nil {
				t.Fatalf("Validate accepted %+v", c)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			// New refuses the same configuration and says why.
			if _, nerr := New(c, nil); nerr == nil || !strings.Contains(nerr.Error(), err.Error()) {
				t.Errorf("New: %v, want an error containing %q", nerr, err)
			}
		})
	}
}

// TestConfigValidateReportsEveryProblem: all problems are reported at once.
func TestConfigValidateReportsEveryProblem(t *testing.T) {
	c := Config{Params: contract.Params{Window: -1, Lateness: -1}, Topics: Topics{Toys: "x", Boxes: "x"}}
	err := c.Validate()
	if err == nil {
		t.Fatal("Validate accepted the zero config")
	}
	for _, w := range []string{"brokers", "window", "lateness", "partitions", "replication", "group",
		"topic for packed", "topic for unpacked", "topic for spare", "topic for late", "topic for dead", `topic "x" is used for both toys and boxes`} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
}

func TestConfigParamsAndGroups(t *testing.T) {
	c := validConfig()
	c.Window = 1500 * time.Millisecond
	c.Lateness = 3 * time.Microsecond
	if p := c.params(); p != (paramsUS{WindowUS: 1_500_000, LatenessUS: 3}) {
		t.Errorf("params = %+v", p)
	}
	c.Group = "g"
	if got := c.Groups(); strings.Join(got, ",") != "g-clock" {
		t.Errorf("Groups = %v", got)
	}
	pk, err := New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if gg := pk.Graph(); string(gg.Group()) != c.Groups()[0] {
		t.Errorf("graph is group %q, want %q", gg.Group(), c.Groups()[0])
	}
}

// TestConfigValidateInternalTopicCollision: a role topic that is also one of
// the packer's own topics (<group>-clock-loop, -clock-table)
// cannot work: with late = "packer-clock-table", late rows would be
// recovered as the clock's decisions.
// Validate must refuse such configurations.
func TestConfigValidateInternalTopicCollision(t *testing.T) {
	internal := []string{"packer-clock-loop", "packer-clock-table"}
	for _, name := range internal {
		c := validConfig()
		c.Topics.Late = name
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("late topic %q: Validate = %v, want an error naming it", name, err)
		}
	}
	// A name that merely looks internal is free.
	c := validConfig()
	c.Topics.Late = "packer-dedupe-table"
	if err := c.Validate(); err != nil {
		t.Errorf("late topic packer-dedupe-table: %v", err)
	}
}

// TestConfigInternalTopics: the clock table is the only durable copy of the
// state, so it is a table topic (never compacted, no retention: only the
// packer deletes its records, horizon.go); the loop is a stream.
func TestConfigInternalTopics(t *testing.T) {
	c := validConfig()
	c.Group = "g"
	want := []internalTopic{{"g-clock-loop", loopTopic}, {"g-clock-table", tableTopic}}
	if got := c.internalTopics(); !slices.Equal(got, want) {
		t.Errorf("internal topics %+v, want %+v", got, want)
	}
	if c.clockTable() != "g-clock-table" {
		t.Errorf("table %q", c.clockTable())
	}
}

// TestFetchPerPartition: the budget is shared by the partitions, within
// [64 KiB, 1 MiB], so that a fetch's size does not grow with them.
func TestFetchPerPartition(t *testing.T) {
	for _, tc := range []struct {
		budget     int
		partitions int32
		want       int32
	}{
		{0, 4, 512 << 10}, // the default budget
		{DefaultFetchBudget, 1, 1 << 20},
		{DefaultFetchBudget, 2, 1 << 20},
		{DefaultFetchBudget, 16, 128 << 10},
		{DefaultFetchBudget, 64, 64 << 10},
		{DefaultFetchBudget, 1000, 64 << 10},
		{64 << 20, 4, 1 << 20},
		{1, 1, 64 << 10},
	} {
		c := DefaultConfig()
		c.FetchBudget, c.Partitions = tc.budget, tc.partitions
		if got := c.FetchPerPartition(); got != tc.want {
			t.Errorf("budget %d over %d partitions: %d bytes a partition, want %d", tc.budget, tc.partitions, got, tc.want)
		}
	}
	c := DefaultConfig()
	c.Kafka.Brokers = []string{"localhost:9092"}
	c.FetchBudget = -1
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "fetch budget") {
		t.Errorf("a negative budget: %v, want an error naming the fetch budget", err)
	}
}

package packer

import (
	"errors"
	"fmt"
	"time"

	"github.com/northpole-workshop/northpole/internal/contract"
	"github.com/northpole-workshop/northpole/internal/kafkaconf"
)

// Topics names every topic the packer reads or writes.
type Topics struct {
	Toys, Boxes                         string
	Packed, Unpacked, Spare, Late, Dead string
}

// DefaultTopics are the names the elves and the docs use.
func DefaultTopics() Topics {
	return Topics{
		Toys: "toys", Boxes: "boxes",
		Packed: "packed", Unpacked: "unpacked", Spare: "spare", Late: "late", Dead: "dead-letters",
	}
}

// Config configures the packer. Start from DefaultConfig and call Validate.
type Config struct {
	Kafka  kafkaconf.Config
	Topics Topics
	// Group prefixes the two goka groups (<group>-clock, -slots) and so their
	// loop and table topics.
	Group string
	// Partitions of every topic the packer creates. Existing input topics must
	// have exactly this many: co-partitioning is what makes the join correct.
	Partitions int32
	// Replication of the topics the packer creates (1 on a single broker).
	Replication int16
	// Params are the contract's W and L.
	contract.Params
	// StorageDir keeps goka's tables in LevelDB under this directory; empty
	// keeps them in memory and rebuilds them from Kafka at start.
	StorageDir string
	// InstanceID, when set, makes this instance a static member of its
	// consumer groups (KIP-345): restarted with the same id, it takes its
	// partitions back at once instead of waiting for the old session to time
	// out. Two live instances must never share an id.
	InstanceID string
	// MinCompactionLag protects the table topics that downstream stages read
	// as streams from compaction before they are consumed.
	MinCompactionLag time.Duration
}

// DefaultConfig is the configuration of the demo.
func DefaultConfig() Config {
	return Config{
		Topics:           DefaultTopics(),
		Group:            "packer",
		Partitions:       4,
		Replication:      1,
		Params:           contract.DefaultParams(),
		MinCompactionLag: 7 * 24 * time.Hour,
	}
}

// Validate refuses configurations that cannot work, saying why.
func (c Config) Validate() error {
	var errs []error
	if err := c.Kafka.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Params.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Partitions < 1 {
		errs = append(errs, fmt.Errorf("partitions must be at least 1, got %d", c.Partitions))
	}
	if c.Replication < 1 {
		errs = append(errs, fmt.Errorf("replication must be at least 1, got %d", c.Replication))
	}
	if c.Group == "" {
		errs = append(errs, errors.New("group must not be empty"))
	}
	t := c.Topics
	names := map[string]string{}
	for _, n := range []struct{ role, name string }{
		{"toys", t.Toys}, {"boxes", t.Boxes}, {"packed", t.Packed}, {"unpacked", t.Unpacked},
		{"spare", t.Spare}, {"late", t.Late}, {"dead", t.Dead},
	} {
		if n.name == "" {
			errs = append(errs, fmt.Errorf("topic for %s must not be empty", n.role))
			continue
		}
		if other, dup := names[n.name]; dup {
			errs = append(errs, fmt.Errorf("topic %q is used for both %s and %s", n.name, other, n.role))
		}
		names[n.name] = n.role
	}
	// A role topic named like one of the packer's own loop or table topics
	// would feed one stage's rows into another as if they were its events.
	for _, internal := range c.internalTopics() {
		if role, clash := names[internal.name]; clash {
			errs = append(errs, fmt.Errorf("topic %q for %s is one of the packer's internal topics (group %q)", internal.name, role, c.Group))
		}
	}
	if c.MinCompactionLag < 0 {
		errs = append(errs, fmt.Errorf("min compaction lag must not be negative, got %v", c.MinCompactionLag))
	}
	return errors.Join(errs...)
}

// params are W and L in microseconds, as the stages compute with them.
func (c Config) params() paramsUS {
	return paramsUS{WindowUS: c.Window.Microseconds(), LatenessUS: c.Lateness.Microseconds()}
}

func (c Config) clockGroup() string { return c.Group + "-clock" }
func (c Config) slotsGroup() string { return c.Group + "-slots" }

// dedupeTable is the changelog of the dedupe entries (where each id was
// first seen). The clock group writes it and joins it, so goka recovers it
// with the clock table, partition by partition (dedupe.go).
func (c Config) dedupeTable() string { return c.Group + "-dedupe-table" }

// slotTable is the changelog of the slots, which the slots group writes and
// joins (slots.go). goka allows no other edge on "<group>-slots-table", the
// name of the group's own table, which it does not have.
func (c Config) slotTable() string { return c.Group + "-slot-table" }

type internalKind int

const (
	loopTopic  internalKind = iota // a stream between stages: deleted after loopRetention
	tableTopic                     // a goka group table: compacted
)

type internalTopic struct {
	name string
	kind internalKind
}

// internalTopics are the topics only the packer reads and writes: the loops
// and the tables.
func (c Config) internalTopics() []internalTopic {
	table := func(g string) internalTopic { return internalTopic{g + "-table", tableTopic} }
	return []internalTopic{
		{c.clockGroup() + "-loop", loopTopic}, {c.dedupeTable(), tableTopic}, table(c.clockGroup()),
		{c.slotTable(), tableTopic},
	}
}

// Groups are the goka groups of the packer, in pipeline order.
func (c Config) Groups() []string {
	return []string{c.clockGroup(), c.slotsGroup()}
}

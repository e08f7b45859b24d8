package packer

import (
	"errors"
	"fmt"
	"time"

	"github.com/lovoo/goka"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

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

// NamedTopics names every topic of a run after prefix: prefix-toys,
// prefix-boxes, prefix-packed, prefix-unpacked, prefix-spare, prefix-late
// and prefix-dead.
func NamedTopics(prefix string) Topics {
	return Topics{
		Toys: prefix + "-toys", Boxes: prefix + "-boxes",
		Packed: prefix + "-packed", Unpacked: prefix + "-unpacked", Spare: prefix + "-spare",
		Late: prefix + "-late", Dead: prefix + "-dead",
	}
}

// Config configures the packer. Start from DefaultConfig and call Validate.
type Config struct {
	Kafka  kafkaconf.Config
	Topics Topics
	// Group prefixes the goka group (<group>-clock) and so its loop and
	// table topics.
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
	// CleanEvery is how often the packer deletes the clock table's records
	// that no restart needs any more (horizon.go): a restart reads about
	// what the open windows hold plus what came in since the last cleaning.
	// Zero never deletes them, and the table grows with every record.
	CleanEvery time.Duration
	// FetchBudget is about how many bytes of records each group asks for
	// at once over all its partitions: a fetch asks each partition for
	// FetchBudget / Partitions (FetchPerPartition). sarama parses a whole
	// answer into messages before the callbacks take them, so what the
	// packer holds while consuming at full speed grows with what a fetch
	// brings, and a fixed amount per partition made the peak grow with the
	// partitions (PERFORMANCE.md, "Memory and partitions"). Zero means
	// DefaultFetchBudget.
	FetchBudget int
	// AlignEvery is how often the aligner (align.go) asks for the inputs'
	// end offsets and pauses the input that runs ahead in event time; zero
	// means DefaultAlignEvery.
	AlignEvery time.Duration
	// Tracer, when set and not a no-op, traces the packer (tracing.go:
	// newStageTracing says which spans). Nil: no tracing work at all. Not
	// serialized: a process that gets its configuration as JSON (a bench
	// worker) builds its own from its environment.
	Tracer trace.TracerProvider `json:"-"`
	// Meter, when set and not a no-op, gives the packer's metrics
	// (metrics.go; otel/README.md lists them). Nil: nothing is counted.
	// Not serialized, as Tracer.
	Meter metric.MeterProvider `json:"-"`
	// Ready, when set, is called once in each Run, when the group has
	// joined and recovered its table and consumes: not when Run fails or
	// stops first. Not serialized, as a function cannot be.
	Ready func() `json:"-"`
}

// DefaultConfig is the configuration of the demo.
func DefaultConfig() Config {
	return Config{
		Topics:      DefaultTopics(),
		Group:       "packer",
		Partitions:  4,
		Replication: 1,
		Params:      contract.DefaultParams(),
		CleanEvery:  2 * time.Second,
		FetchBudget: DefaultFetchBudget,
		AlignEvery:  DefaultAlignEvery,
	}
}

// DefaultAlignEvery: an input's end offsets ten times a second were 0.1 %
// of the broker's CPU at 2,000 records/s (PERFORMANCE.md), and an input
// that runs ahead is held back within a tenth of a second.
const DefaultAlignEvery = 100 * time.Millisecond

func (c Config) alignEvery() time.Duration {
	if c.AlignEvery == 0 {
		return DefaultAlignEvery
	}
	return c.AlignEvery
}

// DefaultFetchBudget: 512 KiB a partition with 4 partitions, where the peak
// memory fell by a third against sarama's 1 MiB, and 128 KiB with 16, where
// it fell to about a quarter; the CPU per event did not grow
// (PERFORMANCE.md, "Memory and partitions").
const DefaultFetchBudget = 2 << 20

// A partition is asked for at least minFetch bytes, so that many
// partitions still fetch in batches, and at most maxFetch, sarama's
// default. A record larger than that is still fetched: sarama grows the
// fetch for it.
const (
	minFetch = 64 << 10
	maxFetch = 1 << 20
)

// FetchPerPartition is what a fetch asks each partition for: FetchBudget
// shared by the partitions, within [64 KiB, 1 MiB].
func (c Config) FetchPerPartition() int32 {
	b := c.FetchBudget
	if b == 0 {
		b = DefaultFetchBudget
	}
	return int32(min(max(b/max(int(c.Partitions), 1), minFetch), maxFetch))
}

// Named is DefaultConfig with every topic named after prefix (NamedTopics)
// and the groups after prefix-packer: a run of its own on a shared Kafka.
func Named(prefix string) Config {
	c := DefaultConfig()
	c.Topics, c.Group = NamedTopics(prefix), prefix+"-packer"
	return c
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
	if c.CleanEvery < 0 {
		errs = append(errs, fmt.Errorf("clean-every must not be negative, got %v", c.CleanEvery))
	}
	if c.AlignEvery < 0 {
		errs = append(errs, fmt.Errorf("align-every must not be negative, got %v", c.AlignEvery))
	}
	if c.FetchBudget < 0 {
		errs = append(errs, fmt.Errorf("fetch budget must not be negative, got %d bytes", c.FetchBudget))
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
	return errors.Join(errs...)
}

// params are W and L in microseconds, as the stages compute with them.
func (c Config) params() paramsUS {
	return paramsUS{WindowUS: c.Window.Microseconds(), LatenessUS: c.Lateness.Microseconds()}
}

func (c Config) clockGroup() string { return c.Group + "-clock" }

// clockTable is the clock group's own table: each line's clock, the dedupe
// entries (dedupe.go) and the slots (slots.go). The record of each event is
// its decision, the only durable copy of the state that event left: its
// topic is never compacted, and the records before what a restart needs are
// deleted (horizon.go).
func (c Config) clockTable() string { return string(goka.GroupTable(goka.Group(c.clockGroup()))) }

// clockLoop is the clock group's loop, goka's name for it: records of a
// line that came in another partition than its line's (dedupe.go).
func (c Config) clockLoop() string { return c.clockGroup() + "-loop" }

// The clock group's inputs, in the order the packer indexes them (its
// metrics, the horizon's marks, the committed offsets a recovery reads):
// toys and boxes (streamIndex), then the loop.
const (
	inToys = iota
	inBoxes
	inLoop
	nInputs
)

// inputTopics are the clock group's inputs, indexed as above.
func (c Config) inputTopics() [nInputs]string {
	return [nInputs]string{c.Topics.Toys, c.Topics.Boxes, c.clockLoop()}
}

type internalKind int

const (
	loopTopic  internalKind = iota // a stream between stages: deleted after loopRetention
	tableTopic                     // a group table: never compacted, no time or size retention
)

type internalTopic struct {
	name string
	kind internalKind
}

// internalTopics are the topics only the packer reads and writes: the loop
// and the tables.
func (c Config) internalTopics() []internalTopic {
	return []internalTopic{
		{c.clockLoop(), loopTopic}, {c.clockTable(), tableTopic},
	}
}

// Groups are the goka groups of the packer: the clock group alone, which
// reads each input record once.
func (c Config) Groups() []string {
	return []string{c.clockGroup()}
}

// GroupInput is one goka group of the packer and every topic it consumes.
type GroupInput struct {
	Group  string
	Topics []string
}

// GroupInputs are the packer's groups, each with every topic it consumes,
// its loop included: what a reader from outside measures the group's lag
// over.
func (c Config) GroupInputs() []GroupInput {
	return []GroupInput{
		{c.clockGroup(), []string{c.Topics.Toys, c.Topics.Boxes, c.clockLoop()}},
	}
}

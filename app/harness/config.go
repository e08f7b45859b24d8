package harness

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/otel/telemetry"
	"github.com/northpole-workshop/northpole/processors/packer"
	"github.com/northpole-workshop/northpole/processors/sleigh"
	"github.com/northpole-workshop/northpole/producers"
)

// Config is one pipeline on one Kafka.
type Config struct {
	Kafka kafkaconf.Config
	// Packer is the packer's configuration; New sets its Kafka to Kafka.
	Packer packer.Config
	// Toys and Boxes are the elves'. New sets their Topic to the packer's
	// input topics and their Params to the packer's, and raises their
	// FinalHeartbeatAt to the horizon of both (producers.Horizon), so that the
	// final heartbeats of each stream close every window of both.
	Toys, Boxes producers.Config
	// Halls, when not 0, is given to both streams' elves
	// (producers.Config.Halls), spreading their records over 4H packing
	// lines; 0 leaves the elves' own Halls as they are. Toys and boxes
	// should agree, or no toy finds its box.
	Halls int
	// Sleigh, when true, also runs the sleigh on the packed topic, in goka
	// group <Packer.Group>-sleigh.
	Sleigh bool
	// Tracing, when set, traces every component with the tracer provider it
	// gives for the component's service name (telemetry.ServiceToyElves,
	// telemetry.ServiceBoxElves, telemetry.ServicePacker,
	// telemetry.ServiceSleigh). Nil: nothing is traced.
	Tracing func(service string) trace.TracerProvider
	// Metrics, when set, gives every component the meter provider of its
	// service name, as Tracing does. Nil: no metrics.
	Metrics func(service string) metric.MeterProvider
	// Progress, when set, is called every ProgressEvery while Run produces
	// and packs, and once more when it is done (Phase PhaseDone).
	Progress      func(Progress)
	ProgressEvery time.Duration
}

// DefaultConfig is a pipeline on the default topics and groups (those of the
// docs and the demo), without the sleigh.
func DefaultConfig() Config {
	return Config{
		Packer: packer.DefaultConfig(),
		Toys:   producers.DefaultConfig(record.Toys),
		Boxes:  producers.DefaultConfig(record.Boxes),
	}
}

// Named is DefaultConfig with the packer's topics and groups named after
// prefix (packer.Named): a run of its own on a shared Kafka.
func Named(prefix string) Config {
	c := DefaultConfig()
	c.Packer = packer.Named(prefix)
	return c
}

// ValidPrefix refuses a prefix that would make names Kafka refuses: a topic
// name is at most 249 characters of [a-zA-Z0-9._-]. The longest name Named
// makes from a prefix is the sleigh's table, PREFIX-packer-sleigh-table (20
// characters more); at most 200 leaves room to spare.
func ValidPrefix(prefix string) error {
	if len(prefix) > 200 {
		return fmt.Errorf("%d characters: at most 200, so that every topic name fits Kafka's 249", len(prefix))
	}
	for _, r := range prefix {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("%q is not allowed in a Kafka topic name (letters, digits, '.', '_' and '-' are)", r)
		}
	}
	return nil
}

// complete ties the parts of c together (see Config), and gives each
// component its tracer (with Tracing).
func (c Config) complete() Config {
	c.Packer.Kafka, c.Toys.Kafka, c.Boxes.Kafka = c.Kafka, c.Kafka, c.Kafka
	if c.Tracing != nil {
		c.Packer.Tracer = c.Tracing(telemetry.ServicePacker)
		c.Toys.Tracer, c.Boxes.Tracer = c.Tracing(telemetry.ServiceToyElves), c.Tracing(telemetry.ServiceBoxElves)
	}
	if c.Metrics != nil {
		c.Packer.Meter = c.Metrics(telemetry.ServicePacker)
		c.Toys.Meter, c.Boxes.Meter = c.Metrics(telemetry.ServiceToyElves), c.Metrics(telemetry.ServiceBoxElves)
	}
	c.Toys.Topic, c.Boxes.Topic = c.Packer.Topics.Toys, c.Packer.Topics.Boxes
	c.Toys.Params, c.Boxes.Params = c.Packer.Params, c.Packer.Params
	if c.Halls != 0 {
		c.Toys.Halls, c.Boxes.Halls = c.Halls, c.Halls
	}
	h := producers.Horizon(c.Toys, c.Boxes)
	for _, e := range []*producers.Config{&c.Toys, &c.Boxes} {
		if h.After(e.FinalHeartbeatAt) {
			e.FinalHeartbeatAt = h
		}
	}
	return c
}

func (c Config) sleighConfig() sleigh.Config {
	s := sleigh.DefaultConfig()
	s.Kafka, s.Topic, s.Group = c.Kafka, c.Packer.Topics.Packed, c.Packer.Group+"-sleigh"
	s.Partitions, s.Replication = c.Packer.Partitions, c.Packer.Replication
	if c.Tracing != nil {
		s.Tracer = c.Tracing(telemetry.ServiceSleigh)
	}
	if c.Metrics != nil {
		s.Meter = c.Metrics(telemetry.ServiceSleigh)
	}
	return s
}

// Validate reports every reason the pipeline cannot run, or nil; a problem
// of the settings the packer shares with the others (Kafka, W and L) is said
// once.
func (c Config) Validate() error {
	c = c.complete()
	errs := []error{c.Packer.Validate()}
	packers := map[string]bool{}
	for _, err := range leaves(errs[0]) {
		packers[err.Error()] = true
	}
	for _, e := range []producers.Config{c.Toys, c.Boxes} {
		for _, err := range leaves(e.Validate()) {
			if packers[err.Error()] {
				continue
			}
			if se := (*kafkaconf.SettingsError)(nil); !errors.As(err, &se) {
				err = fmt.Errorf("%s elves: %w", e.Stream, err)
			}
			errs = append(errs, err)
		}
	}
	if c.Toys.Stream != record.Toys || c.Boxes.Stream != record.Boxes {
		errs = append(errs, fmt.Errorf("the elves' streams are %q and %q, want %q and %q", c.Toys.Stream, c.Boxes.Stream, record.Toys, record.Boxes))
	}
	if c.Sleigh {
		if err := c.sleighConfig().Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Progress != nil && c.ProgressEvery <= 0 {
		errs = append(errs, fmt.Errorf("progress interval must be positive, got %v", c.ProgressEvery))
	}
	return joinOnce(errs)
}

// joinOnce joins the problems errs report, each once: the packer, the
// elves and the sleigh each validate the Kafka settings they share.
func joinOnce(errs []error) error {
	var out []error
	seen := map[string]bool{}
	for _, err := range leaves(errors.Join(errs...)) {
		if !seen[err.Error()] {
			seen[err.Error()] = true
			out = append(out, err)
		}
	}
	return errors.Join(out...)
}

// leaves are the errors errors.Join joined into err, joins within it
// opened too.
func leaves(err error) []error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		if err == nil {
			return nil
		}
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, leaves(e)...)
	}
	return out
}

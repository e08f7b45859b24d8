// Package producers is the elves: they make toys or boxes (and heartbeats, and
// deliberately bad, late and duplicate records) and write them to Kafka, keyed
// by packing line (the size class, or size/hall with Config.Halls), as the
// packing contract (docs/CONTRACT.md) describes.
//
// Generation is pure and deterministic (Generator, Plan, FinalHeartbeats): the
// same Config yields the same records. Run sends them with a franz-go (kgo)
// producer from a few concurrent elf goroutines.
package producers

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/northpole-workshop/northpole/internal/contract"
	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/record"
)

// DefaultStart is the default event-time origin: runs are reproducible unless
// the user asks otherwise.
var DefaultStart = time.Date(2026, 12, 24, 0, 0, 0, 0, time.UTC)

// SizeMix maps a size class (S, M, L, XL) to its relative weight.
type SizeMix map[string]int

// DefaultSizeMix is S=4,M=3,L=2,XL=1.
func DefaultSizeMix() SizeMix { return SizeMix{"S": 4, "M": 3, "L": 2, "XL": 1} }

// ParseSizeMix parses "S=4,M=3,L=2,XL=1". Sizes left out have weight 0.
func ParseSizeMix(s string) (SizeMix, error) {
	m := SizeMix{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		size, w, ok := strings.Cut(part, "=")
		size = strings.TrimSpace(size)
		if !ok {
			return nil, fmt.Errorf("size mix: %q is not SIZE=WEIGHT", part)
		}
		if !record.ValidSize(size) {
			return nil, fmt.Errorf("size mix: %q is not one of S, M, L, XL", size)
		}
		if _, dup := m[size]; dup {
			return nil, fmt.Errorf("size mix: %s given twice", size)
		}
		n, err := strconv.Atoi(strings.TrimSpace(w))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("size mix: weight %q of %s is not a whole number >= 0", w, size)
		}
		m[size] = n
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// String formats the mix in size order, e.g. "S=4,M=3,L=2,XL=1"; sizes with
// weight 0 are left out.
func (m SizeMix) String() string {
	var parts []string
	for _, s := range record.Sizes {
		if w := m[s]; w > 0 {
			parts = append(parts, s+"="+strconv.Itoa(w))
		}
	}
	return strings.Join(parts, ",")
}

// Validate checks that every key is a size class, weights are >= 0 and at
// least one is > 0, and reports every weight that is not.
func (m SizeMix) Validate() error {
	var errs []error
	total := 0
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		w := m[k]
		switch {
		case !record.ValidSize(k):
			errs = append(errs, fmt.Errorf("size mix: %q is not one of S, M, L, XL", k))
		case w < 0:
			errs = append(errs, fmt.Errorf("size mix: weight of %s must be >= 0, got %d", k, w))
		case w > math.MaxInt32:
			errs = append(errs, fmt.Errorf("size mix: weight of %s is too large", k))
		default:
			total += w
		}
	}
	if total == 0 && len(errs) == 0 {
		errs = append(errs, errors.New("size mix: at least one size needs a weight > 0"))
	}
	return errors.Join(errs...)
}

// Config says what one run of elves produces, and where. Build it with
// DefaultConfig and change what you need; New validates it.
type Config struct {
	// Kafka is where the elves write.
	Kafka kafkaconf.Config
	// Stream is toys or boxes.
	Stream record.Stream
	// Topic to write to; default the stream's name.
	Topic string
	// Count is the number of records to produce (heartbeats not counted).
	// Exactly one of Count and Duration is > 0.
	Count int
	// Duration is the wall-clock time to produce for; records are generated
	// lazily until it ends.
	Duration time.Duration
	// Rate in records per second (heartbeats not counted); 0 = as fast as possible.
	Rate float64
	// Elves is the number of concurrent elf goroutines.
	Elves int
	// SizeMix weights the size classes.
	SizeMix SizeMix
	// Halls spreads the records over packing lines (see lines.go): 0 keys
	// every record by its size alone, four lines, the records of contract
	// version 2 byte for byte; N > 0 keys each by size/hall-k, k in 1..N
	// taken in turn per size, so that up to 4N partitions carry work.
	Halls int
	// Seed makes runs reproducible: the same Config gives the same records.
	Seed int64
	// Start is the event time (made_at) of the first record.
	Start time.Time
	// Spacing is the event time between consecutive records.
	Spacing time.Duration
	// Disorder jitters made_at: a uniform random duration in [0, Disorder) is
	// subtracted from each record's nominal time. With Disorder <= Lateness no
	// record becomes late by accident.
	Disorder time.Duration
	// LateRate is the probability that a record is made deliberately late:
	// made_at is Lateness + 2*Window + a random part before the newest event
	// time the sending elf has written for that size, and it goes to the
	// line that newest record went to. A late draw before the elf has
	// written anything (record or heartbeat) for that size makes an ordinary
	// record instead, so the fraction of late records is below LateRate
	// (Stats.Kinds counts those actually made).
	LateRate float64
	// DupRate is the fraction of records that re-send, with an identical key
	// and value, an earlier record of the same size written by the same elf.
	DupRate float64
	// BadRate is the fraction of dead letters, cycling through BadKinds.
	BadRate float64
	// Params are the contract's W and L; they set how late the late records
	// are and when the final heartbeats are.
	contract.Params
	// HeartbeatEvery is the event-time interval between heartbeat ticks; a
	// tick beats the lines with recent items or windows due to close
	// (HeartbeatsHelp); 0 = none but the final ones.
	HeartbeatEvery time.Duration
	// FinalHeartbeatAt: zero = computed (end of the last window written plus
	// Lateness); otherwise the final heartbeats are at the later of the two.
	FinalHeartbeatAt time.Time
	// Tracer, when set (and not a no-op), gives every record a PRODUCER span
	// "send <topic>" whose context travels in the record's headers (W3C
	// traceparent). Nil: no tracing work at all.
	Tracer trace.TracerProvider
	// Meter, when set, counts what Kafka answered: messaging.client.sent.messages
	// and northpole.elves.records (metrics.go). Nil: no metrics.
	Meter metric.MeterProvider
	// Progress, when set, gets what the run has sent so far every
	// ProgressEvery (0: DefaultProgressEvery).
	Progress      func(Stats)
	ProgressEvery time.Duration
}

// DefaultConfig is the configuration of `northpole elves STREAM` without flags.
func DefaultConfig(stream record.Stream) Config {
	return Config{
		Stream:         stream,
		Topic:          string(stream),
		Count:          1000,
		Elves:          4,
		SizeMix:        DefaultSizeMix(),
		Seed:           1,
		Start:          DefaultStart,
		Spacing:        10 * time.Millisecond,
		Params:         contract.DefaultParams(),
		HeartbeatEvery: time.Second,
	}
}

// MaxElves bounds Config.Elves.
const MaxElves = 1024

// Validate reports every configuration error, each naming the field to
// fix.
func (c Config) Validate() error {
	var progress error
	if c.ProgressEvery < 0 {
		progress = fmt.Errorf("progress interval must be >= 0, got %v", c.ProgressEvery)
	}
	return errors.Join(c.Kafka.Validate(), c.validRecords(), progress)
}

// validRecords reports every error of the settings that say which records
// are made: all that Plan and NewGenerator need.
func (c Config) validRecords() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !c.Stream.Valid() {
		bad("stream must be %q or %q, got %q", record.Toys, record.Boxes, c.Stream)
	}
	if strings.TrimSpace(c.Topic) == "" {
		bad("topic must not be empty")
	}
	if c.Count < 0 {
		bad("count must be >= 0, got %d", c.Count)
	}
	if c.Duration < 0 {
		bad("duration must be >= 0, got %v", c.Duration)
	}
	if c.Count >= 0 && c.Duration >= 0 && (c.Count > 0) == (c.Duration > 0) {
		bad("exactly one of count and duration must be > 0 (got count %d, duration %v)", c.Count, c.Duration)
	}
	if math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0) || c.Rate < 0 {
		bad("rate must be >= 0, got %v", c.Rate)
	}
	if c.Elves < 1 || c.Elves > MaxElves {
		bad("elves must be between 1 and %d, got %d", MaxElves, c.Elves)
	}
	if err := c.SizeMix.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Halls < 0 || c.Halls > MaxHalls {
		bad("halls must be between 0 (keys are sizes alone) and %d, got %d", MaxHalls, c.Halls)
	}
	if c.Start.IsZero() {
		bad("start must be set")
	}
	if c.Spacing < 0 {
		bad("spacing must be >= 0, got %v", c.Spacing)
	}
	if c.Disorder < 0 {
		bad("disorder must be >= 0, got %v", c.Disorder)
	}
	rates := true
	for _, r := range []struct {
		name string
		v    float64
	}{{"late rate", c.LateRate}, {"dup rate", c.DupRate}, {"bad rate", c.BadRate}} {
		if math.IsNaN(r.v) || r.v < 0 || r.v > 1 {
			bad("%s must be between 0 and 1, got %v", r.name, r.v)
			rates = false
		}
	}
	if sum := c.LateRate + c.DupRate + c.BadRate; rates && sum > 1+1e-9 {
		bad("late rate + dup rate + bad rate must be <= 1, got %v", sum)
	}
	if err := c.Params.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.HeartbeatEvery < 0 {
		bad("heartbeat interval must be >= 0, got %v", c.HeartbeatEvery)
	}
	return errors.Join(errs...)
}

// ElfName is the name elf i (0-based) writes in its records, e.g. "toy-elf-2".
func ElfName(stream record.Stream, i int) string {
	return fmt.Sprintf("%s-elf-%d", streamPrefix(stream), i)
}

// FinalElfName is the elf name of the final heartbeats, written once every elf
// has finished.
func FinalElfName(stream record.Stream) string { return streamPrefix(stream) + "-elf-final" }

func streamPrefix(s record.Stream) string {
	if s == record.Boxes {
		return "box"
	}
	return "toy"
}

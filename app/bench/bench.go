// Package bench measures the packer the way it runs in production: as its own
// OS process, from a backlog or at a fixed input rate, with tracing off or on,
// its tables in memory or on disk, on the in-process kfake or a real Kafka.
// Per variant it reports input events/s, the worker process's CPU per input
// event (rusage) and peak RSS (VmHWM), output records/s and, live, the pack
// latency; and, with Config.Restart, what the packer's internal topics keep
// once its cleaner has run and how long a restarted packer takes to be
// ready (state.go). The scale variant (scaleout.go) runs several packers
// in one group on lines spread over many partitions, reports each one's
// partitions, share of the work and CPU per event, and checks every run
// against the batch reference. `northpole bench` is its command line;
// docs/PERFORMANCE.md has the numbers.
//
// The bench does not know the command line of the processes it measures:
// Config.Args says what to run, and the process reads its Worker from
// WorkerEnv.
//
// Besides the packer's own figures it reads the broker's CPU over the same
// interval (brokercpu.go: kfake's is this process's own; a real broker's
// from /proc, found by its listening socket through internal/procfs), and
// the Kafka records written and read per input event by kind of topic, from
// end offsets and the goka group graphs (records.go). Rounds (rounds.go,
// Summarize) run the variant list again and again and sum up each variant's
// ratio to its round's baseline. RunHop (hop.go) is the one-hop floor, a
// bare goka hop. A worker gets its configuration whole, as JSON in
// $NORTHPOLE_BENCH_WORKER (workerenv.go). text.go renders the tables and
// the legend the help prints (Legend); the sleigh's load test is
// app/sleighbench.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lovoo/goka"

	"github.com/northpole-workshop/northpole/app/harness"
	"github.com/northpole-workshop/northpole/internal/contract"
	"github.com/northpole-workshop/northpole/internal/gcheadroom"
	"github.com/northpole-workshop/northpole/internal/kafkaadmin"
	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/kfakebroker"
	"github.com/northpole-workshop/northpole/processors/packer"
	"github.com/northpole-workshop/northpole/processors/packer/outputs"
	"github.com/northpole-workshop/northpole/producers"
)

// Variant is one configuration of the packer the bench measures.
type Variant struct {
	Name string `json:"name"`
	// ID is the variant's name in Config.Variants ("trace10"), with the
	// partition count for parts ("parts8"): it names its CPU profile.
	ID         string `json:"id"`
	Partitions int32  `json:"partitions"`
	Tracing    string `json:"tracing"` // off | 100% | 10% | 0%
	Broker     string `json:"broker"`  // kfake | real
	Storage    string `json:"storage"` // memory | disk
	Live       bool   `json:"live,omitempty"`
	// Hop: not the packer but one bare goka hop (RunHop), the floor.
	Hop      bool    `json:"hop,omitempty"`
	LiveRate float64 `json:"live_rate,omitempty"`
	// Instances, for the scale variant: this many packers, each its own
	// process, in one group (scaleout.go).
	Instances int `json:"instances,omitempty"`
	// Metrics: the packer's OpenTelemetry metrics on (Config.Meter).
	Metrics bool `json:"metrics,omitempty"`
	// Halls: the elves' halls (Config.Halls), 4 × Halls packing lines.
	Halls int `json:"halls,omitempty"`
	// Handover: with the state measurements, also a rebalance that moves
	// the partitions to another instance (handover.go).
	Handover bool `json:"handover,omitempty"`
}

// Result is what one variant measured.
type Result struct {
	Variant
	InputEvents   int64   `json:"input_events"`
	OutputRecords int64   `json:"output_records"`
	Seconds       float64 `json:"seconds"`
	EventsPerSec  float64 `json:"input_events_per_s"`
	OutputsPerSec float64 `json:"output_records_per_s"`
	CPUSeconds    float64 `json:"packer_cpu_s"`
	CPUPerEventUS float64 `json:"packer_cpu_us_per_event"`
	MaxRSSMiB     float64 `json:"packer_max_rss_mib"`
	// RSSBytesPerRecord is the packer's peak RSS over the records of the
	// input topics (InputEvents).
	RSSBytesPerRecord float64 `json:"packer_rss_bytes_per_input_record"`
	// BrokerCPU says how the broker's CPU was measured, or why it was not
	// (then the broker and total figures are zero). The broker's CPU is
	// over the packer process's life (start to exit), less what the
	// bench's own lag polls cost it (PollCPUSeconds, calibrated after the
	// packer exited); for kfake, the bench process's CPU.
	BrokerCPU           string  `json:"broker_cpu"`
	BrokerCPUSeconds    float64 `json:"broker_cpu_s,omitempty"`
	BrokerCPUPerEventUS float64 `json:"broker_cpu_us_per_event,omitempty"`
	TotalCPUPerEventUS  float64 `json:"total_cpu_us_per_event,omitempty"`
	Polls               int     `json:"bench_lag_polls,omitempty"`
	PollCPUSeconds      float64 `json:"bench_lag_polls_cpu_s,omitempty"`
	// BrokerIdleCPU is the broker's CPU per second of wall time while the
	// packer does not run (two seconds before it starts and two after it
	// exited, the mean): on a shared broker, other clients' work.
	// BrokerNetCPUPerEventUS is BrokerCPUPerEventUS less that rate over
	// the packer's life (BrokerSeconds), TotalCPUPerEventUS the packer's
	// and that.
	BrokerIdleCPU          float64 `json:"broker_idle_cpu_s_per_s,omitempty"`
	BrokerSeconds          float64 `json:"broker_measured_s,omitempty"`
	BrokerNetCPUPerEventUS float64 `json:"broker_net_cpu_us_per_event,omitempty"`
	// Records are the Kafka records written and read per kind of topic.
	Records        []KindRecords `json:"records_by_kind,omitempty"`
	LatencyP50MS   float64       `json:"latency_p50_ms,omitempty"`
	LatencyP99MS   float64       `json:"latency_p99_ms,omitempty"`
	LatencyP999MS  float64       `json:"latency_p999_ms,omitempty"`
	LatencySamples int           `json:"latency_samples,omitempty"`
	// SpansReceived are the spans the bench's OTLP receiver got from the
	// packer (tracing variants). At 100 % SpansExpected is one per input
	// record (its "process" span) and one per output record (its "send"
	// span); fewer received means spans were lost.
	SpansReceived int64 `json:"spans_received,omitempty"`
	SpansExpected int64 `json:"spans_expected,omitempty"`
	// What the packer keeps and what a restart costs, measured when
	// Config.Restart is on, for every variant but live and hop (zero:
	// not measured). At zero lag the packer runs on for CleanWaitSeconds
	// (two of its cleaning intervals and a second), so that its cleaner
	// deletes the clock table's records no restart needs; that tail is
	// not in Seconds, CPUSeconds or the broker's CPU (it used
	// CleanWaitCPUSeconds of the packer's), but MaxRSSMiB is the peak over
	// the whole life, tail included. Then the packer is stopped and:
	//
	// InternalTopics are its loop and tables, per topic: records written
	// (end offsets), kept (end less start offsets) and bytes on the
	// brokers. InternalRecordsWritten, InternalRecordsKept and
	// InternalBytes are their sums; InternalBytes is -1 when the broker
	// did not say (DescribeLogDirs failed: InternalBytesError says why).
	// On a real Kafka a deleted record's bytes are freed only with its
	// whole segment (32 MiB for the tables), so bytes fall later than
	// records; kfake frees whole batches below the log start at once.
	//
	// RestartReadySeconds is the wall time from starting the same worker
	// again (same group, topics and storage) to its ReadyLine: the group
	// has recovered its table from what was kept and consumes.
	// RestartMaxRSSMiB is that process's peak RSS (VmHWM) at that moment.
	CleanWaitSeconds       float64      `json:"clean_wait_s,omitempty"`
	CleanWaitCPUSeconds    float64      `json:"clean_wait_packer_cpu_s,omitempty"`
	InternalTopics         []TopicState `json:"internal_topics,omitempty"`
	InternalRecordsWritten int64        `json:"internal_records_written,omitempty"`
	InternalRecordsKept    int64        `json:"internal_records_kept,omitempty"`
	InternalBytes          int64        `json:"internal_bytes,omitempty"`
	InternalBytesError     string       `json:"internal_bytes_error,omitempty"`
	RestartReadySeconds    float64      `json:"restart_ready_s,omitempty"`
	RestartMaxRSSMiB       float64      `json:"restart_max_rss_mib,omitempty"`
	// HandoverSeconds, for a variant with Handover, is the wall time from
	// stopping the one of two instances that holds the clock table until
	// the other runs with every partition (handover).
	// HandoverExitSeconds is the part of it until the leaver had exited.
	HandoverSeconds     float64 `json:"handover_s,omitempty"`
	HandoverExitSeconds float64 `json:"handover_exit_s,omitempty"`
	// Ratios to the baseline (the first variant) of CPU per event and events/s.
	// Round is the round of the run (Config.Rounds), from 1; ratios are to
	// the baseline of the same round.
	Round     int     `json:"round"`
	CPURatio  float64 `json:"cpu_per_event_ratio,omitempty"`
	RateRatio float64 `json:"events_per_s_ratio,omitempty"`
	// Scale is the scale variant's per-instance figures and its check
	// against the batch reference; CPUSeconds is then the instances'
	// summed, MaxRSSMiB the largest instance's.
	Scale *ScaleOut `json:"scale,omitempty"`
	// Check is the run's check against the batch reference, with
	// Config.Verify (the scale variant's is in Scale).
	Check *Verification `json:"check,omitempty"`
	Error string        `json:"error,omitempty"`
}

// VariantsHelp says what each of VariantNames measures: the bench command's
// help includes it.
const VariantsHelp = `Variants (--variants, comma-separated; the first is the baseline of the ratios):
  base        the default partitions (first of --partitions), tracing off, memory
  trace100    OTEL on in the packer, every trace sampled, OTLP/gRPC to a receiver
              in the bench process (which counts spans and throws them away; it
              says whether it got one per input record and one per output record)
  trace10     the same, 10 % sampled (parentbased_traceidratio 0.1)
  trace0      the same, nothing sampled (parentbased_always_off): the cost of
              a record nobody samples, alone
              (OTEL_BSP_* in the bench's environment reach the packer: the
              batch span processor drops spans when its queue, 2048 by
              default, is full; the receiver's count shows it)
  metrics     the packer's OpenTelemetry metrics on (tracing off), exported
              over OTLP/gRPC every second to a receiver in the bench process
              that keeps them: what the metrics cost
  parts       one run per other --partitions value
  lines       one run per --halls value (4 × halls packing lines, on the
              first --partitions count; on the real broker of --brokers when
              given, else on kfake): what a record costs, the memory, a
              restart and a handover to another instance (the state table's
              "handover s"), as the lines of a partition grow
  disk        --storage-dir (LevelDB) instead of memory
  real        the real broker of --brokers (skipped without --brokers)
  live        fixed input rate (--live-rate), latency percentiles; on the
              real broker of --brokers when given, else on kfake
  hop         not the packer: one goka group that consumes toys and boxes and
              writes each record into its group table (one consume and one
              write per event, no packing logic), the floor of one stage
  scale       scale-out: one run per --instances count, that many packers
              (each its own process, one consumer group) on the first
              --partitions count, lines from --halls; on the real broker of
              --brokers when given, else on kfake. Every run is checked
              against the batch reference (see Scale-out below)`

// VariantNames are the variants Config.Variants may name (VariantsHelp).
var VariantNames = []string{"base", "trace100", "trace10", "trace0", "metrics", "parts", "lines", "disk", "real", "live", "hop", "scale"}

// Worker is the process one variant measures: Config.Args names the command
// it runs, and that command reads the whole of it from WorkerEnv and runs
// the packer or, with Hop, the hop.
type Worker struct {
	// Hop: the one-hop floor (RunHop in group HopGroup, on Packer's brokers
	// and input topics) instead of the packer.
	Hop      bool
	HopGroup string
	// Packer is the packer's configuration: its Kafka (brokers, flush
	// frequency), group, partitions, W and L, topics and, for the disk
	// variant, StorageDir.
	Packer packer.Config
	// Listen, when set, is where the packer serves its health (GET
	// /healthz): the scale variant reads each instance's partitions and
	// consumed records there.
	Listen string `json:",omitempty"`
	// CPUProfile, when set, is where the worker writes its CPU profile
	// (Profile).
	CPUProfile string
	// GCHeadroom is the most headroom, in bytes, that the worker's
	// collector gets while it allocates fast (gcheadroom.Keep; 0: GOGC's
	// alone), as process packer's --gc-headroom-mib.
	GCHeadroom int `json:",omitempty"`
}

// Config configures a bench.
type Config struct {
	// Records is the number of input records per variant, toys and boxes
	// half each (the live variant: LiveRate for LiveDuration instead).
	Records int
	// Partitions: the first is the baseline's, the others the parts
	// variant's.
	Partitions []int32
	// Variants to run, in order (see VariantNames); the first is the
	// baseline of the ratios.
	Variants []string
	// GCHeadroom is the most headroom, in bytes, that the packer's
	// collector gets (Worker.GCHeadroom).
	GCHeadroom int
	// Rounds runs the whole list of variants this many times; each
	// round's ratios are to its own baseline, and Summarize sums them up.
	Rounds       int
	LiveRate     float64 // records per second, toys and boxes together
	LiveDuration time.Duration
	// StorageDir is where the disk variant keeps its LevelDB; empty: a
	// temporary directory, removed after.
	StorageDir string
	// Elves per stream when producing.
	Elves int
	// Halls spread the elves' records over packing lines (4 × halls of
	// them; 0: keys are the four sizes): the first in every variant but
	// lines, which makes one run of each.
	Halls []int
	// Instances are the scale variant's packer counts, one run each.
	Instances []int
	// JoinFirst: the scale variant starts its packers and waits until
	// every one holds partitions before the elves write,
	// instead of starting them on the backlog. The rate then includes the
	// elves' writing beside the packers: not a backlog's. For a broker
	// that does not delay a group's first join (kfake; Kafka waits
	// group.initial.rebalance.delay.ms, 3 s by default), where the first
	// packer to join consumes a small backlog alone.
	JoinFirst bool
	// CPUProfile, when set, names the CPU profile of each variant's worker
	// (ProfilePath): each variant has its own, as tracing's cost is seen
	// only in the traced variants' profiles.
	CPUProfile string
	// Timeout bounds each variant.
	Timeout time.Duration
	// Params are the W and L of the packer and the elves.
	contract.Params
	// Real is the Kafka of the real variant; without brokers the variant is
	// skipped. Every other variant runs on an in-process kfake.
	Real kafkaconf.Config
	// BrokerPIDs are the real broker's processes, whose CPU the real
	// variant measures; none: the processes of this host listening on
	// Real's bootstrap addresses.
	BrokerPIDs []int
	// Skew puts the boxes' event time this far ahead of the toys' (behind
	// when negative): while a stream is ahead its windows stay open.
	Skew time.Duration
	// Restart: for every variant but live and hop, keep the packer
	// running after zero lag until its cleaner has run, then measure what
	// its internal topics keep and how long a restarted packer takes to be
	// ready (Result's CleanWaitSeconds to RestartMaxRSSMiB).
	Restart bool
	// Verify: for every variant but hop and scale (which always checks),
	// once the packer has stopped, read its inputs and outputs back and
	// check them against the batch reference (Result.Check); a run that
	// differs fails.
	Verify bool
	// KeepTopics keeps each run's topics and consumer groups (named
	// bench-<ns>-...) on the broker for a look afterwards; by default they
	// are deleted when the run's variant is over (dropRun).
	KeepTopics bool
	// Executable is the program the workers run as, with arguments Args
	// (the command; each Worker goes in WorkerEnv).
	Executable string
	Args       []string
	// Progress gets the bench's progress lines and the workers' output.
	Progress io.Writer
}

// ParsePartitions reads Config.Partitions from its text, counts apart by
// commas: "4,1,8".
func ParsePartitions(s string) ([]int32, error) {
	var out []int32
	for _, p := range strings.Split(s, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		if err != nil || n < 1 {
			return nil, errors.New("want a list of counts such as 1,4,8")
		}
		out = append(out, int32(n))
	}
	return out, nil
}

// FormatPartitions is ps as ParsePartitions reads it.
func FormatPartitions(ps []int32) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = strconv.Itoa(int(p))
	}
	return strings.Join(parts, ",")
}

// ParseHalls reads Config.Halls from its text, counts apart by commas
// ("16,10000"); 0 is a count (keys are sizes alone).
func ParseHalls(s string) ([]int, error) {
	var out []int
	for _, p := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 0 {
			return nil, errors.New("want a list of hall counts such as 16,10000 (0: keys are sizes alone)")
		}
		out = append(out, n)
	}
	return out, nil
}

// ParseInstances reads Config.Instances from its text, counts apart by
// commas: "1,2,4".
func ParseInstances(s string) ([]int, error) {
	ps, err := ParsePartitions(s)
	if err != nil {
		return nil, errors.New("want a list of counts such as 1,2,4")
	}
	out := make([]int, len(ps))
	for i, p := range ps {
		out[i] = int(p)
	}
	return out, nil
}

// FormatInstances is ns as ParseInstances reads it.
func FormatInstances(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}

// DefaultConfig is `northpole bench` without flags.
func DefaultConfig() Config {
	return Config{
		Records: 1_000_000, Partitions: []int32{4, 1, 8}, Halls: []int{0},
		Variants: []string{"base", "trace100", "trace10", "parts", "disk", "real", "live"},
		LiveRate: 2000, LiveDuration: 30 * time.Second, Elves: 2, Instances: []int{1, 2, 4}, Timeout: 30 * time.Minute,
		Params: contract.DefaultParams(), Restart: true, Rounds: 1, Progress: io.Discard,
		GCHeadroom: gcheadroom.DefaultMost,
	}
}

// Validate reports every reason the bench cannot run, or nil.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("bench: "+format, args...)) }
	if c.Records < 2 {
		bad("records must be at least 2, got %d", c.Records)
	}
	if len(c.Partitions) == 0 {
		bad("no partition count")
	}
	for _, p := range c.Partitions {
		if p < 1 {
			bad("partition counts must be at least 1, got %d", p)
		}
	}
	for _, v := range c.Variants {
		if !slices.Contains(VariantNames, v) {
			bad("unknown variant %q (want one of %s)", v, strings.Join(VariantNames, ", "))
		}
	}
	if c.GCHeadroom < 0 {
		bad("the collector's headroom must be 0 or more bytes, got %d", c.GCHeadroom)
	}
	if c.Rounds < 1 {
		bad("rounds must be at least 1, got %d", c.Rounds)
	}
	if !(c.LiveRate > 0) || math.IsInf(c.LiveRate, 0) {
		bad("live rate must be a positive number of records per second, got %v", c.LiveRate)
	}
	if c.LiveDuration <= 0 {
		bad("live duration must be positive, got %v", c.LiveDuration)
	}
	errs = append(errs, c.workloadErrs()...)
	if c.Timeout <= 0 {
		bad("timeout must be positive, got %v", c.Timeout)
	}
	if err := c.Params.Validate(); err != nil {
		errs = append(errs, err)
	}
	if len(c.Real.Brokers) > 0 {
		if err := c.Real.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, p := range c.BrokerPIDs {
		if p < 1 {
			bad("broker process ids must be positive, got %d", p)
		}
	}
	if c.Executable == "" || len(c.Args) == 0 {
		bad("no worker program (Executable and Args)")
	}
	if c.Progress == nil {
		bad("no progress writer")
	}
	return errors.Join(errs...)
}

// workloadErrs are the problems of what the elves write and how many
// packers read it (Validate).
func (c Config) workloadErrs() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("bench: "+format, args...)) }
	if c.Elves < 1 || c.Elves > producers.MaxElves {
		bad("elves must be between 1 and %d, got %d", producers.MaxElves, c.Elves)
	}
	if len(c.Halls) == 0 {
		bad("halls: want at least one count (0: keys are sizes alone)")
	}
	for _, h := range c.Halls {
		if h < 0 || h > producers.MaxHalls {
			bad("halls must be between 0 (keys are sizes alone) and %d, got %d", producers.MaxHalls, h)
		}
	}
	if slices.Contains(c.Variants, "scale") && len(c.Instances) == 0 {
		bad("the scale variant needs at least one instance count")
	}
	for _, n := range c.Instances {
		if n < 1 {
			bad("instance counts must be at least 1, got %d", n)
		}
	}
	return errs
}

// Bench runs the variants of a Config.
type Bench struct {
	cfg Config
	log *slog.Logger
}

// New validates cfg. The bench's own components (the harness, which creates
// the topics and measures the packer's lag) log to log; nil discards.
func New(cfg Config, log *slog.Logger) (*Bench, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Bench{cfg: cfg, log: log}, nil
}

func (b *Bench) progress(format string, args ...any) {
	fmt.Fprintf(b.cfg.Progress, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// variants expands the configured names.
func (b *Bench) variants() []Variant {
	c := b.cfg
	var out []Variant
	base := Variant{Partitions: c.Partitions[0], Halls: c.Halls[0], Tracing: "off", Broker: "kfake", Storage: "memory"}
	for _, name := range c.Variants {
		v := base
		v.ID = name
		switch name {
		case "base":
			v.Name = "baseline"
		case "trace100":
			v.Name, v.Tracing = "tracing 100%", "100%"
		case "trace10":
			v.Name, v.Tracing = "tracing 10%", "10%"
		case "trace0":
			v.Name, v.Tracing = "tracing 0%", "0%"
		case "metrics":
			v.Name, v.Metrics = "metrics on", true
		case "parts":
			for _, p := range c.Partitions[1:] {
				w := base
				w.Name, w.ID, w.Partitions = fmt.Sprintf("%d partitions", p), fmt.Sprintf("parts%d", p), p
				if p == 1 {
					w.Name = "1 partition"
				}
				out = append(out, w)
			}
			continue
		case "lines":
			// Every count, the first too, so that the runs compare among
			// themselves on one broker: the real one when given.
			v.Broker = b.realWhenGiven()
			for _, h := range c.Halls {
				w := v
				w.Name, w.ID, w.Halls, w.Handover = fmt.Sprintf("%d lines", 4*max(h, 1)), fmt.Sprintf("lines%d", 4*max(h, 1)), h, true
				out = append(out, w)
			}
			continue
		case "disk":
			v.Name, v.Storage = "storage on disk", "disk"
		case "real":
			if len(c.Real.Brokers) == 0 {
				b.progress("no real Kafka given: skipping the real-broker variant")
				continue
			}
			v.Name, v.Broker = "real broker", "real"
		case "hop":
			v.Name, v.Hop = "one goka hop (floor)", true
		case "live":
			v.Name, v.Live, v.LiveRate = fmt.Sprintf("live %.0f/s", c.LiveRate), true, c.LiveRate
			v.Broker = b.realWhenGiven()
		case "scale":
			v.Broker = b.realWhenGiven()
			for _, n := range c.Instances {
				w := v
				w.Name, w.ID, w.Instances = fmt.Sprintf("%d instances", n), fmt.Sprintf("scale%d", n), n
				if n == 1 {
					w.Name = "1 instance"
				}
				out = append(out, w)
			}
			continue
		}
		out = append(out, v)
	}
	return out
}

// realWhenGiven is the broker of the variants that run on the real Kafka of
// --brokers when there is one, and on kfake without.
func (b *Bench) realWhenGiven() string {
	if len(b.cfg.Real.Brokers) > 0 {
		return "real"
	}
	return "kfake"
}

// Run measures every variant in turn, on an in-process kfake but for the
// real variant. A variant that fails has its Error set and the others still
// run; Run itself fails only when ctx ends.
func (b *Bench) Run(ctx context.Context) ([]Result, error) {
	kf, err := kfakebroker.Start()
	if err != nil {
		return nil, err
	}
	defer kf.Close()
	fake := b.cfg.Real
	fake.Brokers = kf.Addrs()
	fake.Security = kafkaconf.Security{}

	b.warnDeleteDelay(ctx)
	variants := b.variants()
	runs := map[string]int{} // of each variant ID so far
	var out []Result
	for round := 1; round <= b.cfg.Rounds; round++ {
		first := len(out)
		for i, v := range variants {
			kc := fake
			if v.Broker == "real" {
				kc = b.cfg.Real
			}
			runs[v.ID]++
			what := fmt.Sprintf("variant %d/%d: %s", i+1, len(variants), v.Name)
			if b.cfg.Rounds > 1 {
				what = fmt.Sprintf("round %d/%d, %s", round, b.cfg.Rounds, what)
			}
			profile := ""
			if b.cfg.CPUProfile != "" {
				profile = ProfilePath(b.cfg.CPUProfile, v.ID, runs[v.ID])
				what += " (CPU profile " + profile + ")"
			}
			b.progress("%s", what)
			vctx, cancel := context.WithTimeout(ctx, b.cfg.Timeout)
			r, err := b.one(vctx, kc, v, profile)
			cancel()
			r.Round = round
			if err != nil {
				if ctx.Err() != nil {
					return out, err
				}
				b.progress("variant %s failed: %v", v.Name, err)
				r.Error = err.Error()
			}
			out = append(out, r)
		}
		setRatios(out[first:])
	}
	return out, nil
}

// setRatios sets the ratios of a round's runs to its first, the baseline.
func setRatios(round []Result) {
	if len(round) == 0 || round[0].Error != "" || round[0].Live {
		return
	}
	base := round[0]
	for i := range round {
		if round[i].Error != "" || round[i].Live {
			continue
		}
		round[i].CPURatio = round[i].CPUPerEventUS / base.CPUPerEventUS
		round[i].RateRatio = round[i].EventsPerSec / base.EventsPerSec
	}
}

// ProfilePath is where the run-th run of the variant id writes its CPU
// profile, given Config.CPUProfile: the id goes before the extension, and
// the run's number from the second on (packer.pprof: packer-base.pprof,
// packer-trace10.pprof, then packer-base-2.pprof).
func ProfilePath(path, id string, run int) string {
	ext := filepath.Ext(path)
	name := strings.TrimSuffix(path, ext) + "-" + id
	if run > 1 {
		name += "-" + strconv.Itoa(run)
	}
	return name + ext
}

// one measures variant v on kc, its worker's CPU profiled into profile
// (none when empty).
func (b *Bench) one(ctx context.Context, kc kafkaconf.Config, v Variant, profile string) (Result, error) {
	if v.Instances > 0 {
		return b.scaleOut(ctx, kc, v, profile)
	}
	r := Result{Variant: v}
	name, p, err := b.freshPipeline(ctx, kc, v)
	defer b.drop(kc, name)
	if err != nil {
		return r, err
	}
	cfg := p.Config().Packer
	w := Worker{Hop: v.Hop, HopGroup: HopGroup(name), Packer: cfg, CPUProfile: profile, GCHeadroom: b.cfg.GCHeadroom}
	if v.Storage == "disk" {
		dir, cleanup, err := b.storageDir()
		if err != nil {
			return r, err
		}
		defer cleanup()
		w.Packer.StorageDir = dir + "/" + name
	}
	env, received, stopReceiver, err := b.workerEnv(v)
	if err != nil {
		return r, err
	}
	defer stopReceiver()
	produce := func(ctx context.Context) error {
		_, _, err := p.Produce(ctx, b.elvesProgress())
		return err
	}
	lag := func(ctx context.Context) (int64, error) { return outputs.Lag(ctx, cfg) }
	graphs := []*goka.GroupGraph{p.Packer().Graph()}
	what := "packer"
	if v.Hop {
		topics := []string{cfg.Topics.Toys, cfg.Topics.Boxes}
		lag = func(ctx context.Context) (int64, error) { return hopLag(ctx, kc, w.HopGroup, topics) }
		graphs = []*goka.GroupGraph{hopGraph(HopConfig{Group: w.HopGroup, Toys: cfg.Topics.Toys, Boxes: cfg.Topics.Boxes})}
		what = "worker"
	}
	uses := topicUses(graphs)
	before, err := endOffsetsByTopic(ctx, kc, topicsOf(uses), true)
	if err != nil {
		return r, err
	}
	meter, why := b.brokerMeter(v)
	r.BrokerCPU = why
	var polls atomic.Int64
	countedLag := func(ctx context.Context) (int64, error) {
		polls.Add(1)
		return lag(ctx)
	}

	var began time.Time
	if !v.Live {
		b.progress("  pre-loading %d records (%d partitions, %s)", b.cfg.Records, v.Partitions, v.Broker)
		t0 := time.Now()
		if err := produce(ctx); err != nil {
			return r, err
		}
		b.progress("  pre-loaded in %s; starting the packer", time.Since(t0).Round(time.Millisecond))
	}
	span, err := meter.begin(ctx)
	if err != nil {
		return r, err
	}
	began = time.Now()
	proc, err := b.start(ctx, w, env, false)
	if err != nil {
		return r, err
	}
	if v.Live {
		// The clock starts when the packer is ready and the elves begin.
		b.progress("  waiting for the packer's groups to be stable")
		err = waitStable(ctx, kc, cfg.Groups(), proc)
		if err == nil {
			b.progress("  writing %d records at %.0f/s", p.Config().Toys.Count*2, v.LiveRate)
			began = time.Now()
			err = produce(ctx)
		}
	}
	if err == nil {
		err = b.waitQuiet(ctx, countedLag, proc.stopped(), what)
	}
	if err != nil {
		_ = proc.stop(&r)
		return r, err
	}
	r.Seconds = time.Since(began).Seconds()
	if err := b.stopQuiet(ctx, proc, span, v, w.Packer, &r); err != nil {
		return r, err
	}
	if err := span.end(ctx, &r, lag, int(polls.Load())); err != nil {
		return r, err
	}
	if v.Live {
		if err := packLatencyPercentiles(ctx, kc, cfg.Topics, &r); err != nil {
			return r, err
		}
	}
	if err := b.count(ctx, kc, cfg.Topics, uses, before, &r); err != nil {
		return r, err
	}
	if err := b.check(ctx, kc, cfg, v, &r); err != nil {
		return r, err
	}
	if v.Tracing != "off" {
		// The packer flushed its spans before it exited.
		r.SpansReceived = received()
		b.progress("  %s", r.spansLine())
	}
	if v.Metrics {
		b.progress("  metrics: %d OTLP export requests received", received())
	}
	if b.measuresState(v) {
		if err := b.state(ctx, kc, v, w, env, uses, &r); err != nil {
			return r, err
		}
	}
	return r, nil
}

// count, once the worker has stopped, sets r's records and per-event
// figures from the end offsets of the topics t and uses (before: those
// before the run), and prints them.
func (b *Bench) count(ctx context.Context, kc kafkaconf.Config, t packer.Topics, uses []topicUse, before map[string]int64, r *Result) error {
	in, err := endOffsets(ctx, kc, t.Toys, t.Boxes)
	if err != nil {
		return err
	}
	outN, err := endOffsets(ctx, kc, t.Packed, t.Unpacked, t.Spare, t.Late, t.Dead)
	if err != nil {
		return err
	}
	after, err := endOffsetsByTopic(ctx, kc, topicsOf(uses), false)
	if err != nil {
		return err
	}
	r.Records = kindRecords(uses, before, after, in)
	r.perEvent(in, outN)
	broker := r.BrokerCPU
	if r.BrokerSeconds != 0 {
		broker = fmt.Sprintf("%.1f µs (%.1f µs less its idle rate)", r.BrokerCPUPerEventUS, r.BrokerNetCPUPerEventUS)
	}
	b.progress("  %d events in %.1f s: %.0f events/s, %.1f µs CPU/event, broker CPU/event %s, max RSS %.0f MiB", in, r.Seconds, r.EventsPerSec, r.CPUPerEventUS, broker, r.MaxRSSMiB)
	return nil
}

// perEvent completes r from its totals, in input events and output records.
func (r *Result) perEvent(in, outN int64) {
	r.InputEvents, r.OutputRecords = in, outN
	r.EventsPerSec = float64(in) / r.Seconds
	r.OutputsPerSec = float64(outN) / r.Seconds
	r.CPUPerEventUS = r.CPUSeconds * 1e6 / float64(in)
	r.RSSBytesPerRecord = r.MaxRSSMiB * (1 << 20) / float64(in)
	if r.BrokerSeconds != 0 {
		r.BrokerCPUPerEventUS = r.BrokerCPUSeconds * 1e6 / float64(in)
		r.BrokerNetCPUPerEventUS = (r.BrokerCPUSeconds - r.BrokerIdleCPU*r.BrokerSeconds) * 1e6 / float64(in)
		r.TotalCPUPerEventUS = r.CPUPerEventUS + r.BrokerNetCPUPerEventUS
	}
}

// spansLine says how many spans the receiver got and, at 100 %, whether
// that is every span the packer made (SpansExpected is set here).
func (r *Result) spansLine() string {
	if r.Tracing != "100%" {
		return fmt.Sprintf("the receiver got %d spans", r.SpansReceived)
	}
	r.SpansExpected = r.InputEvents + r.OutputRecords
	if r.SpansReceived == r.SpansExpected {
		return fmt.Sprintf("the receiver got all %d spans (%d input and %d output records)", r.SpansReceived, r.InputEvents, r.OutputRecords)
	}
	return fmt.Sprintf("the receiver got %d spans, %d fewer than the %d input and %d output records: spans were lost", r.SpansReceived, r.SpansExpected-r.SpansReceived, r.InputEvents, r.OutputRecords)
}

// packLatencyPercentiles sets r's pack latency percentiles (packLatencies).
func packLatencyPercentiles(ctx context.Context, kc kafkaconf.Config, t packer.Topics, r *Result) error {
	lat, err := packLatencies(ctx, kc, t)
	if err != nil {
		return err
	}
	r.LatencySamples = len(lat)
	if len(lat) > 0 {
		q := func(p float64) float64 {
			i := int(p * float64(len(lat)-1))
			return float64(lat[i].Microseconds()) / 1000
		}
		r.LatencyP50MS, r.LatencyP99MS, r.LatencyP999MS = q(0.50), q(0.99), q(0.999)
	}
	return nil
}

// pipeline is variant v's run on topics named after name: clean elves (no
// late, duplicate or bad records), the backlog or the live rate's records.
// freshPipeline is pipeline on topics of a fresh name, created.
func (b *Bench) freshPipeline(ctx context.Context, kc kafkaconf.Config, v Variant) (string, *harness.Pipeline, error) {
	name := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	p, err := b.pipeline(kc, name, v)
	if err == nil && v.Live {
		err = kafkaadmin.EnsureTopics(ctx, kc, appendTimed(p.Config().Packer))
	}
	if err == nil {
		err = p.EnsureTopics(ctx)
	}
	return name, p, err
}

// drop deletes the run named name from kc's broker (dropRun) unless
// Config.KeepTopics, and says what it could not delete.
func (b *Bench) drop(kc kafkaconf.Config, name string) {
	if b.cfg.KeepTopics {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := dropRun(ctx, kc, name); err != nil {
		b.progress("  could not delete this run's topics and groups (%s-*): %v", name, err)
	}
}

// appendTimed is the live variant's packed topic, created before the
// packer's other topics: its records take the broker's append time as their
// timestamp. The packer's own timestamp would be taken when it hands a row
// to its client, before the row waits out the linger, so the pack latency
// would leave out the last write.
func appendTimed(c packer.Config) kafkaadmin.Topic {
	return kafkaadmin.Topic{
		Name: c.Topics.Packed, Partitions: c.Partitions, Replication: c.Replication,
		Configs: map[string]string{"message.timestamp.type": "LogAppendTime"},
	}
}

func (b *Bench) pipeline(kc kafkaconf.Config, name string, v Variant) (*harness.Pipeline, error) {
	c := harness.Named(name)
	c.Kafka = kc
	c.Packer.Partitions, c.Packer.Params = v.Partitions, b.cfg.Params
	count, rate := b.cfg.Records/2, 0.0
	if v.Live {
		count, rate = int(v.LiveRate*b.cfg.LiveDuration.Seconds()/2), v.LiveRate/2
	}
	c.Toys.Count, c.Toys.Elves, c.Toys.Seed, c.Toys.Rate = count, b.cfg.Elves, 1, rate
	c.Boxes.Count, c.Boxes.Elves, c.Boxes.Seed, c.Boxes.Rate = count, b.cfg.Elves, 2, rate
	c.Boxes.Start = c.Boxes.Start.Add(b.cfg.Skew)
	c.Toys.Halls, c.Boxes.Halls = v.Halls, v.Halls
	return harness.New(c, b.log)
}

// elvesProgress reports each stream's records written every five seconds.
func (b *Bench) elvesProgress() func(producers.Stats) {
	var mu sync.Mutex
	last := map[string]time.Time{}
	return func(s producers.Stats) {
		mu.Lock()
		defer mu.Unlock()
		k := string(s.Stream)
		if _, ok := last[k]; !ok {
			last[k] = time.Now()
		}
		if time.Since(last[k]) > 5*time.Second {
			last[k] = time.Now()
			b.progress("  %s: %d written", s.Stream, s.Acked)
		}
	}
}

// waitQuiet waits until lag is zero on two polls in a row (kafkaadmin.WaitQuiet),
// printing it every five seconds, or until stopped says a worker exited;
// what names the workers.
func (b *Bench) waitQuiet(ctx context.Context, lag func(context.Context) (int64, error), stopped <-chan error, what string) error {
	last := time.Now()
	lags := func(ctx context.Context) ([]int64, error) {
		l, err := lag(ctx)
		if err == nil && time.Since(last) > 5*time.Second {
			last = time.Now()
			b.progress("  %s lag %d", what, l)
		}
		return []int64{l}, err
	}
	err := kafkaadmin.WaitQuiet(ctx, 200*time.Millisecond, lags, stopped)
	if errors.Is(err, kafkaadmin.ErrStopped) {
		return fmt.Errorf("%s process ended early: %w", what, err)
	}
	return err
}

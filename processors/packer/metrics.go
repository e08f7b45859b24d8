package packer

import (
	"context"
	"maps"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/otel/kafkatrace"
)

// The packer's metrics (otel/README.md, "Metrics"). The packer spends a
// few microseconds of CPU per input event, and a synchronous counter's Add
// costs about a hundred nanoseconds: so the callbacks count with atomics of
// their own, and observable instruments read them when the meter provider
// collects (observe). Only the pack latency is recorded as it happens, once
// per packed row. With no meter provider (Config.Meter nil, or a no-op one)
// Packer.metrics is nil and the callbacks do nothing more than check it.

// MeterName is the instrumentation scope of the packer's metrics.
const MeterName = "github.com/northpole-workshop/northpole/processors/packer"

// Metric names the packer reports beside the messaging conventions'
// messaging.client.consumed.messages and messaging.client.sent.messages.
const (
	MetricRows          = "northpole.packer.rows"
	MetricDeadLetters   = "northpole.packer.dead_letters"
	MetricPackDuration  = "northpole.packer.pack.duration"
	MetricWindowsOpen   = "northpole.packer.windows.open"
	MetricDedupeEntries = "northpole.packer.dedupe.entries"
	MetricSlots         = "northpole.packer.slots"
	MetricRecordsKept   = "northpole.packer.clock.records_kept"
	MetricAlignLag      = "northpole.packer.align.lag"
	MetricConsumerLag   = "northpole.packer.consumer.lag"
)

// Attribute keys of the packer's own metrics.
const (
	// RowKindKey is an output row's kind: RowPacked, RowUnpacked, RowSpare,
	// RowLate or RowDead.
	RowKindKey = attribute.Key("northpole.row.kind")
	// SizeKey is a line's size class (S, M, L, XL).
	SizeKey = attribute.Key("northpole.size")
	// LineKey is the packing line, the input records' key (M, M/hall-7), or
	// OtherLine past MaxLineSeries lines.
	LineKey = attribute.Key("northpole.line")
	// ReasonKey is a dead letter's reason, the contract's (record.Reason),
	// on the dead-letter metrics and spans alike.
	ReasonKey = attribute.Key(record.ReasonAttribute)
)

// Row kinds, the values of RowKindKey.
const (
	RowPacked   = "packed"
	RowUnpacked = "unpacked"
	RowSpare    = "spare"
	RowLate     = "late"
	RowDead     = "dead"
)

// MaxLineSeries bounds the lines one packer process reports rows of by
// name: a producer can invent lines (any hall of a valid form), and every
// line is a series per row kind. The rows of lines first seen after that
// many are reported under northpole.line=OtherLine, with their size. Five
// kinds a line, the series of the named lines and of OtherLine stay below
// the OpenTelemetry SDK's default cardinality limit (2,000 series an
// instrument), past which it would count rows under an attribute set that
// names no kind.
const MaxLineSeries = 300

// OtherLine is the line of the rows of lines past MaxLineSeries.
const OtherLine = "other"

type rowKind int

const (
	rowPacked rowKind = iota
	rowUnpacked
	rowSpare
	rowLate
	rowDead
	rowKinds
)

var rowKindNames = [rowKinds]string{RowPacked, RowUnpacked, RowSpare, RowLate, RowDead}

// nSizes is len(record.Sizes); sizeIndex gives a string that names no size
// the index nSizes.
const nSizes = 4

func sizeIndex(size string) int { return min(record.SizeRank(size), nSizes) }

// lineSizeIndex is the size index of a line (M, M/hall-7).
func lineSizeIndex(line string) int { return sizeIndex(lineSize(line)) }

// deadReasons are the reasons a dead letter can have, in the order
// metrics.dead counts them.
var deadReasons = []record.Reason{
	record.ReasonMalformedJSON, record.ReasonBadMadeAt, record.ReasonBadSize, record.ReasonSizeNotKey,
	record.ReasonBadLine, record.ReasonNoID, record.ReasonDuplicate,
}

// packBuckets, in seconds: a pair is written milliseconds after its later
// item arrives when the packer keeps up, minutes later on a backlog.
var packBuckets = []float64{0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

// metrics are the packer's counts and its instruments.
type metrics struct {
	// consumed counts the records processed per topic and partition (a
	// partition past the configured count, which the packer refuses to
	// run with, counts in the last slot, without its id).
	consumed     [nInputs][]atomic.Int64
	consumedSets [nInputs][]metric.ObserveOption
	// sent counts acknowledged writes per topic the packer writes; the map
	// is made once and only read afterwards.
	sent     map[string]*sentCount
	failedMu sync.Mutex
	failed   map[[2]string]int64 // (topic, error.type): writes Kafka refused
	// lines are the counts of each line named; a new line replaces the
	// map with a copy (under linesMu), so that finding a line takes no lock
	// and allocates nothing.
	lines     atomic.Pointer[map[string]*lineRows]
	linesMu   sync.Mutex
	other     [nSizes + 1]*lineRows
	dead      [2][]atomic.Int64 // per stream (streamIndex) and reason (deadReasons)
	deadSets  [2][]metric.ObserveOption
	pack      metric.Float64Histogram
	packSets  [nSizes + 1][]metric.RecordOption // a slice made once: Record's variadic argument then allocates nothing
	sizeSets  [nSizes + 1]metric.ObserveOption
	keptSets  []metric.ObserveOption    // the clock table's partitions
	alignSets [2][]metric.ObserveOption // the inputs' partitions (toys, boxes)
	lagSets   [nInputs][]metric.ObserveOption
	inTopics  [nInputs]string
	processed []atomic.Int64 // next offset to process in the loop
	ends      [nInputs][]atomic.Int64
	// stores and aligner of the packer's current run (Packer.newStores,
	// runGroup), for the gauges.
	stores  atomic.Pointer[tableStores]
	aligner atomic.Pointer[aligner]

	consumedInst, sentInst, rowsInst, deadInst    metric.Int64ObservableCounter
	windowsInst, entriesInst, slotsInst, keptInst metric.Int64ObservableGauge
	consumerLagInst                               metric.Int64ObservableGauge
	alignLagInst                                  metric.Float64ObservableGauge
}

// sentCount counts the acknowledged writes to one topic per partition, as
// consumed does.
type sentCount struct {
	n    []atomic.Int64
	sets []metric.ObserveOption
}

// lineRows counts the rows of one line (or of the lines past the bound,
// of a size), by kind.
type lineRows struct {
	rows [rowKinds]atomic.Int64
	sets [rowKinds]metric.ObserveOption
}

func newLineRows(attrs ...attribute.KeyValue) *lineRows {
	lr := &lineRows{}
	for k, name := range rowKindNames {
		lr.sets[k] = metric.WithAttributeSet(attribute.NewSet(append([]attribute.KeyValue{RowKindKey.String(name)}, attrs...)...))
	}
	return lr
}

// newMetrics makes the packer's instruments from mp, or returns nil when
// mp is nil or a no-op: then nothing is counted.
func newMetrics(mp metric.MeterProvider, c Config) (*metrics, error) {
	if mp == nil {
		return nil, nil
	}
	if _, off := mp.(noop.MeterProvider); off {
		return nil, nil
	}
	m := &metrics{sent: map[string]*sentCount{}, failed: map[[2]string]int64{}}
	m.lines.Store(&map[string]*lineRows{})
	kafka := semconv.MessagingSystemKafka
	server := kafkatrace.ServerAttrs(c.Kafka.Brokers)
	// perPartition is base for each partition, with its id, and base alone
	// last (see consumed).
	perPartition := func(base ...attribute.KeyValue) []metric.ObserveOption {
		var sets []metric.ObserveOption
		for p := range c.Partitions {
			id := semconv.MessagingDestinationPartitionID(strconv.Itoa(int(p)))
			sets = append(sets, metric.WithAttributeSet(attribute.NewSet(append(base[:len(base):len(base)], id)...)))
		}
		return append(sets, metric.WithAttributeSet(attribute.NewSet(base...)))
	}
	m.inTopics = c.inputTopics()
	group := semconv.MessagingConsumerGroupName(c.clockGroup())
	for i, topic := range m.inTopics {
		m.consumedSets[i] = perPartition(append(server, kafka, semconv.MessagingOperationName(kafkatrace.OpProcess),
			semconv.MessagingDestinationName(topic), group)...)
		m.consumed[i] = make([]atomic.Int64, len(m.consumedSets[i]))
		m.lagSets[i] = perPartition(kafka, group, semconv.MessagingDestinationName(topic))
	}
	t := c.Topics
	for _, topic := range []string{t.Packed, t.Unpacked, t.Spare, t.Late, t.Dead, c.clockTable(), c.clockLoop()} {
		sets := perPartition(append(server, kafka, semconv.MessagingOperationName(kafkatrace.OpSend), semconv.MessagingDestinationName(topic))...)
		m.sent[topic] = &sentCount{n: make([]atomic.Int64, len(sets)), sets: sets}
	}
	m.keptSets = perPartition(kafka, semconv.MessagingDestinationName(c.clockTable()))
	for x, topic := range []string{c.Topics.Toys, c.Topics.Boxes} {
		m.alignSets[x] = perPartition(kafka, semconv.MessagingDestinationName(topic))
	}
	for i := range nSizes + 1 {
		var attrs []attribute.KeyValue
		if i < nSizes {
			attrs = append(attrs, SizeKey.String(record.Sizes[i]))
			m.other[i] = newLineRows(append(attrs, LineKey.String(OtherLine))...)
		} else {
			m.other[i] = newLineRows() // dead letters whose key names no line
		}
		m.packSets[i] = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attrs...))}
		m.sizeSets[i] = metric.WithAttributeSet(attribute.NewSet(attrs...))
	}
	for x, topic := range []string{t.Toys, t.Boxes} {
		m.dead[x] = make([]atomic.Int64, len(deadReasons))
		for _, r := range deadReasons {
			m.deadSets[x] = append(m.deadSets[x], metric.WithAttributeSet(attribute.NewSet(ReasonKey.String(string(r)), semconv.MessagingDestinationName(topic))))
		}
	}
	m.processed = make([]atomic.Int64, c.Partitions)
	for i := range m.ends {
		m.ends[i] = make([]atomic.Int64, c.Partitions)
	}
	return m, m.register(mp.Meter(MeterName))
}

func (m *metrics) register(mt metric.Meter) error {
	var err error
	counter := func(name, unit, desc string) metric.Int64ObservableCounter {
		if err != nil {
			return nil
		}
		var c metric.Int64ObservableCounter
		c, err = mt.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		return c
	}
	gauge := func(name, unit, desc string) metric.Int64ObservableGauge {
		if err != nil {
			return nil
		}
		var g metric.Int64ObservableGauge
		g, err = mt.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		return g
	}
	m.consumedInst = counter("messaging.client.consumed.messages", "{message}",
		"Records the packer's groups processed, per topic and group (a redelivery counts again).")
	m.sentInst = counter("messaging.client.sent.messages", "{message}",
		"Records the packer wrote, per topic, as Kafka answered: acknowledged, or refused with error.type.")
	m.rowsInst = counter(MetricRows, "{row}", "Output rows the packer wrote, by kind, size class and line (a redelivery writes again).")
	m.deadInst = counter(MetricDeadLetters, "{record}", "Dead letters the packer wrote, by reason and input topic.")
	m.windowsInst = gauge(MetricWindowsOpen, "{window}", "Windows with items not yet closed, by size class, in the partitions this process holds.")
	m.entriesInst = gauge(MetricDedupeEntries, "{entry}", "Dedupe entries (ids of the open windows), by size class, in the partitions this process holds.")
	m.slotsInst = gauge(MetricSlots, "{slot}", "Slots of the windows not yet closed, by size class, in the partitions this process holds.")
	m.keptInst = gauge(MetricRecordsKept, "{record}", "Records the clock table keeps, per partition this process cleans.")
	m.consumerLagInst = gauge(MetricConsumerLag, "{message}",
		"End offset minus the next offset to process, per group, topic and partition this process holds and has processed a record of.")
	if err != nil {
		return err
	}
	m.alignLagInst, err = mt.Float64ObservableGauge(MetricAlignLag, metric.WithUnit("s"),
		metric.WithDescription("How far one input is ahead of the other in event time (greatest made_at processed), per partition."))
	if err != nil {
		return err
	}
	m.pack, err = mt.Float64Histogram(MetricPackDuration, metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(packBuckets...),
		metric.WithDescription("From the later item's arrival (its input record's timestamp) to its packed row's hand-off to the producer, which sends it within the linger (--kafka-flush), by size class."))
	if err != nil {
		return err
	}
	_, err = mt.RegisterCallback(m.observe, m.consumedInst, m.sentInst, m.rowsInst, m.deadInst,
		m.windowsInst, m.entriesInst, m.slotsInst, m.keptInst, m.consumerLagInst, m.alignLagInst)
	return err
}

// consume counts a record of topic in (inToys...) processed at offset of
// partition.
func (m *metrics) consume(in int, partition int32, offset int64) {
	m.consumed[in][slot(partition, len(m.consumed[in]))].Add(1)
	if in == inLoop && int(partition) < len(m.processed) {
		m.processed[partition].Store(offset + 1)
	}
}

// listed are the topics whose end offsets the aligner lists, the inputs:
// with metrics on, every topic the packer consumes, so that the same
// request gives the consumer lag.
func (m *metrics) listed(inputs []string) []string {
	if m == nil {
		return inputs
	}
	return m.inTopics[:]
}

// endOffsets keeps the end offsets the aligner listed (nothing when m is
// nil).
func (m *metrics) endOffsets(ends kadm.ListedOffsets) {
	if m == nil {
		return
	}
	ends.Each(func(o kadm.ListedOffset) {
		for i, topic := range m.inTopics {
			if o.Topic == topic && o.Err == nil && o.Partition >= 0 && int(o.Partition) < len(m.ends[i]) {
				m.ends[i][o.Partition].Store(o.Offset)
			}
		}
	})
}

// answered counts Kafka's answer to a write to topic's partition.
func (m *metrics) answered(topic string, partition int32, err error) {
	if err == nil {
		if c, ok := m.sent[topic]; ok {
			c.n[slot(partition, len(c.n))].Add(1)
		}
		return
	}
	m.failedMu.Lock()
	m.failed[[2]string{topic, kafkatrace.ErrorType(err)}]++
	m.failedMu.Unlock()
}

// row counts a row of kind about line.
func (m *metrics) row(kind rowKind, line string) {
	m.lineRows(line).rows[kind].Add(1)
}

// deadLetter counts a dead letter of stream x for reason, and its row; key
// is the record's key, the line when it names one.
func (m *metrics) deadLetter(x record.Stream, reason record.Reason, key string) {
	for i, r := range deadReasons {
		if r == reason {
			m.dead[streamIndex(x)][i].Add(1)
			break
		}
	}
	m.row(rowDead, key)
}

// packed records the pack duration of a packed row of line whose later
// item's input record had timestamp arrivedUS (0: unknown).
func (m *metrics) packed(line string, arrivedUS int64) {
	if arrivedUS <= 0 {
		return
	}
	d := float64(time.Now().UnixMicro()-arrivedUS) / 1e6
	m.pack.Record(context.Background(), max(d, 0), m.packSets[lineSizeIndex(line)]...)
}

// lineRows are the counts of line, made at its first row.
func (m *metrics) lineRows(line string) *lineRows {
	if lr, ok := (*m.lines.Load())[line]; ok {
		return lr
	}
	if !record.ValidLine(line) {
		// A dead letter whose key names no line: neither size nor line.
		return m.other[nSizes]
	}
	m.linesMu.Lock()
	defer m.linesMu.Unlock()
	lines := *m.lines.Load()
	if lr, ok := lines[line]; ok {
		return lr
	}
	size := lineSizeIndex(line)
	if len(lines) >= MaxLineSeries {
		return m.other[size]
	}
	lr := newLineRows(SizeKey.String(record.Sizes[size]), LineKey.String(line))
	next := make(map[string]*lineRows, len(lines)+1)
	maps.Copy(next, lines)
	next[line] = lr
	m.lines.Store(&next)
	return lr
}

// slot is partition's place among n counts, the last one for a partition
// past them (or none, -1).
func slot(partition int32, n int) int {
	if partition < 0 || int(partition) >= n-1 {
		return n - 1
	}
	return int(partition)
}

// observe reports every count and gauge, at collection.
func (m *metrics) observe(_ context.Context, o metric.Observer) error {
	for i := range m.consumed {
		for p := range m.consumed[i] {
			if n := m.consumed[i][p].Load(); n > 0 {
				o.ObserveInt64(m.consumedInst, n, m.consumedSets[i][p])
			}
		}
	}
	for _, c := range m.sent {
		for p := range c.n {
			if n := c.n[p].Load(); n > 0 {
				o.ObserveInt64(m.sentInst, n, c.sets[p])
			}
		}
	}
	m.failedMu.Lock()
	for k, n := range m.failed {
		o.ObserveInt64(m.sentInst, n, metric.WithAttributes(semconv.MessagingSystemKafka,
			semconv.MessagingOperationName(kafkatrace.OpSend), semconv.MessagingDestinationName(k[0]), semconv.ErrorTypeKey.String(k[1])))
	}
	m.failedMu.Unlock()
	rows := func(lr *lineRows) {
		for k := range lr.rows {
			if n := lr.rows[k].Load(); n > 0 {
				o.ObserveInt64(m.rowsInst, n, lr.sets[k])
			}
		}
	}
	for _, lr := range *m.lines.Load() {
		rows(lr)
	}
	for _, lr := range m.other {
		rows(lr)
	}
	for x := range m.dead {
		for i := range m.dead[x] {
			if n := m.dead[x][i].Load(); n > 0 {
				o.ObserveInt64(m.deadInst, n, m.deadSets[x][i])
			}
		}
	}
	m.observeState(o)
	return nil
}

// observeState reports what the partitions this process holds keep.
func (m *metrics) observeState(o metric.Observer) {
	stores := m.stores.Load()
	if stores == nil {
		return
	}
	clock := stores.state()
	for i := range nSizes {
		o.ObserveInt64(m.windowsInst, clock.windows[i], m.sizeSets[i])
		o.ObserveInt64(m.entriesInst, clock.entries[i], m.sizeSets[i])
		o.ObserveInt64(m.slotsInst, clock.slots[i], m.sizeSets[i])
	}
	parts := len(m.keptSets) - 1
	for _, p := range clock.parts {
		if k, ok := clock.kept[p]; ok && int(p) < parts {
			o.ObserveInt64(m.keptInst, k, m.keptSets[p])
		}
	}
	a := m.aligner.Load()
	for _, p := range clock.parts {
		if a == nil || int(p) >= parts {
			continue
		}
		// The lag is the input that is behind's; the one ahead, 0.
		toys, boxes := a.made[0][p].Load(), a.made[1][p].Load()
		if toys != math.MinInt64 && boxes != math.MinInt64 {
			behind := float64(max(boxes-toys, 0)) / 1e6
			o.ObserveFloat64(m.alignLagInst, behind, m.alignSets[0][p])
			o.ObserveFloat64(m.alignLagInst, float64(max(toys-boxes, 0))/1e6, m.alignSets[1][p])
		}
		m.observeLag(o, inToys, p, a.next[0][p].Load())
		m.observeLag(o, inBoxes, p, a.next[1][p].Load())
		m.observeLag(o, inLoop, p, m.processed[p].Load())
	}
}

// observeLag reports the lag of topic in's partition p, whose next offset
// to process is next: only once a record of it was processed (next > 0)
// and its end offset known, as before that the packer knows neither where
// its group starts nor where the partition ends.
func (m *metrics) observeLag(o metric.Observer, in int, p int32, next int64) {
	end := m.ends[in][p].Load()
	if next <= 0 || end <= 0 {
		return
	}
	o.ObserveInt64(m.consumerLagInst, max(end-next, 0), m.lagSets[in][p])
}

// partState counts what one partition of a table holds, by size: kept
// up to date by the goroutine that processes the partition, read at
// collection.
type partState struct {
	windows, entries, slots [nSizes + 1]atomic.Int64
}

// tableState sums what the partitions of a table held now keep.
type tableState struct {
	parts                   []int32
	windows, entries, slots [nSizes]int64
	kept                    map[int32]int64 // records the clock table keeps, per partition with a horizon
}

func (s *tableStores) state() tableState {
	st := tableState{kept: map[int32]int64{}}
	for p, t := range s.parts() {
		st.parts = append(st.parts, p)
		if t.state != nil {
			for i := range nSizes {
				st.windows[i] += t.state.windows[i].Load()
				st.entries[i] += t.state.entries[i].Load()
				st.slots[i] += t.state.slots[i].Load()
			}
		}
		if t.horizon != nil {
			st.kept[p] = t.horizon.kept()
		}
	}
	return st
}

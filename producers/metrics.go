package producers

import (
	"bytes"
	"context"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/semconv/v1.43.0/messagingconv"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/otel/kafkatrace"
)

// MeterName is the instrumentation scope of the elves' metrics.
const MeterName = "github.com/northpole-workshop/northpole/producers"

// Attribute keys of the elves' own metrics.
const (
	// KindKey is a record's Message.Kind: toy, box, heartbeat, dup, late or
	// a dead letter's kind (bad:...), a few dozen values at most.
	KindKey = attribute.Key("northpole.record.kind")
	// SizeKey is the size class a record's key names (S, M, L, XL); absent
	// when the key names none (some dead letters).
	SizeKey = attribute.Key("northpole.size")
)

// Metric names the elves report, beside the messaging conventions'
// messaging.client.sent.messages.
const MetricRecords = "northpole.elves.records"

// metrics are the elves' instruments: no-ops without a meter provider. Every
// attribute set a record can have is made once, so that counting a record
// allocates nothing.
type metrics struct {
	sent    metric.Int64Counter // messaging.client.sent.messages, every answer
	records metric.Int64Counter // northpole.elves.records, acknowledged only
	topic   string
	base    []attribute.KeyValue
	ok      *kafkatrace.PartitionSets
	byKind  map[kindSize]metric.AddOption
}

type kindSize struct{ kind, size string }

func newMetrics(mp metric.MeterProvider, brokers []string, topic string, kinds []string) (*metrics, error) {
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	m := mp.Meter(MeterName)
	sent, err := messagingconv.NewClientSentMessages(m)
	if err != nil {
		return nil, err
	}
	records, err := m.Int64Counter(MetricRecords, metric.WithUnit("{record}"),
		metric.WithDescription("Records the elves wrote that Kafka acknowledged, by kind and size class."))
	if err != nil {
		return nil, err
	}
	base := append(kafkatrace.ServerAttrs(brokers), semconv.MessagingSystemKafka, semconv.MessagingOperationName(kafkatrace.OpSend),
		semconv.MessagingDestinationName(topic))
	out := &metrics{sent: sent.Inst(), records: records, topic: topic, base: base,
		ok: kafkatrace.NewPartitionSets(base...), byKind: map[kindSize]metric.AddOption{}}
	for _, k := range kinds {
		for _, s := range append([]string{""}, record.Sizes...) {
			out.byKind[kindSize{k, s}] = metric.WithAttributeSet(recordAttrs(topic, k, s))
		}
	}
	return out, nil
}

func recordAttrs(topic, kind, size string) attribute.Set {
	attrs := []attribute.KeyValue{semconv.MessagingDestinationName(topic), KindKey.String(kind)}
	if size != "" {
		attrs = append(attrs, SizeKey.String(size))
	}
	return attribute.NewSet(attrs...)
}

// answered counts Kafka's answer to one record of kind.
func (m *metrics) answered(kind string, rec *kgo.Record, err error) {
	ctx := context.Background()
	if err != nil {
		m.sent.Add(ctx, 1, metric.WithAttributes(append(m.base[:len(m.base):len(m.base)],
			semconv.ErrorTypeKey.String(kafkatrace.ErrorType(err)))...))
		return
	}
	m.sent.Add(ctx, 1, m.ok.Of(rec.Partition))
	size := keySize(rec.Key)
	opt, ok := m.byKind[kindSize{kind, size}]
	if !ok {
		opt = metric.WithAttributeSet(recordAttrs(m.topic, kind, size))
	}
	m.records.Add(ctx, 1, opt)
}

// keySize is the size class a key names, by itself (S) or as a line's
// (S/hall-2); "" when it names none.
func keySize(key []byte) string {
	s, _, _ := bytes.Cut(key, []byte("/"))
	for _, size := range record.Sizes {
		if string(s) == size {
			return size
		}
	}
	return ""
}

// metricKinds are every kind the elves of cfg make.
func metricKinds(cfg Config) []string {
	return append([]string{KindToy, KindBox, KindHeartbeat, KindDup, KindLate}, badKinds(cfg)...)
}

package kafkatrace

import (
	"strconv"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// PartitionSets are a messaging metric's attribute sets per partition: base
// (system, operation, topic, server, ...) and messaging.destination.
// partition.id, which the conventions recommend. Each is made the first
// time its partition counts, so counting allocates nothing after that.
type PartitionSets struct {
	base []attribute.KeyValue
	sets sync.Map // int32 -> metric.MeasurementOption
}

// NewPartitionSets are the sets of base per partition.
func NewPartitionSets(base ...attribute.KeyValue) *PartitionSets {
	return &PartitionSets{base: base}
}

// Of is the option of partition p.
func (s *PartitionSets) Of(p int32) metric.MeasurementOption {
	if o, ok := s.sets.Load(p); ok {
		return o.(metric.MeasurementOption)
	}
	attrs := append(append([]attribute.KeyValue{}, s.base...), semconv.MessagingDestinationPartitionID(strconv.Itoa(int(p))))
	o, _ := s.sets.LoadOrStore(p, metric.WithAttributeSet(attribute.NewSet(attrs...)))
	return o.(metric.MeasurementOption)
}

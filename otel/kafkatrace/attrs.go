package kafkatrace

import (
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Attribute names of older messaging conventions that SigNoz's Kafka pages
// still query (its messaging-queues SQL reads messaging.kafka.consumer.group
// and messaging.client_id). They are written beside the current names.
const (
	LegacyConsumerGroupKey = attribute.Key("messaging.kafka.consumer.group")
	LegacyClientIDKey      = attribute.Key("messaging.client_id")
)

// Operation names of the messaging conventions; span names are
// "<operation> <topic>", e.g. "send toys", "process packed".
const (
	OpSend    = "send"
	OpProcess = "process"
)

// topicSpans is what every span of one operation on one topic shares: its
// name ("send toys") and the attributes no record changes.
type topicSpans struct {
	topic, name string
	attrs       []attribute.KeyValue
}

// spanCache makes the topicSpans of each topic once, so that a span costs
// no string and no attribute built again. A client has a few topics: they
// are looked up in a list that is replaced, never changed, when one is
// added (a map behind a lock, or sync.Map, hashed the topic on every
// span).
type spanCache struct {
	all  atomic.Pointer[[]*topicSpans]
	mu   sync.Mutex // serializes additions
	op   string
	make func(topic string) []attribute.KeyValue
}

func newSpanCache(op string, attrs func(topic string) []attribute.KeyValue) *spanCache {
	c := &spanCache{op: op, make: attrs}
	c.all.Store(new([]*topicSpans))
	return c
}

func (c *spanCache) of(topic string) *topicSpans {
	for _, t := range *c.all.Load() {
		if t.topic == topic {
			return t
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	all := *c.all.Load()
	for _, t := range all {
		if t.topic == topic {
			return t
		}
	}
	t := &topicSpans{topic: topic, name: c.op + " " + topic, attrs: c.make(topic)}
	grown := append(slices.Clip(all), t)
	c.all.Store(&grown)
	return t
}

// producerAttrs are the attributes of every "send <topic>" span of a client.
func producerAttrs(topic, clientID string, server []attribute.KeyValue) []attribute.KeyValue {
	a := []attribute.KeyValue{
		semconv.MessagingSystemKafka,
		semconv.MessagingOperationName(OpSend),
		semconv.MessagingOperationTypeSend,
		semconv.MessagingDestinationName(topic),
	}
	a = append(a, server...)
	if clientID != "" {
		a = append(a, semconv.MessagingClientID(clientID), LegacyClientIDKey.String(clientID))
	}
	return slices.Clip(a)
}

// consumerAttrs are the attributes of every "process <topic>" span of a
// group's client; consumerRecordAttrs appends those of one record.
func consumerAttrs(topic, group, clientID string, server []attribute.KeyValue) []attribute.KeyValue {
	a := []attribute.KeyValue{
		semconv.MessagingSystemKafka,
		semconv.MessagingOperationName(OpProcess),
		semconv.MessagingOperationTypeProcess,
		semconv.MessagingDestinationName(topic),
	}
	a = append(a, server...)
	if group != "" {
		a = append(a, semconv.MessagingConsumerGroupName(group), LegacyConsumerGroupKey.String(group))
	}
	if clientID != "" {
		a = append(a, semconv.MessagingClientID(clientID), LegacyClientIDKey.String(clientID))
	}
	return slices.Clip(a)
}

func consumerRecordAttrs(a []attribute.KeyValue, partition int32, offset int64, key string, bodySize int, tombstone bool) []attribute.KeyValue {
	a = append(a,
		semconv.MessagingDestinationPartitionID(partitionID(partition)),
		semconv.MessagingKafkaOffset(int(offset)),
	)
	if key != "" {
		a = append(a, semconv.MessagingKafkaMessageKey(key))
	}
	if bodySize >= 0 {
		a = append(a, semconv.MessagingMessageBodySize(bodySize))
	}
	if tombstone {
		a = append(a, semconv.MessagingKafkaMessageTombstone(true))
	}
	return a
}

// partitionID is messaging.destination.partition.id's value: the number,
// which for the first hundred partitions strconv returns without
// allocating.
func partitionID(p int32) string { return strconv.Itoa(int(p)) }

// attrBufs lends the buffers in which a span's attributes are put together:
// the SDK copies them, so one buffer serves span after span.
var attrBufs = sync.Pool{New: func() any { return new([]attribute.KeyValue) }}

func getAttrs() *[]attribute.KeyValue { return attrBufs.Get().(*[]attribute.KeyValue) }

// putAttrs returns buf, which a grew, to the pool, its values cleared so
// that the pool holds no strings.
func putAttrs(buf *[]attribute.KeyValue, a []attribute.KeyValue) {
	clear(a)
	*buf = a[:0]
	attrBufs.Put(buf)
}

// ServerAttrs are server.address and server.port for a client of brokers,
// its bootstrap list (host:port each): the first of them. The conventions
// ask for the broker's address at span creation, but the broker that serves
// a record is its partition's leader, which only the client's routing knows
// (goka hides it, kgo's answer has no broker): the first bootstrap
// address is what is known then, the same for every span of the client,
// and it names the cluster. An address without a port gives no server.port.
func ServerAttrs(brokers []string) []attribute.KeyValue {
	if len(brokers) == 0 || brokers[0] == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(brokers[0])
	if err != nil {
		return []attribute.KeyValue{semconv.ServerAddress(brokers[0])}
	}
	a := []attribute.KeyValue{semconv.ServerAddress(host)}
	if p, err := strconv.Atoi(port); err == nil {
		a = append(a, semconv.ServerPort(p))
	}
	return a
}

// Enabled reports whether tp would record anything: nil and the no-op
// provider do not, and instrumentation skips all its work for them.
func Enabled(tp trace.TracerProvider) bool {
	if tp == nil {
		return false
	}
	switch tp.(type) {
	case noop.TracerProvider, *noop.TracerProvider:
		return false
	}
	return true
}

// ScopeName is the instrumentation scope of every span this package makes.
const ScopeName = "github.com/northpole-workshop/northpole/otel/kafkatrace"

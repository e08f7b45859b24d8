package kafkatrace

import (
	"net"
	"strconv"

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

// producerAttrs are the attributes of a "send <topic>" span known before the
// broker answers.
func producerAttrs(topic, clientID, key string, bodySize int, server []attribute.KeyValue) []attribute.KeyValue {
	a := make([]attribute.KeyValue, 0, 12)
	a = append(a,
		semconv.MessagingSystemKafka,
		semconv.MessagingOperationName(OpSend),
		semconv.MessagingOperationTypeSend,
		semconv.MessagingDestinationName(topic),
	)
	a = append(a, server...)
	if clientID != "" {
		a = append(a, semconv.MessagingClientID(clientID), LegacyClientIDKey.String(clientID))
	}
	if key != "" {
		a = append(a, semconv.MessagingKafkaMessageKey(key))
	}
	if bodySize >= 0 {
		a = append(a, semconv.MessagingMessageBodySize(bodySize))
	}
	return a
}

// consumerAttrs are the attributes of a "process <topic>" span.
func consumerAttrs(topic string, partition int32, offset int64, group, clientID, key string, bodySize int, tombstone bool, server []attribute.KeyValue) []attribute.KeyValue {
	a := make([]attribute.KeyValue, 0, 16)
	a = append(a,
		semconv.MessagingSystemKafka,
		semconv.MessagingOperationName(OpProcess),
		semconv.MessagingOperationTypeProcess,
		semconv.MessagingDestinationName(topic),
		semconv.MessagingDestinationPartitionID(strconv.Itoa(int(partition))),
		semconv.MessagingKafkaOffset(int(offset)),
	)
	a = append(a, server...)
	if group != "" {
		a = append(a, semconv.MessagingConsumerGroupName(group), LegacyConsumerGroupKey.String(group))
	}
	if clientID != "" {
		a = append(a, semconv.MessagingClientID(clientID), LegacyClientIDKey.String(clientID))
	}
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

// serverAttrs are server.address and server.port for a client of brokers,
// its bootstrap list (host:port each): the first of them. The conventions
// ask for the broker's address at span creation, but the broker that serves
// a record is its partition's leader, which only the client's routing knows
// (goka hides it, kgo's answer has no broker): the first bootstrap
// address is what is known then, the same for every span of the client,
// and it names the cluster. An address without a port gives no server.port.
func serverAttrs(brokers []string) []attribute.KeyValue {
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

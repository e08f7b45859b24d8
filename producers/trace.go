package producers

import (
	"github.com/IBM/sarama"
	"go.opentelemetry.io/otel/trace"

	"github.com/northpole-workshop/northpole/otel/kafkatrace"
)

// sendMeta rides in ProducerMessage.Metadata from the elf that sends a record
// to the goroutine that reads Kafka's answer: the kind, for error reports,
// and the record's "send" span (nil when tracing is off), which ends with
// the answer.
type sendMeta struct {
	kind string
	span trace.Span
}

func metaOf(m *sarama.ProducerMessage) sendMeta {
	if m == nil {
		return sendMeta{}
	}
	meta, _ := m.Metadata.(sendMeta)
	return meta
}

// endSend ends the send span of m, if it has one, with Kafka's answer.
func endSend(m *sarama.ProducerMessage, err error) {
	if meta := metaOf(m); meta.span != nil {
		kafkatrace.End(meta.span, m, err)
	}
}

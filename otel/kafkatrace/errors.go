package kafkatrace

import (
	"context"
	"errors"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// errorType is the error.type of a failed Kafka operation. A Kafka error
// (sarama's KError, franz-go's *kerr.Error, wrapped or not) is named by its
// code as the Kafka protocol names it, UNKNOWN_TOPIC_OR_PARTITION, which is
// what the messaging conventions show (KAFKA_STORAGE_ERROR) and the same
// whichever client failed. A few client-side errors are named below; anything
// else falls back to the conventions' Go rule: the type name of the innermost
// error under fmt's wrappers ("*net.OpError").
func errorType(err error) string {
	var se sarama.KError
	if errors.As(err, &se) {
		if name, ok := kafkaCodeName(int16(se)); ok {
			return name
		}
	}
	var fe *kerr.Error
	if errors.As(err, &fe) && fe != nil && fe.Message != "" {
		return fe.Message
	}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return s.name
		}
	}
	return semconv.ErrorType(err).Value.AsString()
}

// sentinels are the errors.New values a send can end with that are not
// Kafka errors. Their type name, "*errors.errorString", would say nothing,
// so they are named by their variable: an elf abandons the sends in flight
// with context.Canceled when it is stopped, and sarama's producer gives up
// with these when it has no broker left or is closing.
var sentinels = []struct {
	err  error
	name string
}{
	{context.Canceled, "context.Canceled"},
	{sarama.ErrOutOfBrokers, "github.com/IBM/sarama.ErrOutOfBrokers"},
	{sarama.ErrNotConnected, "github.com/IBM/sarama.ErrNotConnected"},
	{sarama.ErrClosedClient, "github.com/IBM/sarama.ErrClosedClient"},
	{sarama.ErrShuttingDown, "github.com/IBM/sarama.ErrShuttingDown"},
	{sarama.ErrProducerRetryBufferOverflow, "github.com/IBM/sarama.ErrProducerRetryBufferOverflow"},
}

// kafkaCodeName is the protocol's name of a Kafka error code. franz-go
// answers UNKNOWN_SERVER_ERROR for a code it does not know, which would
// misname a newer code: only -1 is that error.
func kafkaCodeName(code int16) (string, bool) {
	e := kerr.TypedErrorForCode(code)
	if e == nil || (e == kerr.UnknownServerError && code != kerr.UnknownServerError.Code) {
		return "", false
	}
	return e.Message, true
}

package kafkatrace

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// ErrorType is the error.type of a failed Kafka operation (spans and
// metrics name a failure alike). A Kafka error
// (franz-go's *kerr.Error, wrapped or not) is named by its code as the Kafka
// protocol names it, UNKNOWN_TOPIC_OR_PARTITION, which is what the messaging
// conventions show (KAFKA_STORAGE_ERROR). A few client-side errors are named
// below; anything else falls back to the conventions' Go rule: the type name
// of the innermost error under fmt's wrappers ("*net.OpError").
func ErrorType(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) && ke != nil && ke.Message != "" {
		return ke.Message
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
// with context.Canceled when it is stopped, and kgo fails a record with
// these when it could not deliver it in time or within its retries, or when
// the client was closed with the record still buffered.
var sentinels = []struct {
	err  error
	name string
}{
	{context.Canceled, "context.Canceled"},
	{kgo.ErrRecordTimeout, "github.com/twmb/franz-go/pkg/kgo.ErrRecordTimeout"},
	{kgo.ErrRecordRetries, "github.com/twmb/franz-go/pkg/kgo.ErrRecordRetries"},
	{kgo.ErrClientClosed, "github.com/twmb/franz-go/pkg/kgo.ErrClientClosed"},
}

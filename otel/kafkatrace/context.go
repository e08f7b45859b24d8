package kafkatrace

import "go.opentelemetry.io/otel/propagation"

func propagator() propagation.TextMapPropagator {
	return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
}

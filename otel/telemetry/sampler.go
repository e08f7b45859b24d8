package telemetry

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// samplerChoice is the sampler OTEL_TRACES_SAMPLER and _ARG name, read here
// rather than by the SDK so that the providers can say how they sample
// (provider.TraceSampling): kafkatrace then makes no span at all for a
// record nobody samples.
type samplerChoice struct {
	sampler     sdktrace.Sampler
	ratio       float64 // of trace ids sampled (TraceIDRatioBased's rule)
	parentBased bool
}

// samplerFromEnv reads the sampler as the SDK does (sdk/trace's
// samplerFromEnv, v1.47.0): the same names, samplers and defaults, and the
// same fallbacks, each reported to the OpenTelemetry error handler: a ratio
// that does not parse or is outside [0, 1] is 1; an unknown sampler is the
// default, parentbased_always_on.
func samplerFromEnv(getenv func(string) string) samplerChoice {
	name := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER")))
	arg := strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER_ARG"))
	ratio := func() float64 {
		if arg == "" {
			return 1
		}
		v, err := strconv.ParseFloat(arg, 64)
		switch {
		case err != nil:
			otel.Handle(fmt.Errorf("telemetry: OTEL_TRACES_SAMPLER_ARG: parsing sampler argument: %w", err))
		case v < 0:
			otel.Handle(errors.New("telemetry: OTEL_TRACES_SAMPLER_ARG: invalid trace ID ratio: less than 0.0"))
		case v > 1:
			otel.Handle(errors.New("telemetry: OTEL_TRACES_SAMPLER_ARG: invalid trace ID ratio: greater than 1.0"))
		default:
			return v
		}
		return 1
	}
	switch name {
	case "always_on":
		return samplerChoice{sampler: sdktrace.AlwaysSample(), ratio: 1}
	case "always_off":
		return samplerChoice{sampler: sdktrace.NeverSample()}
	case "traceidratio":
		r := ratio()
		return samplerChoice{sampler: sdktrace.TraceIDRatioBased(r), ratio: r}
	case "parentbased_always_off":
		return samplerChoice{sampler: sdktrace.ParentBased(sdktrace.NeverSample()), parentBased: true}
	case "parentbased_traceidratio":
		r := ratio()
		return samplerChoice{sampler: sdktrace.ParentBased(sdktrace.TraceIDRatioBased(r)), ratio: r, parentBased: true}
	case "", "parentbased_always_on":
	default:
		otel.Handle(fmt.Errorf("telemetry: OTEL_TRACES_SAMPLER: unsupported sampler: %s", name))
	}
	return samplerChoice{sampler: sdktrace.ParentBased(sdktrace.AlwaysSample()), ratio: 1, parentBased: true}
}

// provider is the tracer provider of one service with a sampler from the
// environment, which it describes (kafkatrace.SamplingPolicy).
type provider struct {
	*sdktrace.TracerProvider
	sampling samplerChoice
}

// TraceSampling implements kafkatrace.SamplingPolicy.
func (p *provider) TraceSampling() (ratio float64, parentBased bool) {
	return p.sampling.ratio, p.sampling.parentBased
}

package main

import (
	"context"

	"github.com/northpole-workshop/northpole/otel/telemetry"
)

// serviceCompare is the default service.name of compare's SQL client spans.
const serviceCompare = "compare"

// startTelemetry builds the OpenTelemetry providers of a command from the
// standard OTEL_* environment (off when nothing is configured); a setting
// that does not parse is a usage error. stop flushes them within
// telemetry.CloseTimeout (Telemetry.Close); call it before the command
// returns.
func startTelemetry(ctx context.Context, opts telemetry.Options) (tel *telemetry.Telemetry, stop func(), err error) {
	tel, err = telemetry.New(ctx, opts)
	if err != nil {
		return nil, nil, usageErr("%w", err)
	}
	return tel, tel.Close, nil
}

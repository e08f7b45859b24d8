package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/northpole-workshop/northpole/otel/telemetry"
)

// flushTimeout bounds how long a command waits at exit for its spans to
// reach the collector.
const flushTimeout = 10 * time.Second

// serviceCompare is the default service.name of compare's SQL client spans.
const serviceCompare = "compare"

// startTelemetry builds the OpenTelemetry providers of a command from the
// standard OTEL_* environment (off when nothing is configured). stop flushes
// them; call it before the command returns.
func startTelemetry(ctx context.Context, opts telemetry.Options) (tel *telemetry.Telemetry, stop func(), err error) {
	tel, err = telemetry.New(ctx, opts)
	if err != nil {
		return nil, nil, usageErr("%w", err)
	}
	return tel, func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
		defer cancel()
		if err := tel.Shutdown(sctx); err != nil {
			slog.Warn("telemetry: spans may be lost", "err", err)
		}
	}, nil
}

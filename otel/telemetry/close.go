package telemetry

import (
	"context"
	"time"
)

// CloseTimeout bounds how long Close waits for the spans and metrics to
// reach their exporters' backends.
const CloseTimeout = 10 * time.Second

// Close is Shutdown for a process about to end: it waits at most
// CloseTimeout, and logs a failure (spans that may be lost) to Options.Log
// rather than returning it. A nil Telemetry closes at once.
func (t *Telemetry) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), CloseTimeout)
	defer cancel()
	if err := t.Shutdown(ctx); err != nil {
		t.log.Warn("telemetry: spans or metrics may be lost", "err", err)
	}
}

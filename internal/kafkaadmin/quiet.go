package kafkaadmin

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrStopped says that the consumer WaitQuiet was waiting for ended before it
// had consumed everything.
var ErrStopped = errors.New("stopped before finishing")

// WaitQuiet returns once the consumer groups that lags measures have consumed
// everything: lags, polled every interval, sum to zero on two polls in a row
// (see GroupLag). An error from lags is retried (a group coordinator that is
// still loading offsets after a restart says so for a while) until ctx ends;
// the error WaitQuiet then returns names the last one, or else the last lags
// that were not zero. When stopped delivers, the consumer ended early:
// WaitQuiet returns ErrStopped, wrapping what the consumer ended with. A nil
// stopped is never read.
func WaitQuiet(ctx context.Context, every time.Duration, lags func(context.Context) ([]int64, error), stopped <-chan error) error {
	zero := 0
	var lastErr error
	var lastLags []int64
	for zero < 2 {
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return fmt.Errorf("%w (last error: %w)", ctx.Err(), lastErr)
			}
			return fmt.Errorf("%w (records not yet committed: %v)", ctx.Err(), lastLags)
		case err := <-stopped:
			if err == nil {
				return ErrStopped
			}
			return fmt.Errorf("%w: %w", ErrStopped, err)
		case <-time.After(every):
		}
		ls, err := lags(ctx)
		var sum int64
		for _, l := range ls {
			sum += l
		}
		switch {
		case err != nil:
			lastErr, zero = err, 0
		case sum == 0:
			zero++
		default:
			lastErr, lastLags, zero = nil, ls, 0
		}
	}
	return nil
}

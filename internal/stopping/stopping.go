// Package stopping is how every northpole command ends when it is asked to
// stop (SIGTERM, Ctrl-C): within Grace, whatever the broker does. A service
// whose broker does not answer cannot commit its input or deliver what it
// buffered; it gives up after Grace and says what it left undone with an
// error that wraps ErrIncomplete, which the command turns into its own exit
// status. A clean stop takes well under a second with the broker up, but a
// stop in the middle of a rebalance waits on the consumer group's protocol
// (3.2 s seen under load with -race, more in a CI run): Grace leaves room
// for that, within Kubernetes' default 30 s before SIGKILL.
package stopping

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Grace is how long a service may take to stop once asked.
const Grace = 10 * time.Second

// ErrIncomplete says that a stop was asked for and the service did not
// finish stopping cleanly within Grace.
var ErrIncomplete = errors.New("did not finish stopping")

// Wait runs run(ctx) and returns what it returns; once ctx has ended it
// waits at most grace more, then returns an error wrapping ErrIncomplete and
// leaves run behind: the process is about to exit, and whatever run still
// holds (a write the broker never answered) is abandoned.
func Wait(ctx context.Context, grace time.Duration, run func(context.Context) error) error {
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return fmt.Errorf("%w within %v of the stop (the broker did not answer)", ErrIncomplete, grace)
	}
}

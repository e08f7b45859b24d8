package gokatest

import (
	"context"
	"testing"

	"github.com/lovoo/goka"
)

// Run runs proc (built on goka's tester) until the test ends, and fails the
// test if it ended with an error.
func Run(t testing.TB, proc *goka.Processor) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- proc.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("goka processor %s: %v", proc.Graph().Group(), err)
		}
	})
}

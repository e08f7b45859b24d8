package gokakit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/hashicorp/go-multierror"
)

// TestBrokerTrouble: the errors goka stops a processor with, as goka builds
// them (%v loses the type, multierror keeps it), are told apart from the
// packer's own faults.
func TestBrokerTrouble(t *testing.T) {
	// goka formats these two with %v: only the text of the cause is left.
	setup := func(cause error) error {
		inner := fmt.Errorf("Error getting oldest offset for topic/partition t-table/0: %s", cause.Error())
		return fmt.Errorf("goka processor g-clock: %w", multierror.Append(nil,
			fmt.Errorf("error consuming from group consumer: %w",
				fmt.Errorf("Setup failed. Cannot start processor for partition 0: %s", inner.Error()))))
	}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"leader moved, type lost", setup(sarama.ErrNotLeaderForPartition), true},
		{"coordinator moved, wrapped", fmt.Errorf("closing: %w", sarama.ErrNotCoordinatorForConsumer), true},
		{"coordinator moved, type lost", setup(sarama.ErrNotCoordinatorForConsumer), true},
		{"broker restarting", refused, true},
		{"broker restarting, type lost", setup(refused), true},
		{"out of brokers, type lost", setup(sarama.ErrOutOfBrokers), true},
		{"record too large", setup(sarama.ErrMessageSizeTooLarge), false},
		{"invalid config", sarama.ErrInvalidConfig, false},
		{"corrupt clock value", fmt.Errorf("clock of size %q: %w", "S", errors.New("binary layout version 5, want 6")), false},
		{"topic settings differ", errors.New(`topic "t-loop": retention.ms is 1000, want 604800000`), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := BrokerTrouble(tc.err); got != tc.want {
				t.Errorf("BrokerTrouble(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// TestSupervise: a broker error starts the run again, anything else ends
// Supervise, and so do a stop and a window with no run.
func TestSupervise(t *testing.T) {
	trouble := fmt.Errorf("setup: %w", sarama.ErrNotLeaderForPartition)
	fault := errors.New("clock of size S: corrupt")
	type step struct {
		ran bool
		err error
	}
	for _, tc := range []struct {
		name   string
		window time.Duration
		steps  []step
		calls  int
		want   error // in the chain of Supervise's error; nil: no error
	}{
		{"clean end", time.Hour, []step{{true, nil}}, 1, nil},
		{"fault ends it", time.Hour, []step{{true, fault}, {true, nil}}, 1, fault},
		{"trouble, then runs", time.Hour, []step{{false, trouble}, {true, nil}}, 2, nil},
		{"trouble beyond the window", 0, []step{{false, trouble}, {true, nil}}, 1, trouble},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			err := Supervise(context.Background(), nil, tc.window, func(context.Context) (bool, error) {
				s := tc.steps[calls]
				calls++
				return s.ran, s.err
			})
			if calls != tc.calls {
				t.Errorf("run called %d times, want %d", calls, tc.calls)
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("Supervise = %v, want %v", err, tc.want)
			}
		})
	}
	t.Run("stopped while it pauses", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		calls := 0
		err := Supervise(ctx, nil, time.Hour, func(context.Context) (bool, error) {
			calls++
			cancel()
			return false, trouble
		})
		if err != nil || calls != 1 {
			t.Errorf("Supervise = %v after %d runs, want nil after 1", err, calls)
		}
	})
}

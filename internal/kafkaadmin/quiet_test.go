package kafkaadmin_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/kafkaadmin"
)

// TestWaitQuiet: quiet means zero lag on two polls in a row; errors are
// retried; a deadline names the last error or the last lags; a consumer that
// stops ends the wait with ErrStopped.
func TestWaitQuiet(t *testing.T) {
	script := func(steps ...any) func(context.Context) ([]int64, error) {
		i := 0
		return func(context.Context) ([]int64, error) {
			s := steps[min(i, len(steps)-1)]
			i++
			if err, ok := s.(error); ok {
				return nil, err
			}
			return s.([]int64), nil
		}
	}
	busy := errors.New("coordinator loading")
	t.Run("quiet after two zero polls", func(t *testing.T) {
		polls := 0
		lags := script([]int64{3, 0}, []int64{0, 0}, busy, []int64{0, 1}, []int64{0, 0}, []int64{0, 0}, []int64{5})
		counted := func(ctx context.Context) ([]int64, error) { polls++; return lags(ctx) }
		if err := kafkaadmin.WaitQuiet(context.Background(), time.Millisecond, counted, nil); err != nil {
			t.Fatal(err)
		}
		if polls != 6 {
			t.Errorf("quiet after %d polls, want 6 (a zero, an error or a lag in between starts over)", polls)
		}
	})
	t.Run("deadline names the last error", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		err := kafkaadmin.WaitQuiet(ctx, time.Millisecond, script([]int64{4}, busy), nil)
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, busy) {
			t.Errorf("got %v, want the deadline and the last error", err)
		}
	})
	t.Run("deadline names the last lags", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		err := kafkaadmin.WaitQuiet(ctx, time.Millisecond, script(busy, []int64{4, 2}), nil)
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, busy) || !strings.Contains(err.Error(), "[4 2]") {
			t.Errorf("got %v, want the deadline and the lags [4 2]", err)
		}
	})
	t.Run("the consumer stopped", func(t *testing.T) {
		crash := errors.New("crashed")
		for _, why := range []error{crash, nil} {
			stopped := make(chan error, 1)
			stopped <- why
			err := kafkaadmin.WaitQuiet(context.Background(), time.Hour, script([]int64{1}), stopped)
			if !errors.Is(err, kafkaadmin.ErrStopped) || (why != nil && !errors.Is(err, crash)) {
				t.Errorf("stopped with %v: got %v, want ErrStopped wrapping it", why, err)
			}
		}
	})
}

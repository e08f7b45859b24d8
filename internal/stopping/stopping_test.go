package stopping

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestWait(t *testing.T) {
	errRun := errors.New("run failed")
	for _, tc := range []struct {
		name    string
		cancel  bool
		run     func(ctx context.Context, release <-chan struct{}) error
		want    error
		wantAny bool // want ErrIncomplete
	}{
		{name: "returns before any stop", run: func(context.Context, <-chan struct{}) error { return errRun }, want: errRun},
		{name: "stops within the grace", cancel: true, run: func(ctx context.Context, _ <-chan struct{}) error { <-ctx.Done(); return nil }},
		{name: "hangs past the grace", cancel: true, wantAny: true, run: func(_ context.Context, release <-chan struct{}) error { <-release; return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			release := make(chan struct{})
			defer close(release)
			if tc.cancel {
				cancel()
			}
			began := time.Now()
			err := Wait(ctx, 50*time.Millisecond, func(ctx context.Context) error { return tc.run(ctx, release) })
			switch {
			case tc.wantAny && !errors.Is(err, ErrIncomplete):
				t.Errorf("err %v, want ErrIncomplete", err)
			case !tc.wantAny && !errors.Is(err, tc.want):
				t.Errorf("err %v, want %v", err, tc.want)
			case tc.wantAny && time.Since(began) < 50*time.Millisecond:
				t.Errorf("gave up after %v, before the grace", time.Since(began))
			}
		})
	}
}

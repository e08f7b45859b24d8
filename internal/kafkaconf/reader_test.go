package kafkaconf_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/kfakebroker"
)

// TestReaderSarama: readers retry metadata a few times whatever RetryFor
// says; long-lived clients keep retrying for RetryFor.
func TestReaderSarama(t *testing.T) {
	kc := kafkaconf.Config{Brokers: []string{"k:9092"}, RetryFor: time.Hour}
	if got := kc.ReaderSarama().Metadata.Retry.Max; got != 3 {
		t.Errorf("ReaderSarama metadata retries = %d, want 3", got)
	}
	if got := kc.Sarama().Metadata.Retry.Max; got < 1000 {
		t.Errorf("Sarama metadata retries = %d, want RetryFor's (an hour)", got)
	}
}

var errAny = errors.New("any error")

// TestNewReaderClient: connecting gives up when ctx is done, even while
// sarama.NewClient (which takes no context) still waits for a broker, and
// fails within seconds when nothing listens.
func TestNewReaderClient(t *testing.T) {
	// silent accepts connections and never answers.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := closed.Addr().String()
	closed.Close()
	kf, err := kfakebroker.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer kf.Close()

	for _, tc := range []struct {
		name    string
		brokers []string
		timeout time.Duration
		within  time.Duration
		want    error // nil: connects; errAny: any error
	}{
		{"silent broker, deadline", []string{silent.Addr().String()}, 300 * time.Millisecond, 3 * time.Second, context.DeadlineExceeded},
		{"refused", []string{refused}, time.Minute, 10 * time.Second, errAny},
		{"kfake", kf.Addrs(), time.Minute, 10 * time.Second, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
			defer cancel()
			began := time.Now()
			client, err := kafkaconf.Config{Brokers: tc.brokers}.NewReaderClient(ctx)
			took := time.Since(began)
			if client != nil {
				client.Close()
			}
			switch {
			case tc.want == nil && err != nil:
				t.Fatalf("NewReaderClient: %v", err)
			case tc.want != nil && err == nil:
				t.Fatalf("NewReaderClient connected, want an error")
			case tc.want != nil && tc.want != errAny && !errors.Is(err, tc.want):
				t.Fatalf("NewReaderClient: %v, want %v", err, tc.want)
			}
			if took > tc.within {
				t.Errorf("took %v, want at most %v", took, tc.within)
			}
		})
	}
}

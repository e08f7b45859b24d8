package kafkaconf_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/testsupport/testkafka"
)

// TestReaderRetries: readers retry requests a few times whatever RetryFor
// says; long-lived clients keep retrying for RetryFor.
func TestReaderRetries(t *testing.T) {
	kc := testkafka.Config(t)
	kc.RetryFor = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reader, err := kc.NewReaderClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	if got := reader.OptValue(kgo.RequestRetries); got != int64(3) {
		t.Errorf("reader request retries = %v, want 3", got)
	}
	long, err := kgo.NewClient(append(kc.Kgo(), kgo.SeedBrokers(kc.Brokers...))...)
	if err != nil {
		t.Fatal(err)
	}
	defer long.Close()
	if got := long.OptValue(kgo.RetryTimeout); got != time.Hour {
		t.Errorf("long-lived client retries requests for %v, want RetryFor (an hour)", got)
	}
	if got := long.OptValue(kgo.RecordDeliveryTimeout); got != time.Hour {
		t.Errorf("long-lived client retries records for %v, want RetryFor (an hour)", got)
	}
}

// TestNewReaderClient: connecting gives up when ctx is done, even while a
// broker accepts the connection and never answers, and fails within seconds
// when nothing listens.
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
	kc := testkafka.Config(t)

	for _, tc := range []struct {
		name    string
		brokers []string
		timeout time.Duration
		within  time.Duration
		fails   bool
		want    error // the error it fails with; nil: any
	}{
		{"silent broker, deadline", []string{silent.Addr().String()}, 300 * time.Millisecond, 3 * time.Second, true, context.DeadlineExceeded},
		{"refused", []string{refused}, time.Minute, 10 * time.Second, true, nil},
		{"broker", kc.Brokers, time.Minute, 10 * time.Second, false, nil},
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
			case !tc.fails && err != nil:
				t.Fatalf("NewReaderClient: %v", err)
			case tc.fails && err == nil:
				t.Fatalf("NewReaderClient connected, want an error")
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Fatalf("NewReaderClient: %v, want %v", err, tc.want)
			}
			if took > tc.within {
				t.Errorf("took %v, want at most %v", took, tc.within)
			}
		})
	}
}

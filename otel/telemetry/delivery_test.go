package telemetry_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/northpole-workshop/northpole/internal/testsupport/syncbuf"
	"github.com/northpole-workshop/northpole/otel/backend/servicemap"
	"github.com/northpole-workshop/northpole/otel/telemetry"
)

// countEnded counts the sampled spans the SDK ends: the spans created, as
// the exporters should see them.
type countEnded struct{ n atomic.Int64 }

func (*countEnded) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (c *countEnded) OnEnd(s sdktrace.ReadOnlySpan) {
	if s.SpanContext().IsSampled() {
		c.n.Add(1)
	}
}
func (*countEnded) Shutdown(context.Context) error   { return nil }
func (*countEnded) ForceFlush(context.Context) error { return nil }

// endTraces ends traces of two spans, send toys (toy-elves) and its child
// process toys (packer), from several goroutines as fast as they can.
func endTraces(tel *telemetry.Telemetry, goroutines, perGoroutine int) {
	elves := tel.TracerProvider("toy-elves").Tracer("t")
	packer := tel.TracerProvider("packer").Tracer("t")
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range perGoroutine {
				ctx, send := elves.Start(context.Background(), "send toys", trace.WithSpanKind(trace.SpanKindProducer))
				_, proc := packer.Start(ctx, "process toys", trace.WithSpanKind(trace.SpanKindConsumer))
				proc.End()
				send.End()
			}
		})
	}
	wg.Wait()
}

func otlpEnv(t *testing.T, proto, addr string) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+addr)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", proto)
	t.Setenv("OTEL_TRACES_SAMPLER", "always_on")
	t.Setenv("OTEL_METRICS_EXPORTER", "none")
}

// TestEverySpanReachesTheReceiver: with default settings, far more spans
// than the batch processor's queue (2,048) are ended in a burst, and a real
// OTLP server on loopback receives exactly the spans the SDK ended, over
// gRPC and over HTTP. The SDK's processor alone would drop whatever
// overflows its queue; Waited shows that the burst did overflow it.
func TestEverySpanReachesTheReceiver(t *testing.T) {
	const goroutines, traces = 8, 6_000 // 96,000 spans
	for _, proto := range []string{telemetry.ProtocolGRPC, telemetry.ProtocolHTTPProtobuf} {
		t.Run(proto, func(t *testing.T) {
			b := servicemap.NewBuilder(servicemap.Options{})
			grpcAddr, httpAddr := "127.0.0.1:0", ""
			if proto == telemetry.ProtocolHTTPProtobuf {
				grpcAddr, httpAddr = "", "127.0.0.1:0"
			}
			rcv, err := servicemap.Listen(b, grpcAddr, httpAddr, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			defer rcv.Close()
			otlpEnv(t, proto, rcv.GRPCAddr()+rcv.HTTPAddr())
			created := &countEnded{}
			tel, err := telemetry.New(context.Background(), telemetry.Options{SpanProcessors: []sdktrace.SpanProcessor{created}})
			if err != nil {
				t.Fatal(err)
			}
			endTraces(tel, goroutines, traces)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := tel.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			want := int64(2 * goroutines * traces)
			_, received := rcv.Received()
			t.Logf("%s: %d spans created, %d received", proto, created.n.Load(), received)
			if created.n.Load() != want || received != want {
				t.Fatalf("created %d spans, the receiver got %d, want %d both", created.n.Load(), received, want)
			}
			stats := tel.SpanStats()
			if len(stats) != 1 {
				t.Fatalf("stats: %+v", stats)
			}
			s := stats[0]
			if s.Exporter != "otlp" || s.Ended != want || s.Exported != want || s.Lost() != 0 || s.Pending() != 0 {
				t.Errorf("stats %+v, want %d ended and exported, none lost", s, want)
			}
			if s.Waited == 0 {
				t.Errorf("no span waited for room: the burst never filled the %d-span queue, so it proves nothing", s.Queue)
			}
			g := b.Graph()
			if e, _ := g.Edge("toy-elves", "packer"); e.Calls != goroutines*traces || g.Orphans != 0 {
				t.Errorf("map: edge toy-elves -> packer %d calls, %d orphans; want %d, 0", e.Calls, g.Orphans, goroutines*traces)
			}
		})
	}
}

// TestDeadBackendDropsCountsAndWarns: with nothing listening at the
// endpoint, ending spans does not wait for the backend beyond the first
// failed export, every span is counted as lost, and the loss is logged at
// warning level while running and at Shutdown, to Options.Log or, without
// one, through the OpenTelemetry error handler that LogErrors sets.
func TestDeadBackendDropsCountsAndWarns(t *testing.T) {
	const spans = 10_000
	for _, c := range []struct {
		proto        string
		errorHandler bool
	}{
		{telemetry.ProtocolGRPC, false},
		{telemetry.ProtocolHTTPProtobuf, false},
		{telemetry.ProtocolHTTPProtobuf, true},
	} {
		t.Run(fmt.Sprintf("%s/error handler %v", c.proto, c.errorHandler), func(t *testing.T) {
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := lis.Addr().String()
			lis.Close() // connections are refused from now on
			otlpEnv(t, c.proto, addr)
			// gRPC retries a refused connection until its timeout.
			t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "200")
			var logs syncbuf.Buffer
			log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
			opts := telemetry.Options{Log: log, ReportEvery: 20 * time.Millisecond}
			telemetry.LogErrors(slog.New(slog.DiscardHandler)) // the failed exports themselves
			if c.errorHandler {
				opts.Log = nil
				telemetry.LogErrors(log)
			}
			t.Cleanup(func() { telemetry.LogErrors(slog.New(slog.DiscardHandler)) })
			tel, err := telemetry.New(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			began := time.Now()
			endTraces(tel, 2, spans/4)
			if d := time.Since(began); d > 10*time.Second {
				t.Errorf("ending %d spans took %v with the backend down", spans, d)
			}
			for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), "spans lost, the exporter is failing"); {
				if time.Now().After(deadline) {
					t.Fatalf("no warning while running; log:\n%s", logs.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = tel.Shutdown(ctx) // its error, if any, is the failed flush counted below
			s := tel.SpanStats()[0]
			if s.Ended != spans || s.Exported != 0 || s.Lost() != spans || s.Dropped == 0 {
				t.Errorf("stats %+v, want %d ended, all lost, some dropped at the queue", s, spans)
			}
			out := logs.String()
			final := regexp.MustCompile(`level=WARN msg=(opentelemetry err=")?"?telemetry: spans lost"? exporter=otlp lost=10000 ended=10000 exported=0 `)
			if !final.MatchString(out) {
				t.Errorf("no final warning with the count; log:\n%s", out)
			}
		})
	}
}

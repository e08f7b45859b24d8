package harness_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/northpole-workshop/northpole/app/harness"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/testsupport/testkafka"
	"github.com/northpole-workshop/northpole/otel/backend/servicemap"
	"github.com/northpole-workshop/northpole/otel/telemetry"
	"github.com/northpole-workshop/northpole/producers"
)

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, a := range s.Attributes() {
		if string(a.Key) == key {
			return a.Value.String()
		}
	}
	return ""
}

func service(s sdktrace.ReadOnlySpan) string {
	v, _ := s.Resource().Set().Value("service.name")
	return v.AsString()
}

func linksTo(s sdktrace.ReadOnlySpan, sc trace.SpanContext) bool {
	for _, l := range s.Links() {
		if l.SpanContext.SpanID() == sc.SpanID() && l.SpanContext.TraceID() == sc.TraceID() {
			return true
		}
	}
	return false
}

// TestPipelineTraces runs elves, packer and sleigh on Kafka (kfake or
// $NORTHPOLE_TEST_BROKERS), each under its own service.name in one process
// as the demo does, records every span, and checks the whole chain: each
// consumer span is the child of (and links to) the producer span of the very
// record it processed, each pair's "send packed" span links to both items, the
// sleigh's spans are children of the packer's "send packed" spans, dead
// letters fail their spans, and the service map has every edge.
func TestPipelineTraces(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	kc := testkafka.Config(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rec := tracetest.NewSpanRecorder()
	tel, err := telemetry.New(ctx, telemetry.Options{SpanProcessors: []sdktrace.SpanProcessor{rec}, Sampler: sdktrace.AlwaysSample(),
		Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tel.Shutdown(context.Background()) }()

	c := harness.Named(testkafka.Unique("trace"))
	c.Kafka, c.Packer.Partitions, c.Sleigh = kc, 3, true
	const n = 300
	for _, e := range []*producers.Config{&c.Toys, &c.Boxes} {
		e.Count, e.Elves = n, 2
		e.DupRate, e.BadRate, e.LateRate = 0.03, 0.03, 0.02
	}
	c.Tracing = tel.TracerProvider
	p, err := harness.New(c, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	cfg := p.Config().Packer
	run, err := p.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := run.Goka
	if len(got.Packed) == 0 || len(got.Dead) == 0 {
		t.Fatalf("nothing packed or no dead letter: %+v", got.Counts())
	}
	m, err := p.WaitManifest(ctx, len(got.Packed))
	if err != nil {
		t.Fatal(err)
	}
	if m.Pairs != len(got.Packed) {
		t.Errorf("sleigh manifest has %d pairs, the packer packed %d", m.Pairs, len(got.Packed))
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	spans := rec.Ended()
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	sends := map[string]sdktrace.ReadOnlySpan{} // topic/partition/offset -> send span
	for _, s := range spans {
		byID[s.SpanContext().SpanID()] = s
		if s.SpanKind() == trace.SpanKindProducer && (s.Name() == "send "+cfg.Topics.Toys || s.Name() == "send "+cfg.Topics.Boxes) {
			sends[attr(s, "messaging.destination.name")+"/"+attr(s, "messaging.destination.partition.id")+"/"+attr(s, "messaging.kafka.offset")] = s
		}
	}
	count := map[string]int{}
	for _, s := range spans {
		// Every messaging span of every service names the broker.
		if attr(s, "messaging.system") == "kafka" && (attr(s, "server.address") == "" || attr(s, "server.port") == "") {
			t.Errorf("%s (%s): no server.address/server.port", s.Name(), service(s))
		}
		switch {
		case strings.HasPrefix(s.Name(), "process ") && service(s) == "packer":
			count["process input"]++
			key := attr(s, "messaging.destination.name") + "/" + attr(s, "messaging.destination.partition.id") + "/" + attr(s, "messaging.kafka.offset")
			send, ok := sends[key]
			if !ok {
				t.Errorf("%s of %s: no send span for that record", s.Name(), key)
				continue
			}
			if s.Parent().SpanID() != send.SpanContext().SpanID() || !linksTo(s, send.SpanContext()) || s.SpanKind() != trace.SpanKindConsumer {
				t.Errorf("%s of %s: parent %v, kind %v, want consumer child of and linked to the send span %v", s.Name(), key, s.Parent().SpanID(), s.SpanKind(), send.SpanContext().SpanID())
			}
			wantSvc := map[string]string{cfg.Topics.Toys: "toy-elves", cfg.Topics.Boxes: "box-elves"}[attr(s, "messaging.destination.name")]
			if service(send) != wantSvc {
				t.Errorf("send span of %s in service %q, want %q", key, service(send), wantSvc)
			}
		case s.Name() == "send "+cfg.Topics.Packed:
			count["send packed"]++
			parent, ok := byID[s.Parent().SpanID()]
			if !ok || !strings.HasPrefix(parent.Name(), "process ") {
				t.Errorf("send packed span's parent is not a process span: %v", s.Parent().SpanID())
			}
			items := map[string]bool{}
			for _, l := range s.Links() {
				if p, ok := byID[l.SpanContext.SpanID()]; ok {
					items[p.Name()] = true
				}
			}
			if len(s.Links()) != 2 || !items["process "+cfg.Topics.Toys] || !items["process "+cfg.Topics.Boxes] {
				t.Errorf("send packed span links %d spans %v, want the process spans of a toy and a box", len(s.Links()), items)
			}
		case s.Name() == "process "+cfg.Topics.Packed:
			count["process packed"]++
			parent, ok := byID[s.Parent().SpanID()]
			if service(s) != "sleigh" || !ok || parent.Name() != "send "+cfg.Topics.Packed || service(parent) != "packer" || !linksTo(s, parent.SpanContext()) {
				t.Errorf("sleigh span %s (service %s): parent %v is not the packer's send span", s.Name(), service(s), s.Parent().SpanID())
			}
		case s.Name() == "send "+cfg.Topics.Dead:
			count["dead"]++
			reason := ""
			for _, a := range s.Attributes() {
				if string(a.Key) == record.ReasonAttribute {
					reason = a.Value.AsString()
				}
			}
			if s.Status().Code != codes.Unset || reason == "" {
				t.Errorf("dead letter send span: status %v, reason %q; want unset and a reason", s.Status(), reason)
			}
		}
	}
	if count["process input"] < len(sends) || count["send packed"] < len(got.Packed) || count["process packed"] < len(got.Packed) || count["dead"] < len(got.Dead) {
		t.Errorf("span counts %v: want at least %d process spans, %d send packed and process packed spans, %d dead letter spans",
			count, len(sends), len(got.Packed), len(got.Dead))
	}

	b := servicemap.NewBuilder(servicemap.Options{})
	b.Add(servicemap.FromSDK(spans))
	graph := b.Graph()
	for _, e := range [][2]string{{"toy-elves", "packer"}, {"box-elves", "packer"}, {"packer", "sleigh"},
		{"toy-elves", "kafka"}, {"box-elves", "kafka"}, {"packer", "kafka"}, {"sleigh", "kafka"}} {
		if _, ok := graph.Edge(e[0], e[1]); !ok {
			t.Errorf("service map lacks %s -> %s", e[0], e[1])
		}
	}
	if e, _ := graph.Edge("packer", "sleigh"); e.Calls < len(got.Packed) {
		t.Errorf("packer -> sleigh: %d calls, want at least %d", e.Calls, len(got.Packed))
	}
	t.Logf("%d spans, %v; packed %d, dead %d", len(spans), count, len(got.Packed), len(got.Dead))
}

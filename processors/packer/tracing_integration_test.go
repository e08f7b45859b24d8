package packer_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/lovoo/goka"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/testsupport/testkafka"
	"github.com/northpole-workshop/northpole/internal/topicread"
	"github.com/northpole-workshop/northpole/otel/kafkatrace"
	"github.com/northpole-workshop/northpole/otel/telemetry"
	"github.com/northpole-workshop/northpole/processors/packer"
	"github.com/northpole-workshop/northpole/producers"
)

// TestTracingSendSpansNameTheirPartition runs elves and packer on Kafka
// (kfake or $NORTHPOLE_TEST_BROKERS) at 50 % sampling, as the environment
// sets it (parentbased_traceidratio), and reads every record the packer
// wrote. Each carries a traceparent in the trace of an input: a sampled one
// the context of a "send" span that ended with Kafka's answer and names the
// record's topic, partition and offset; an unsampled one a span that was
// never made. Each sampled input has its process span, no other does.
func TestTracingSendSpansNameTheirPartition(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	kc := testkafka.Config(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rec := tracetest.NewSpanRecorder()
	env := map[string]string{"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.5"}
	tel, err := telemetry.New(ctx, telemetry.Options{SpanProcessors: []sdktrace.SpanProcessor{rec}, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tel.Shutdown(context.Background()) }()

	pc := packer.Named(testkafka.Unique("tracepart"))
	pc.Kafka, pc.Partitions, pc.Tracer = kc, 3, tel.TracerProvider(telemetry.ServicePacker)
	toys, boxes := producers.DefaultConfig(record.Toys), producers.DefaultConfig(record.Boxes)
	for _, e := range []*producers.Config{&toys, &boxes} {
		e.Count, e.Elves = 200, 2
		e.DupRate, e.BadRate, e.LateRate = 0.03, 0.03, 0.02
	}
	toys.Tracer, boxes.Tracer = tel.TracerProvider(telemetry.ServiceToyElves), tel.TracerProvider(telemetry.ServiceBoxElves)
	r := startPacker(t, ctx, pc)
	if err := runElves(ctx, pc, toys, boxes); err != nil {
		t.Fatal(err)
	}
	if err := r.WaitQuiet(ctx, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	spans := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	processed := map[string]bool{} // topic/partition/offset of each process span
	for _, s := range rec.Ended() {
		spans[s.SpanContext().SpanID()] = s
		if v, _ := s.Resource().Set().Value("service.name"); v.AsString() == "packer" && s.SpanKind() == trace.SpanKindConsumer {
			processed[attr(s, "messaging.destination.name")+"/"+attr(s, "messaging.destination.partition.id")+"/"+attr(s, "messaging.kafka.offset")] = true
		}
	}
	traces := map[trace.TraceID]bool{}
	inputs, sampledInputs := 0, 0
	for _, topic := range []string{pc.Topics.Toys, pc.Topics.Boxes} {
		msgs, err := topicread.All(ctx, kc, topic)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			sc := traceOf(m)
			traces[sc.TraceID()] = true
			inputs++
			at := topic + "/" + strconv.Itoa(int(m.Partition)) + "/" + strconv.FormatInt(m.Offset, 10)
			if sc.IsSampled() != processed[at] {
				t.Errorf("input %s sampled %v, processed under a span of its own %v", at, sc.IsSampled(), processed[at])
			}
			if sc.IsSampled() {
				sampledInputs++
			}
		}
	}
	if sampledInputs == 0 || sampledInputs == inputs {
		t.Fatalf("%d of %d inputs sampled: want some of each", sampledInputs, inputs)
	}
	outputs, sampledOutputs := 0, 0
	for _, topic := range []string{pc.Topics.Packed, pc.Topics.Unpacked, pc.Topics.Spare, pc.Topics.Late, pc.Topics.Dead} {
		msgs, err := topicread.All(ctx, kc, topic)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			outputs++
			sc := traceOf(m)
			if !sc.IsValid() || !traces[sc.TraceID()] {
				t.Errorf("%s/%d/%d carries %v, not the trace of an input", topic, m.Partition, m.Offset, sc)
				continue
			}
			s, ok := spans[sc.SpanID()]
			if ok != sc.IsSampled() {
				t.Errorf("%s/%d/%d: sampled %v, has a span %v", topic, m.Partition, m.Offset, sc.IsSampled(), ok)
			}
			if !ok {
				continue
			}
			sampledOutputs++
			if s.Name() != "send "+topic || attr(s, "messaging.destination.partition.id") != strconv.Itoa(int(m.Partition)) || attr(s, "messaging.kafka.offset") != strconv.FormatInt(m.Offset, 10) {
				t.Errorf("%s/%d/%d: its span %s names partition %s offset %s", topic, m.Partition, m.Offset, s.Name(),
					attr(s, "messaging.destination.partition.id"), attr(s, "messaging.kafka.offset"))
			}
		}
	}
	if sampledOutputs == 0 || sampledOutputs == outputs {
		t.Errorf("%d of %d outputs sampled: want some of each", sampledOutputs, outputs)
	}
}

// traceOf is the span context a record's headers carry.
func traceOf(m topicread.Message) trace.SpanContext {
	h := goka.Headers{}
	for _, x := range m.Headers {
		h[x.Key] = x.Value
	}
	return trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), kafkatrace.HeadersCarrier(h)))
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, a := range s.Attributes() {
		if string(a.Key) == key {
			return a.Value.String()
		}
	}
	return ""
}

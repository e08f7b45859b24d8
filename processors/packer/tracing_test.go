package packer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/lovoo/goka"
	"github.com/lovoo/goka/tester"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/northpole-workshop/northpole/internal/gokakit"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/otel/kafkatrace"
	"github.com/northpole-workshop/northpole/otel/telemetry"
)

// tracedPipeline is the tester pipeline with tracing on, and an "elves"
// tracer to make the send spans whose contexts the inputs carry.
type tracedPipeline struct {
	*testerPipeline
	rec   *tracetest.SpanRecorder
	elves trace.Tracer
}

func provider(rec *tracetest.SpanRecorder, service string) *sdktrace.TracerProvider {
	return sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec),
		sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName(service))))
}

// newTracedPipeline traces the packer as `northpole process packer` does: a
// provider of otel/telemetry's, whose sampler comes from
// OTEL_TRACES_SAMPLER (here parentbased_always_on, the default: the packer
// follows the elves' decision).
func newTracedPipeline(t testing.TB) *tracedPipeline {
	rec := tracetest.NewSpanRecorder()
	p := newTracedTesterPipeline(t, telemetryProvider(t, "parentbased_always_on", rec))
	return &tracedPipeline{testerPipeline: p, rec: rec, elves: provider(rec, "elves").Tracer("test")}
}

// telemetryProvider is otel/telemetry's provider of the packer with sampler
// (an OTEL_TRACES_SAMPLER value) and processor.
func telemetryProvider(tb testing.TB, sampler string, processor sdktrace.SpanProcessor) trace.TracerProvider {
	env := map[string]string{"OTEL_TRACES_SAMPLER": sampler}
	tel, err := telemetry.New(context.Background(), telemetry.Options{SpanProcessors: []sdktrace.SpanProcessor{processor}, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	return tel.TracerProvider("packer")
}

// sendTraced consumes a record whose headers carry the context of a fresh
// "send <topic>" span; it returns that span's context.
func (p *tracedPipeline) sendTraced(x record.Stream, key, value string) trace.SpanContext {
	topic := p.pk.topicOf(x)
	ctx, span := p.elves.Start(context.Background(), "send "+topic, trace.WithSpanKind(trace.SpanKindProducer))
	span.End()
	h := goka.Headers{}
	propagation.TraceContext{}.Inject(ctx, kafkatrace.HeadersCarrier(h))
	p.tt.Consume(topic, key, []byte(value), tester.WithHeaders(h))
	return span.SpanContext()
}

func (p *tracedPipeline) spans(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range p.rec.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func (p *tracedPipeline) one(name string) sdktrace.ReadOnlySpan {
	p.t.Helper()
	got := p.spans(name)
	if len(got) != 1 {
		p.t.Fatalf("%d spans %q, want 1 (all: %v)", len(got), name, names(p.rec.Ended()))
	}
	return got[0]
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}

func hasLink(s sdktrace.ReadOnlySpan, sc trace.SpanContext) bool {
	for _, l := range s.Links() {
		if l.SpanContext.TraceID() == sc.TraceID() && l.SpanContext.SpanID() == sc.SpanID() {
			return true
		}
	}
	return false
}

// TestTracingPairSpans: each input gets a CONSUMER span that is the child of
// (and links to) the elves' send span; the packed record is sent under a
// PRODUCER span whose parent is the record that completed the pair, which
// links to both items and names them, and whose context is in the output
// record's headers.
func TestTracingPairSpans(t *testing.T) {
	p := newTracedPipeline(t)
	toySend := p.sendTraced(record.Toys, "M", `{"toy_id":"t1","kind":"kite","size":"M","elf":"e","made_at":"`+at("00:00:01")+`"}`)
	boxSend := p.sendTraced(record.Boxes, "M", `{"box_id":"b1","size":"M","elf":"e","made_at":"`+at("00:00:02")+`"}`)

	procToy, procBox := p.one("process toys"), p.one("process boxes")
	for _, c := range []struct {
		s    sdktrace.ReadOnlySpan
		send trace.SpanContext
	}{{procToy, toySend}, {procBox, boxSend}} {
		if c.s.SpanKind() != trace.SpanKindConsumer {
			t.Errorf("%s: kind %v, want consumer", c.s.Name(), c.s.SpanKind())
		}
		if c.s.Parent().SpanID() != c.send.SpanID() || c.s.SpanContext().TraceID() != c.send.TraceID() {
			t.Errorf("%s: parent %v, want the send span %v", c.s.Name(), c.s.Parent().SpanID(), c.send.SpanID())
		}
		if !hasLink(c.s, c.send) {
			t.Errorf("%s: no link to the send span", c.s.Name())
		}
		attrs := map[string]string{}
		for _, a := range c.s.Attributes() {
			attrs[string(a.Key)] = a.Value.String()
		}
		for k, want := range map[string]string{
			"messaging.system": "kafka", "messaging.operation.type": "process", "messaging.operation.name": "process",
			"messaging.destination.partition.id": "0", "messaging.kafka.offset": "0",
			"messaging.consumer.group.name": "packer-clock", "messaging.kafka.consumer.group": "packer-clock",
			"messaging.client.id": "northpole-packer-clock", "messaging.client_id": "northpole-packer-clock",
			"messaging.kafka.message.key": "M",
			"server.address":              "unused", "server.port": "9092", // the first of the config's brokers
		} {
			if attrs[k] != want {
				t.Errorf("%s: %s = %q, want %q", c.s.Name(), k, attrs[k], want)
			}
		}
		if c.s.Status().Code == codes.Error {
			t.Errorf("%s: status %v", c.s.Name(), c.s.Status())
		}
	}

	send := p.one("send packed")
	if send.SpanKind() != trace.SpanKindProducer || send.Parent().SpanID() != procBox.SpanContext().SpanID() || send.SpanContext().TraceID() != boxSend.TraceID() {
		t.Errorf("send packed: kind %v parent %v, want producer child of the box's process span %v (the record that completed the pair)", send.SpanKind(), send.Parent().SpanID(), procBox.SpanContext().SpanID())
	}
	if !hasLink(send, procToy.SpanContext()) || !hasLink(send, procBox.SpanContext()) || len(send.Links()) != 2 {
		t.Errorf("send packed: links %+v, want the process spans of the toy and of the box", send.Links())
	}
	attrs := map[attribute.Key]string{}
	for _, a := range send.Attributes() {
		attrs[a.Key] = a.Value.String()
	}
	for k, want := range map[attribute.Key]string{attrLine: "M", attrWindow: record.FormatMicros(time.Date(2026, 12, 24, 0, 0, 0, 0, time.UTC).UnixMicro()), attrToy: "t1", attrBox: "b1", "messaging.destination.name": p.cfg.Topics.Packed} {
		if attrs[k] != want {
			t.Errorf("send packed: %s = %q, want %q", k, attrs[k], want)
		}
	}
	if len(p.spans("pack")) != 0 {
		t.Errorf("a pair has a span of its own between process and send packed")
	}
	h, key, _, ok := p.packed.NextWithHeaders()
	if !ok || key != itemKey("M", micros("00:00:00"), "t1") {
		t.Fatalf("packed record: %v %q", ok, key)
	}
	got := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), kafkatrace.HeadersCarrier(h)))
	if got.SpanID() != send.SpanContext().SpanID() {
		t.Errorf("packed record carries span %v, want its send span %v", got.SpanID(), send.SpanContext().SpanID())
	}
	// The slot remembers the toy's context (written once, with the toy).
	slot := p.slot("M", time.Date(2026, 12, 24, 0, 0, 0, 0, time.UTC).UnixMicro(), 1)
	if sc := slot.ToyTrace.spanContext(); sc.SpanID() != procToy.SpanContext().SpanID() {
		t.Errorf("slot remembers toy context %v, want the toy's process span %v", sc.SpanID(), procToy.SpanContext().SpanID())
	}
}

// TestTracingUnsampledRecords: records the elves did not sample make no
// span in the packer, and what the packer writes for them carries their
// trace with the sampled flag off (the pair's: the trace of the record that
// completed it), so that the sleigh does not sample them either.
func TestTracingUnsampledRecords(t *testing.T) {
	p := newTracedPipeline(t)
	unsampled := func(x record.Stream, value string, tid byte) {
		h := goka.Headers{"traceparent": []byte(fmt.Sprintf("00-%02x0000000000000000000000000000ff-00000000000000aa-00", tid))}
		p.tt.Consume(p.pk.topicOf(x), "M", []byte(value), tester.WithHeaders(h))
	}
	unsampled(record.Toys, `{"toy_id":"t1","kind":"kite","size":"M","elf":"e","made_at":"`+at("00:00:01")+`"}`, 1)
	unsampled(record.Boxes, `{"box_id":"b1","size":"M","elf":"e","made_at":"`+at("00:00:02")+`"}`, 2)
	if started := p.rec.Started(); len(started) != 0 {
		t.Errorf("%d spans for records nobody samples: %v", len(started), started)
	}
	h, _, _, ok := p.packed.NextWithHeaders()
	if !ok {
		t.Fatal("nothing packed")
	}
	sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), kafkatrace.HeadersCarrier(h)))
	if !sc.IsValid() || sc.IsSampled() || sc.TraceID() != (trace.TraceID{2, 15: 0xff}) {
		t.Errorf("packed record carries %v, want the box's trace, unsampled", sc)
	}
}

// TestTracingUnpackedAndSpareLinkTheirItem: a window closes with a toy
// left over in one slot and a box in another. Each row is sent under a
// span whose parent is the record that closed the window (another trace)
// and which links to the process span of the record that brought the
// item, so the row is reachable from the item's own trace.
func TestTracingUnpackedAndSpareLinkTheirItem(t *testing.T) {
	p := newTracedPipeline(t)
	item := func(x record.Stream, id, made string) trace.SpanContext {
		return p.sendTraced(x, "M", fmt.Sprintf(`{%q:%q,"size":"M","elf":"e","made_at":%q}`, x.IDField(), id, at(made)))
	}
	heartbeat := func(x record.Stream, made string) trace.SpanContext {
		return p.sendTraced(x, "M", `{"heartbeat":true,"size":"M","elf":"e","made_at":"`+at(made)+`"}`)
	}
	// Window 00:00:00: t1+b1 packed, t2 left over. Window 00:00:10: b2+t3
	// packed, b3 left over.
	item(record.Toys, "t1", "00:00:01")
	t2 := item(record.Toys, "t2", "00:00:02")
	item(record.Boxes, "b1", "00:00:03")
	item(record.Boxes, "b2", "00:00:11")
	b3 := item(record.Boxes, "b3", "00:00:12")
	item(record.Toys, "t3", "00:00:13")
	heartbeat(record.Toys, "00:00:25")
	closing := heartbeat(record.Boxes, "00:00:25") // both watermarks past both windows

	process := func(send trace.SpanContext) trace.SpanContext {
		for _, s := range append(p.spans("process toys"), p.spans("process boxes")...) {
			if s.Parent().SpanID() == send.SpanID() {
				return s.SpanContext()
			}
		}
		t.Fatalf("no process span for send span %v", send.SpanID())
		return trace.SpanContext{}
	}
	closer := process(closing)
	for _, c := range []struct {
		span string
		item trace.SpanContext
	}{{"send unpacked", process(t2)}, {"send spare", process(b3)}} {
		s := p.one(c.span)
		if s.Parent().SpanID() != closer.SpanID() || s.SpanContext().TraceID() != closer.TraceID() {
			t.Errorf("%s: parent %v, want the process span of the record that closed the window %v", c.span, s.Parent().SpanID(), closer.SpanID())
		}
		if len(s.Links()) != 1 || !hasLink(s, c.item) {
			t.Errorf("%s: links %+v, want one, to the item's process span %v", c.span, s.Links(), c.item.SpanID())
		}
	}
}

// TestTracingDeadLetters: an invalid record's process span and its dead
// letter's send span name the reason and leave the status unset (a dead
// letter is handled, not failed); a duplicate, whose dead letter the slots
// group writes from the clock's decision, has that send span in its trace.
func TestTracingDeadLetters(t *testing.T) {
	p := newTracedPipeline(t)
	p.sendTraced(record.Toys, "M", `{"oops"`)
	proc := p.one("process toys")
	if proc.Status().Code != codes.Unset || reasonOf(proc) != "malformed json" {
		t.Errorf("process span of an invalid record: status %+v, reason %q; want unset and malformed json", proc.Status(), reasonOf(proc))
	}
	dl := p.one("send dead-letters")
	if dl.Status().Code != codes.Unset || reasonOf(dl) != "malformed json" || dl.Parent().SpanID() != proc.SpanContext().SpanID() {
		t.Errorf("dead letter send span: status %+v, reason %q, parent %v", dl.Status(), reasonOf(dl), dl.Parent().SpanID())
	}
	p.rec.Reset()

	value := `{"toy_id":"t1","size":"M","elf":"e","made_at":"` + at("00:00:01") + `"}`
	p.sendTraced(record.Toys, "M", value)
	p.rec.Reset()
	p.sendTraced(record.Toys, "M", value)
	proc = p.one("process toys")
	dl = p.one("send dead-letters")
	if dl.Status().Code != codes.Unset || reasonOf(dl) != "duplicate" {
		t.Errorf("duplicate's dead letter span: status %+v, reason %q", dl.Status(), reasonOf(dl))
	}
	if dl.Parent().SpanID() != proc.SpanContext().SpanID() || dl.SpanContext().TraceID() != proc.SpanContext().TraceID() {
		t.Errorf("duplicate's dead letter span: parent %v, want the duplicate's process span %v (context through the clock table)", dl.Parent().SpanID(), proc.SpanContext().SpanID())
	}
	client := ""
	for _, a := range dl.Attributes() {
		if a.Key == "messaging.client.id" {
			client = a.Value.AsString()
		}
	}
	if want := gokakit.ClientID(p.cfg.clockGroup()); client != want {
		t.Errorf("duplicate's dead letter sent by %q, want the group's client %q", client, want)
	}
}

// TestTracingChangesNoResult runs the same random inputs with tracing off and
// on: every output topic gets the same keys and values in the same order.
func TestTracingChangesNoResult(t *testing.T) {
	type row struct {
		topic, key string
		val        any
	}
	run := func(traced bool) []row {
		var p *testerPipeline
		var tp *tracedPipeline
		if traced {
			tp = newTracedPipeline(t)
			p = tp.testerPipeline
		} else {
			p = newTesterPipeline(t)
		}
		r := rand.New(rand.NewPCG(7, 7))
		for i := range 300 {
			x := record.Toys
			if r.IntN(2) == 0 {
				x = record.Boxes
			}
			size := record.Sizes[r.IntN(2)]
			made := fmt.Sprintf("2026-12-24T00:%02d:%02d.%03dZ", i/40, r.IntN(60), r.IntN(1000))
			value := fmt.Sprintf(`{%q:"%c%d","size":%q,"made_at":%q}`, x.IDField(), x[0], r.IntN(120), size, made)
			if r.IntN(15) == 0 {
				value = `{"oops"`
			}
			if traced {
				tp.sendTraced(x, size, value)
			} else {
				p.send(x, size, value)
			}
		}
		var out []row
		for _, q := range []struct {
			name string
			q    *tester.QueueTracker
		}{{"packed", p.packed}, {"unpacked", p.unpacked}, {"spare", p.spare}, {"late", p.late}, {"dead", p.dead}} {
			for _, m := range drain(q.q) {
				out = append(out, row{q.name, m.key, m.val})
			}
		}
		if traced && len(tp.spans("send packed")) == 0 {
			t.Errorf("traced run made no send packed span")
		}
		return out
	}
	off, on := run(false), run(true)
	if len(off) == 0 || !reflect.DeepEqual(off, on) {
		t.Errorf("outputs differ with tracing on: %d rows off, %d rows on", len(off), len(on))
	}
}

type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

// BenchmarkTracingCPUPerRecord is the CPU cost of one input record through
// the packer's two groups in goka's tester (one goroutine, in memory, no
// Kafka), with tracing off and on: the tracing work in isolation, without the
// noise of a broker. Inputs alternate toy and box of one size, so about every
// second record completes a pair. With tracing on, each input carries a
// traceparent whose sampled flag is set for every record (100 %) or for one
// in ten (10 %), as the elves' root sampler would decide; the packer's
// parent-based sampler follows it. Spans go to a batch processor with a
// discarding exporter.
func BenchmarkTracingCPUPerRecord(b *testing.B) {
	for _, mode := range []struct {
		name  string
		every int // one record in every sampled; 0: tracing off
	}{{"off", 0}, {"sampled=100%", 1}, {"sampled=10%", 10}} {
		b.Run(mode.name, func(b *testing.B) {
			var p *testerPipeline
			if mode.every == 0 {
				p = newTesterPipeline(b)
			} else {
				p = newTracedTesterPipeline(b, telemetryProvider(b, "parentbased_always_on", sdktrace.NewBatchSpanProcessor(discardExporter{})))
			}
			values := make([]string, b.N)
			headers := make([]goka.Headers, b.N)
			r := rand.New(rand.NewPCG(1, 2))
			for i := range b.N {
				x, id := "toy_id", fmt.Sprintf("t%d", i)
				if i%2 == 1 {
					x, id = "box_id", fmt.Sprintf("b%d", i)
				}
				made := time.Date(2026, 12, 24, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Millisecond).Format(time.RFC3339Nano)
				values[i] = fmt.Sprintf(`{%q:%q,"size":"M","elf":"e","made_at":%q}`, x, id, made)
				if mode.every > 0 {
					flags := "00"
					if i%mode.every == 0 {
						flags = "01"
					}
					headers[i] = goka.Headers{"traceparent": []byte(fmt.Sprintf("00-%016x%016x-%016x-%s", r.Uint64(), r.Uint64()|1, r.Uint64()|1, flags))}
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				topic := "toys"
				if i%2 == 1 {
					topic = "boxes"
				}
				p.tt.Consume(topic, "M", []byte(values[i]), tester.WithHeaders(headers[i]))
			}
		})
	}
}

// reasonOf is a span's dead-letter reason attribute, "" without one.
func reasonOf(s sdktrace.ReadOnlySpan) string {
	for _, a := range s.Attributes() {
		if string(a.Key) == record.ReasonAttribute {
			return a.Value.AsString()
		}
	}
	return ""
}

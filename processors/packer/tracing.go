package packer

import (
	"github.com/lovoo/goka"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/northpole-workshop/northpole/internal/gokakit"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/otel/kafkatrace"
)

// Option configures a Packer beyond its Config.
type Option func(*Packer)

// WithTracerProvider traces the packer with tp (nil or a no-op provider:
// off, at no cost). Each input record gets a CONSUMER span "process toys" or
// "process boxes", child of the elves' "send" span found in its headers. Its
// context then travels in the headers of every record the stages write (loop
// topics, the dedupe events and the clock's changelog included) and is remembered by the slot of its
// rank, so that each pair gets a "pack" span, child of the record that
// completed it and linked to both items, and every output a PRODUCER span
// "send <topic>"; an unpacked toy's or a spare box's links to the record that
// brought the item. Dead letters set the status of their spans to Error.
//
// Tracing changes no value, key or decision: replays make extra spans, never
// different results.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(p *Packer) {
		c := p.cfg
		g := func(group string) *kafkatrace.Goka {
			return kafkatrace.NewGoka(tp, kafkatrace.GokaConfig{Group: group, ClientID: gokakit.ClientID(group), Brokers: c.Kafka.Brokers,
				OnSend: onSend, Internal: []string{c.dedupeEvents()}})
		}
		p.trace = stageTracing{dedupe: g(c.dedupeGroup()), clock: g(c.clockGroup()), slots: g(c.slotsGroup())}
	}
}

// stageTracing instruments the three groups; nil members do nothing.
type stageTracing struct{ dedupe, clock, slots *kafkatrace.Goka }

func (s stageTracing) on() bool { return s.slots != nil }

// Attributes of the packer's own spans.
const (
	attrDeadReason = attribute.Key("northpole.dead_letter.reason")
	attrSize       = attribute.Key("northpole.size")
	attrWindow     = attribute.Key("northpole.window_start")
	attrToy        = attribute.Key("northpole.toy_id")
	attrBox        = attribute.Key("northpole.box_id")
	attrItem       = attribute.Key("northpole.item")
)

// onSend marks the send span of a dead letter as an error: the record it
// reports could not be processed.
func onSend(span trace.Span, topic string, value any) {
	if dl, ok := value.(*DeadLetter); ok {
		span.SetStatus(codes.Error, "dead letter: "+string(dl.Reason))
		span.SetAttributes(attrDeadReason.String(string(dl.Reason)))
	}
}

// markDead marks the span of the record being processed, when there is one
// (the input stage's "process" span; later stages only relay a context).
func markDead(ctx goka.Context, reason record.Reason) {
	if span := trace.SpanFromContext(ctx.Context()); span.IsRecording() {
		span.SetStatus(codes.Error, "dead letter: "+string(reason))
		span.SetAttributes(attrDeadReason.String(string(reason)))
	}
}

// startPack starts the "pack" span of a complete slot: its parent is the
// record being processed (the one that completed the pair, or a redelivery),
// and it links to the records that brought the toy and the box. The
// returned context makes it the parent of the "send packed" span.
func (p *Packer) startPack(ctx goka.Context, st *slotState) (goka.Context, func()) {
	links := make([]trace.Link, 0, 2)
	for _, it := range []struct {
		kind string
		ref  traceRef
	}{{"toy", st.ToyTrace}, {"box", st.BoxTrace}} {
		if l, ok := itemLink(it.kind, it.ref); ok {
			links = append(links, l)
		}
	}
	c, span := p.trace.slots.Tracer().Start(ctx.Context(), "pack",
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithLinks(links...))
	if span.IsRecording() {
		span.SetAttributes(attrSize.String(st.Size), attrWindow.String(record.FormatMicros(st.Window)),
			attrToy.String(idAttr(st.Toy)), attrBox.String(idAttr(st.Box)))
	}
	return kafkatrace.WithContext(ctx, c), func() { span.End() }
}

// idAttr is an id as a span attribute: at most attrIDMax bytes of its text
// (an id can be as long as a Kafka record; a carried cut is not UTF-8).
func idAttr(id string) string {
	text, _ := splitID(id)
	return prefixUTF8(text, attrIDMax)
}

const attrIDMax = 256

// resume continues, in a stage after the input, the trace of the record a
// message is about, from the traceRef the message carries (see traceref.go).
func resume(g *kafkatrace.Goka, ctx goka.Context, ref traceRef) goka.Context {
	if g == nil || !ref.valid() {
		return ctx
	}
	return g.Resume(ctx, ref.spanContext())
}

// withItem makes the "send" span of a slot's only item, an unpacked toy or a
// spare box, link to the record that brought the item. Its parent is the
// record being processed, the one that closed the window, which is in
// another trace: without the link the row could not be found from the
// item's own trace. Nothing to link (tracing off): ctx as it is.
func withItem(ctx goka.Context, kind string, ref traceRef) goka.Context {
	if l, ok := itemLink(kind, ref); ok {
		return kafkatrace.WithLinks(ctx, l)
	}
	return ctx
}

// itemLink is a link to the record that brought a slot's toy or box, from
// the trace the slot remembers; false when it remembers none.
func itemLink(kind string, ref traceRef) (trace.Link, bool) {
	if !ref.valid() {
		return trace.Link{}, false
	}
	return trace.Link{SpanContext: ref.spanContext(), Attributes: []attribute.KeyValue{attrItem.String(kind)}}, true
}

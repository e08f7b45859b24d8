package packer

import (
	"github.com/lovoo/goka"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/northpole-workshop/northpole/internal/gokakit"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
	"github.com/northpole-workshop/northpole/otel/kafkatrace"
)

// newTracing traces the packer of c with tp (Config.Tracer; nil or a no-op
// provider: off, at no cost). Each input record gets a CONSUMER span
// "process toys" or "process boxes", child of the elves' "send" span found
// in its headers. Its context then travels inside the values of the clock
// table and the loop (traceref.go), and the slot of its rank remembers it,
// so that every output gets a PRODUCER span "send <topic>", child of the
// record being processed: a packed pair's span (the record that completed
// the pair) links to the records that brought the toy and the box, an
// unpacked toy's or a spare box's (the record that closed the window) to
// the record that brought the item. Dead letters set the status of their
// spans to Error.
//
// A pair has no span of its own between "process" and "send packed": the
// send span carries its links and its size, window and ids, because at 100 %
// sampling a span more per pair was a quarter of what tracing cost.
//
// Tracing changes no value, key or decision: replays make extra spans, never
// different results.
func newTracing(c Config, tp trace.TracerProvider) *kafkatrace.Goka {
	return kafkatrace.NewGoka(tp, kafkatrace.GokaConfig{Group: c.clockGroup(), ClientID: gokakit.ClientID(c.clockGroup()), Brokers: c.Kafka.Brokers,
		OnSend: onSend})
}

// Attributes of the packer's own spans.
const (
	attrLine   = attribute.Key("northpole.line")
	attrWindow = attribute.Key("northpole.window_start")
	attrToy    = attribute.Key("northpole.toy_id")
	attrBox    = attribute.Key("northpole.box_id")
)

// onSend names the reason of a dead letter and the size, window and items
// of a result row, so that a row's span can be found by its ids. A dead
// letter leaves the status unset: writing it is the packer doing its job
// (as a 4xx is for an HTTP server), and errors on the map must mean that
// something failed.
func onSend(_ trace.Span, _ string, value any, a []attribute.KeyValue) []attribute.KeyValue {
	switch r := value.(type) {
	case *DeadLetter:
		return append(a, ReasonKey.String(string(r.Reason)))
	case *results.Packed:
		return append(a, attrLine.String(r.Line), attrWindow.String(r.WindowStart), attrToy.String(idAttr(r.ToyID)), attrBox.String(idAttr(r.BoxID)))
	case *results.Unpacked:
		return append(a, attrLine.String(r.Line), attrWindow.String(r.WindowStart), attrToy.String(idAttr(r.ToyID)))
	case *results.Spare:
		return append(a, attrLine.String(r.Line), attrWindow.String(r.WindowStart), attrBox.String(idAttr(r.BoxID)))
	}
	return a
}

// markDead names the reason on the span of the record being processed,
// when there is one (the input stage's "process" span; later stages only
// relay a context). Its status stays unset, as onSend's.
func markDead(ctx goka.Context, reason record.Reason) {
	if span := kafkatrace.Span(ctx); span.IsRecording() {
		span.SetAttributes(ReasonKey.String(string(reason)))
	}
}

// idAttr is a row's id as a span attribute: at most attrIDMax bytes of it
// (an id can be as long as a Kafka record).
func idAttr(id string) string { return prefixUTF8(id, attrIDMax) }

const attrIDMax = 256

// traceOf is the trace context of the input record being processed in ctx,
// which the clock's decision carries on; none with tracing off.
func (p *Packer) traceOf(ctx goka.Context) traceRef {
	if p.trace == nil {
		return traceRef{}
	}
	return traceRefOf(kafkatrace.SpanContext(ctx))
}

// resume continues, in the loop's callback, the trace of the record a
// message is about, from the traceRef the message carries (see traceref.go).
func resume(g *kafkatrace.Goka, ctx goka.Context, ref traceRef) goka.Context {
	if g == nil || !ref.valid() {
		return ctx
	}
	return g.Resume(ctx, ref.spanContext())
}

// withItems makes the "send" spans of ctx link to the records that brought
// a slot's toy and box (refs, the traces the slot remembers). Their parent
// is the record being processed: for a pair, the one that completed it;
// for an unpacked toy or a spare box, the one that closed the window, which
// is in another trace, so without the link the row could not be found from
// the item's own trace. Nothing to link (tracing off): ctx as it is.
func withItems(ctx goka.Context, refs ...traceRef) goka.Context {
	var links [2]trace.Link
	n := 0
	for _, ref := range refs {
		if l, ok := itemLink(ref); ok && n < len(links) {
			links[n] = l
			n++
		}
	}
	if n == 0 {
		return ctx
	}
	return kafkatrace.WithLinks(ctx, links[:n]...)
}

// itemLink is a link to the record that brought a slot's toy or box, from
// the trace the slot remembers; false when it remembers none. Whether it is
// the toy or the box, the linked span's name says ("process toys").
func itemLink(ref traceRef) (trace.Link, bool) {
	if !ref.valid() {
		return trace.Link{}, false
	}
	return trace.Link{SpanContext: ref.spanContext()}, true
}

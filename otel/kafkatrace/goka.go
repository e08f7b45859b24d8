package kafkatrace

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Middleware wraps a goka callback (watermill style: func(h) h). Cross-cutting
// concerns stack without the callback knowing.
type Middleware func(goka.ProcessCallback) goka.ProcessCallback

// GokaConfig describes one goka group for its spans.
type GokaConfig struct {
	// Group is the consumer group (messaging.consumer.group.name).
	Group string
	// ClientID is the Kafka client id (messaging.client.id).
	ClientID string
	// Brokers is the group's bootstrap list: its first address becomes
	// server.address and server.port of every span (none when empty).
	Brokers []string
	// OnSend, when set, sees every "send <topic>" span an Emit makes that
	// records, with the value emitted, before its attributes are set: it
	// returns attrs with the span's own appended (the span then gets them
	// all at once), and may set its status (a processor marks its dead
	// letters there).
	OnSend func(span trace.Span, topic string, value any, attrs []attribute.KeyValue) []attribute.KeyValue
}

// Goka instruments the callbacks of one goka group. A nil *Goka does nothing:
// its middlewares return the callback unchanged.
//
// A record nobody samples costs what its trace context costs: its
// traceparent read, a span id drawn, and the traceparent of each record it
// writes. With a provider that says how it samples (SamplingPolicy) no span
// is made for it, no context, no attribute and no link. Spans that record
// are the SDK's.
type Goka struct {
	cfg           GokaConfig
	tracer        trace.Tracer
	sampling      sampling
	process, send *spanCache
	// sending holds the recording send spans (*pendingSend) between Emit
	// and the producer (Producer), by span id.
	sending sync.Map
}

// NewGoka returns nil when tp is nil or a no-op provider.
func NewGoka(tp trace.TracerProvider, cfg GokaConfig) *Goka {
	if !Enabled(tp) {
		return nil
	}
	server := serverAttrs(cfg.Brokers)
	return &Goka{cfg: cfg, tracer: tp.Tracer(ScopeName), sampling: samplingOf(tp),
		process: newSpanCache(OpProcess, func(topic string) []attribute.KeyValue {
			return consumerAttrs(topic, cfg.Group, cfg.ClientID, server)
		}),
		send: newSpanCache(OpSend, func(topic string) []attribute.KeyValue { return producerAttrs(topic, cfg.ClientID, server) }),
	}
}

// Span options of every span of a kind, made once.
var (
	consumerSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer)}
	producerSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindProducer)}
)

// Process is the middleware of an input that another service (or a client
// outside this process) wrote: each record gets a CONSUMER span "process
// <topic>", child of the producer's span found in the record's headers and
// linked to it too (the conventions' link, SigNoz's parent). Records the
// callback writes carry this span's context. A panic (goka's ctx.Fail) marks
// the span as failed before it goes on.
func (g *Goka) Process() Middleware {
	return func(next goka.ProcessCallback) goka.ProcessCallback {
		if g == nil {
			return next
		}
		return func(gctx goka.Context, msg any) {
			h := gctx.Headers()
			parent := remoteSpanContext(h)
			tc := &tracedContext{gokaContext: gctx, g: g}
			if ctx, ok := withBaggage(gctx.Context(), h); ok {
				tc.base = ctx
			}
			var tid trace.TraceID
			if g.sampling.known {
				var sampled bool
				if sampled, tid = g.sampling.sampled(parent); !sampled {
					tc.sc = unsampledChild(parent, tid)
					next(tc, msg)
					return
				}
			}
			ctx := tc.baseContext()
			switch {
			case parent.IsValid():
				ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
			case tid.IsValid():
				ctx = rootContext(ctx, tid)
			}
			topic := string(gctx.Topic())
			ctx, span := g.tracer.Start(ctx, g.process.of(topic).name, consumerSpan...)
			tc.ctx, tc.sc, tc.span = ctx, span.SpanContext(), span
			if span.IsRecording() {
				if parent.IsValid() {
					span.AddLink(trace.Link{SpanContext: parent})
				}
				g.setConsumerAttrs(span, gctx, topic, msg)
			}
			defer func() {
				if r := recover(); r != nil {
					span.SetStatus(codes.Error, fmt.Sprint(r))
					span.SetAttributes(semconv.ErrorTypeKey.String(panicType(r)))
					span.End()
					panic(r)
				}
				span.End()
			}()
			next(tc, msg)
		}
	}
}

// setConsumerAttrs sets the attributes of the process span of the record
// of gctx.
func (g *Goka) setConsumerAttrs(span trace.Span, gctx goka.Context, topic string, msg any) {
	// The body size is known for raw inputs (codec.Bytes); a null value (a
	// tombstone) reaches the callback only with NilProcess.
	size, tombstone := -1, msg == nil
	if b, ok := msg.([]byte); ok {
		size, tombstone = len(b), b == nil
	}
	buf := getAttrs()
	a := append(*buf, g.process.of(topic).attrs...)
	a = consumerRecordAttrs(a, gctx.Partition(), gctx.Offset(), gctx.Key(), size, tombstone)
	span.SetAttributes(a...)
	putAttrs(buf, a)
}

// panicType is the error.type of a callback that panicked: goka's ctx.Fail
// panics with the error it is given; any other value is "_OTHER".
func panicType(r any) string {
	if err, ok := r.(error); ok {
		return errorType(err)
	}
	return semconv.ErrorTypeOther.Value.AsString()
}

// Resume returns gctx as a hop inside the service whose trace context
// travels in the message value, not in its headers: sc (the remote span
// context the value carries) becomes the callback's context, and what it
// emits to output topics gets "send" spans under it. With an invalid sc, or
// on a nil *Goka, gctx is returned as it is.
//
// Headers are not used between a service's own stages on purpose: on every
// hop they cost a W3C string written and parsed and three header maps (ours
// and goka's two copies, Headers.Merged), which made tracing cost as much
// as the packing.
func (g *Goka) Resume(gctx goka.Context, sc trace.SpanContext) goka.Context {
	if g == nil || !sc.IsValid() {
		return gctx
	}
	return &tracedContext{gokaContext: gctx, g: g, sc: sc}
}

// WithLinks returns gctx whose "send" spans also link to links: a record
// caused by more than the one being processed (its parent) can point at the
// others. Outside Process or Resume, or when its send spans will not record
// (nothing to link from), it returns gctx unchanged.
func WithLinks(gctx goka.Context, links ...trace.Link) goka.Context {
	tc, ok := gctx.(*tracedContext)
	if !ok || tc.g.sampling.known && !tc.childSampled() {
		return gctx
	}
	return &tracedContext{gokaContext: tc.gokaContext, g: tc.g, sc: tc.sc, ctx: tc.ctx, base: tc.base, span: tc.span,
		links: append(slices.Clip(tc.links), links...)}
}

// SpanContext is the span context of the record being processed in gctx
// (Process's span, or what Resume was given), recording or not, without
// making a context for it; gctx's own otherwise.
func SpanContext(gctx goka.Context) trace.SpanContext {
	if tc, ok := gctx.(*tracedContext); ok {
		return tc.sc
	}
	return trace.SpanContextFromContext(gctx.Context())
}

// Span is the span Process made for the record being processed in gctx,
// when it records; a span that records nothing otherwise (a record nobody
// samples, or a later stage, which makes no span of its own).
func Span(gctx goka.Context) trace.Span {
	if tc, ok := gctx.(*tracedContext); ok && tc.span != nil {
		return tc.span
	}
	return trace.SpanFromContext(context.Background())
}

// gokaContext names the embedded goka.Context, whose own Context method
// tracedContext overrides.
type gokaContext = goka.Context

// tracedContext is a goka.Context whose writes carry a trace context.
type tracedContext struct {
	gokaContext
	g *Goka
	// sc is the span context the callback's writes descend from: its
	// process span's, recording or not, or the one Resume was given.
	sc trace.SpanContext
	// span is the process span when the SDK made one.
	span trace.Span
	// ctx is sc's context, made on first use when nil; base is what it
	// is made on when not goka's (the input's baggage).
	ctx, base context.Context
	links     []trace.Link // of every send span
}

// Context is the callback's context, with the span of the record being
// processed. A record nobody samples gets it only when the callback asks.
func (c *tracedContext) Context() context.Context {
	if c.ctx == nil {
		c.ctx = trace.ContextWithSpanContext(c.baseContext(), c.sc)
	}
	return c.ctx
}

func (c *tracedContext) baseContext() context.Context {
	if c.base != nil {
		return c.base
	}
	return c.gokaContext.Context()
}

// childSampled says, with a known policy, whether a span that is a child
// of sc would be sampled. A root (no sc) counts as sampled: it is decided
// when it starts.
func (c *tracedContext) childSampled() bool {
	if !c.sc.IsValid() {
		return true
	}
	sampled, _ := c.g.sampling.sampled(c.sc)
	return sampled
}

// Emit writes to an output topic under a PRODUCER span "send <topic>". goka
// emits asynchronously and keeps the delivery to itself (it fails the
// processor on errors): with the group's producer wrapped in Producer, the
// span ends when Kafka acknowledges the record and carries its partition
// and offset, as the elves' do; otherwise it covers handing the record over.
//
// A record nobody samples carries the traceparent of a span that records
// nothing, whose sampled flag is off: W3C Trace Context asks every
// participant to pass the decision on, and a consumer with a parent-based
// sampler (the SDKs' default) would otherwise start a trace of its own for
// each record the packer decided not to trace.
func (c *tracedContext) Emit(topic goka.Stream, key string, value any, options ...goka.ContextOption) {
	g := c.g
	if g.sampling.known && c.sc.IsValid() {
		if sampled, tid := g.sampling.sampled(c.sc); !sampled {
			c.emit(topic, key, value, unsampledChild(c.sc, tid), c.base, options)
			return
		}
	}
	spans := g.send.of(string(topic))
	ctx, span := g.tracer.Start(c.Context(), spans.name, producerSpan...)
	sc := span.SpanContext()
	emit := func() { c.emit(topic, key, value, sc, ctx, options) }
	if !span.IsRecording() {
		emit()
		return
	}
	for _, l := range c.links {
		span.AddLink(l)
	}
	buf := getAttrs()
	a := append(*buf, spans.attrs...)
	if key != "" {
		a = append(a, semconv.MessagingKafkaMessageKey(key))
	}
	if g.cfg.OnSend != nil {
		a = g.cfg.OnSend(span, string(topic), value, a)
	}
	*buf = a
	send := &pendingSend{span: span, attrs: buf}
	g.sending.Store(sc.SpanID(), send)
	defer func() {
		// No Producer of this Goka took the record (or the Emit failed):
		// the span ends with the handing over.
		if _, unclaimed := g.sending.LoadAndDelete(sc.SpanID()); unclaimed {
			send.end(nil, nil)
		}
	}()
	emit()
}

// emit hands the record to goka with the headers of span context sc and
// the baggage of ctx (nil: none). goka copies an emit's headers before it
// hands them on (Headers.Merged, once for the option and once more with
// its default headers): the map is free again when Emit returns, and the
// next record's headers reuse it.
func (c *tracedContext) emit(topic goka.Stream, key string, value any, sc trace.SpanContext, ctx context.Context, options []goka.ContextOption) {
	h := headersOf(sc, ctx)
	c.gokaContext.Emit(topic, key, value, append(options, goka.WithCtxEmitHeaders(h))...)
	clear(h)
	headerMaps.Put(h)
}

// headerMaps lends the maps headersOf fills.
var headerMaps = sync.Pool{New: func() any { return make(goka.Headers, 3) }}

// pendingSend is a send span that waits for Kafka's answer, with its
// attributes: they are set when it ends, all at once with the partition
// and offset. Set at the start and those two at the end, the SDK copied
// them all again to make room for two more.
type pendingSend struct {
	span  trace.Span
	attrs *[]attribute.KeyValue // from attrBufs
}

// end ends the span with Kafka's answer: msg as goka's producer finished
// its promise (with the record's partition, and on success its offset),
// or nil when there is none.
func (p *pendingSend) end(msg *sarama.ProducerMessage, err error) {
	a := *p.attrs
	if msg != nil {
		a = append(a, semconv.MessagingDestinationPartitionID(partitionID(msg.Partition)))
		if err == nil {
			a = append(a, semconv.MessagingKafkaOffset(int(msg.Offset)))
		}
	}
	if err != nil {
		p.span.RecordError(err)
		p.span.SetStatus(codes.Error, err.Error())
		a = append(a, semconv.ErrorTypeKey.String(errorType(err)))
	}
	p.span.SetAttributes(a...)
	putAttrs(p.attrs, a)
	p.span.End()
}

// Loopback and SetValue are hops inside the group: no span, and no headers
// (see Resume: a processor that needs the context after such a hop keeps it
// in the value). tracedContext does not override them.

// Producer wraps the group's goka producer so that the send span of each
// record an Emit writes ends when Kafka answers, with the partition the
// record went to and its offset, or the error. goka calls its producer
// from within Emit, which is how a record is matched with its span: by the
// span id its traceparent carries. On a nil *Goka it returns p.
func (g *Goka) Producer(p goka.Producer) goka.Producer {
	if g == nil {
		return p
	}
	return &producer{Producer: p, g: g}
}

type producer struct {
	goka.Producer
	g *Goka
}

func (p *producer) EmitWithHeaders(topic, key string, value []byte, headers goka.Headers) *goka.Promise {
	promise := p.Producer.EmitWithHeaders(topic, key, value, headers)
	if sid, ok := sampledSpanID(headers[traceparentHeader]); ok {
		if s, ok := p.g.sending.LoadAndDelete(sid); ok {
			send := s.(*pendingSend)
			promise.ThenWithMessage(send.end)
		}
	}
	return promise
}

package kafkatrace

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
	"go.opentelemetry.io/otel"
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
	// direct: the group's producer is wrapped (Producer), and records go
	// to it with their trace context through out instead of goka's
	// headers.
	direct atomic.Bool
	out    handoff
}

// NewGoka returns nil when tp is nil or a no-op provider.
func NewGoka(tp trace.TracerProvider, cfg GokaConfig) *Goka {
	if !Enabled(tp) {
		return nil
	}
	server := ServerAttrs(cfg.Brokers)
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
		return ErrorType(err)
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
			c.emit(topic, key, value, outgoing{sc: unsampledChild(c.sc, tid), ctx: c.base}, options)
			return
		}
	}
	spans := g.send.of(string(topic))
	ctx, span := g.tracer.Start(c.Context(), spans.name, producerSpan...)
	o := outgoing{sc: span.SpanContext(), ctx: ctx}
	if span.IsRecording() {
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
		o.send = &pendingSend{span: span, attrs: buf}
	}
	c.emit(topic, key, value, o, options)
}

// emit hands the record to goka with its trace context o: straight to the
// group's producer when it is wrapped (Producer), else in goka's headers.
// A send span that no producer took ends with the handing over, or with
// the Emit that failed (goka's ctx.Fail panics).
func (c *tracedContext) emit(topic goka.Stream, key string, value any, o outgoing, options []goka.ContextOption) {
	g := c.g
	if g.direct.Load() {
		id := recordID{string(topic), key}
		if g.out.put(id, o) {
			handed := false
			defer func() {
				o, left := g.out.take(id)
				if !left {
					return
				}
				o.endUnanswered()
				if handed {
					// goka did not call its producer from within Emit, as
					// v1.1.17 does: the record went without its trace
					// context. From now on it goes in goka's headers.
					g.direct.Store(false)
					otel.Handle(fmt.Errorf("kafkatrace: a record to %s went out without its trace context: goka did not hand it to its producer within Emit; trace context now goes in goka's headers", topic))
				}
			}()
			c.gokaContext.Emit(topic, key, value, options...)
			handed = true
			return
		}
	}
	defer o.endUnanswered()
	// goka copies an emit's headers before it hands them on
	// (Headers.Merged, once for the option and once more with its default
	// headers): the map is free again when Emit returns, and the next
	// record's headers reuse it.
	h := headerMaps.Get().(goka.Headers)
	putHeaders(h, o.sc, o.ctx)
	c.gokaContext.Emit(topic, key, value, append(options, goka.WithCtxEmitHeaders(h))...)
	clear(h)
	headerMaps.Put(h)
}

// headerMaps lends the maps of records' headers that goka copies.
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
		a = append(a, semconv.ErrorTypeKey.String(ErrorType(err)))
	}
	p.span.SetAttributes(a...)
	putAttrs(p.attrs, a)
	p.span.End()
}

// Loopback and SetValue are hops inside the group: no span, and no headers
// (see Resume: a processor that needs the context after such a hop keeps it
// in the value). tracedContext does not override them.

// outgoing is the trace context of a record on its way to the producer.
type outgoing struct {
	sc   trace.SpanContext
	ctx  context.Context // whose baggage the record carries; nil: none
	send *pendingSend    // its send span when it records
}

// endUnanswered ends o's send span, if any, with no answer from Kafka.
func (o outgoing) endUnanswered() {
	if o.send != nil {
		o.send.end(nil, nil)
	}
}

// Producer wraps the group's goka producer. goka calls its producer from
// within Emit, so the trace context of each record an Emit writes can go
// to it directly rather than through goka's headers, which goka copies
// twice per record (Headers.Merged): the record's headers are made once,
// here. The send span then ends when p's promise finishes (Kafka's answer;
// for the packer's producer, which releases answers in write order, once
// every earlier write is answered too), with the partition the record went
// to and its offset, or the error, as the elves' do. On a nil *Goka it
// returns p.
//
// A record is matched with its trace context by topic and key: each of
// the group's records that another of its goroutines may write with the
// same topic and key at the same moment goes through Process or Resume
// (when two such records are written at once, the second goes through
// goka's headers).
func (g *Goka) Producer(p goka.Producer) goka.Producer {
	if g == nil {
		return p
	}
	g.direct.Store(true)
	return &producer{Producer: p, g: g}
}

type producer struct {
	goka.Producer
	g *Goka
}

func (p *producer) EmitWithHeaders(topic, key string, value []byte, headers goka.Headers) *goka.Promise {
	if _, carried := headers[traceparentHeader]; carried {
		return p.Producer.EmitWithHeaders(topic, key, value, headers)
	}
	o, ok := p.g.out.take(recordID{topic, key})
	if !ok {
		return p.Producer.EmitWithHeaders(topic, key, value, headers)
	}
	// A map of the record's own: the producer below may keep it.
	h := make(goka.Headers, 1+len(headers))
	maps.Copy(h, headers)
	putHeaders(h, o.sc, o.ctx)
	promise := p.Producer.EmitWithHeaders(topic, key, value, h)
	if o.send != nil {
		promise.ThenWithMessage(o.send.end)
	}
	return promise
}

// recordID is a record by topic and key, as an Emit and the producer see it.
type recordID struct{ topic, key string }

// handoff holds the trace context of the records between Emit and the
// producer; pending counts them, so that the producer looks for none when
// there is none (a table or loop record, which goka writes without Emit).
type handoff struct {
	pending atomic.Int64
	mu      sync.Mutex
	m       map[recordID]outgoing
}

// put holds o for the record id; false when another record with that id is
// on its way.
func (h *handoff) put(id recordID, o outgoing) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, busy := h.m[id]; busy {
		return false
	}
	if h.m == nil {
		h.m = map[recordID]outgoing{}
	}
	h.m[id] = o
	h.pending.Add(1)
	return true
}

func (h *handoff) take(id recordID) (outgoing, bool) {
	if h.pending.Load() == 0 {
		return outgoing{}, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	o, ok := h.m[id]
	if ok {
		delete(h.m, id)
		h.pending.Add(-1)
	}
	return o, ok
}

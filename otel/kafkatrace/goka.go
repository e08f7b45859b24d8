package kafkatrace

import (
	"context"
	"fmt"
	"slices"

	"github.com/lovoo/goka"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
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
	// OnSend, when set, sees every "send <topic>" span that an Emit makes,
	// with the value emitted, before the span ends: a processor sets the
	// status of its dead letters there.
	OnSend func(span trace.Span, topic string, value any)
}

// Goka instruments the callbacks of one goka group. A nil *Goka does nothing:
// its middlewares return the callback unchanged.
type Goka struct {
	cfg    GokaConfig
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
	server []attribute.KeyValue
}

// NewGoka returns nil when tp is nil or a no-op provider.
func NewGoka(tp trace.TracerProvider, cfg GokaConfig) *Goka {
	if !Enabled(tp) {
		return nil
	}
	return &Goka{cfg: cfg, tracer: tp.Tracer(ScopeName), prop: propagator(), server: serverAttrs(cfg.Brokers)}
}

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
			parent := g.prop.Extract(gctx.Context(), HeadersCarrier(gctx.Headers()))
			// The body size is known for raw inputs (codec.Bytes); a null
			// value (a tombstone) reaches the callback only with NilProcess.
			size, tombstone := -1, msg == nil
			if b, ok := msg.([]byte); ok {
				size, tombstone = len(b), b == nil
			}
			topic := string(gctx.Topic())
			opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer)}
			if sc := trace.SpanContextFromContext(parent); sc.IsValid() {
				opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
			}
			ctx, span := g.tracer.Start(parent, OpProcess+" "+topic, opts...)
			// Attributes only for spans that are kept: at 10 % sampling,
			// building them for the other 90 % was most of a span's cost.
			if span.IsRecording() {
				span.SetAttributes(consumerAttrs(topic, gctx.Partition(), gctx.Offset(), g.cfg.Group, g.cfg.ClientID, gctx.Key(), size, tombstone, g.server)...)
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
			next(&tracedContext{gokaContext: gctx, ctx: ctx, g: g}, msg)
		}
	}
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
// hop they cost a W3C string written and parsed and two header maps (ours
// and goka's copy in Headers.Merged), which made tracing cost as much as the
// packing.
func (g *Goka) Resume(gctx goka.Context, sc trace.SpanContext) goka.Context {
	if g == nil || !sc.IsValid() {
		return gctx
	}
	return &tracedContext{gokaContext: gctx, ctx: trace.ContextWithRemoteSpanContext(gctx.Context(), sc), g: g}
}

// WithContext returns gctx with ctx as its trace context: what the callback
// then writes carries ctx (say, a span of its own) instead. Outside Process
// or Resume it returns gctx unchanged.
func WithContext(gctx goka.Context, ctx context.Context) goka.Context {
	if tc, ok := gctx.(*tracedContext); ok {
		return &tracedContext{gokaContext: tc.gokaContext, ctx: ctx, g: tc.g, links: tc.links}
	}
	return gctx
}

// WithLinks returns gctx whose "send" spans also link to links: a record
// caused by more than the one being processed (its parent) can point at the
// others. Outside Process or Resume it returns gctx unchanged.
func WithLinks(gctx goka.Context, links ...trace.Link) goka.Context {
	if tc, ok := gctx.(*tracedContext); ok {
		return &tracedContext{gokaContext: tc.gokaContext, ctx: tc.ctx, g: tc.g, links: append(slices.Clip(tc.links), links...)}
	}
	return gctx
}

// gokaContext names the embedded goka.Context, whose own Context method
// tracedContext overrides.
type gokaContext = goka.Context

// tracedContext is a goka.Context whose writes carry a trace context.
type tracedContext struct {
	gokaContext
	ctx   context.Context
	g     *Goka
	links []trace.Link // of every send span
}

func (c *tracedContext) Context() context.Context { return c.ctx }

func (c *tracedContext) headers(ctx context.Context) goka.ContextOption {
	h := goka.Headers{}
	c.g.prop.Inject(ctx, HeadersCarrier(h))
	return goka.WithCtxEmitHeaders(h)
}

// Emit writes to an output topic under a PRODUCER span "send <topic>". goka
// emits asynchronously and keeps the delivery to itself (it fails the
// processor on errors), so the span covers handing the record over.
func (c *tracedContext) Emit(topic goka.Stream, key string, value any, options ...goka.ContextOption) {
	ctx, span := c.g.tracer.Start(c.ctx, OpSend+" "+string(topic),
		trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithLinks(c.links...))
	defer span.End()
	if span.IsRecording() {
		span.SetAttributes(producerAttrs(string(topic), c.g.cfg.ClientID, key, -1, c.g.server)...)
	}
	if c.g.cfg.OnSend != nil {
		c.g.cfg.OnSend(span, string(topic), value)
	}
	c.gokaContext.Emit(topic, key, value, append(options, c.headers(ctx))...)
}

// Loopback and SetValue are hops inside the group: no span, and no headers
// (see Resume: a processor that needs the context after such a hop keeps it
// in the value). tracedContext does not override them.

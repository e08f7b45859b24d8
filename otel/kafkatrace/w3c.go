package kafkatrace

import (
	"bytes"
	"context"
	"encoding/hex"

	"github.com/lovoo/goka"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// The W3C headers, read and written here straight from and into
// goka.Headers: the propagators (carriers.go, for kgo records and anyone
// else) return a context or take one, two allocations per record for what
// is a span context, and build the traceparent as a string that the carrier
// copies again into bytes. Every record's headers go through this, sampled
// or not, so it is the bulk of what a record nobody samples costs. The
// result is what propagation.TraceContext and propagation.Baggage read and
// write (TestW3CMatchesThePropagators).
const (
	traceparentHeader = "traceparent"
	tracestateHeader  = "tracestate"
	baggageHeader     = "baggage"
	traceparentLen    = 55 // version 00
)

// remoteSpanContext is the span context the headers carry, remote; invalid
// when they carry none (or a malformed one), as TraceContext.Extract reads
// it: a tracestate that does not parse is ignored.
func remoteSpanContext(h goka.Headers) trace.SpanContext {
	tp := h[traceparentHeader]
	if len(tp) == 0 {
		return trace.SpanContext{}
	}
	var ver, flags [1]byte
	var scc trace.SpanContextConfig
	if !hexPart(ver[:], &tp) || ver[0] > 254 ||
		!hexPart(scc.TraceID[:], &tp) || !hexPart(scc.SpanID[:], &tp) || !hexPart(flags[:], &tp) {
		return trace.SpanContext{}
	}
	// Version 0 allows no further fields and no reserved flag bit; later
	// versions may add both.
	if ver[0] == 0 && (len(tp) != 0 || flags[0] > 3) {
		return trace.SpanContext{}
	}
	scc.TraceFlags = trace.TraceFlags(flags[0]) & (trace.FlagsSampled | trace.FlagsRandom)
	if ts := h[tracestateHeader]; len(ts) > 0 {
		scc.TraceState, _ = trace.ParseTraceState(string(ts))
	}
	scc.Remote = true
	sc := trace.NewSpanContext(scc)
	if !sc.IsValid() {
		return trace.SpanContext{}
	}
	return sc
}

// hexPart decodes the next '-'-separated part of *rest into dst: exactly
// 2*len(dst) lower-case hex digits.
func hexPart(dst []byte, rest *[]byte) bool {
	part, left, _ := bytes.Cut(*rest, []byte{'-'})
	*rest = left
	if len(part) != 2*len(dst) {
		return false
	}
	// Every digit's value ORed together: one check finds any byte that is
	// not a digit (0xff in hexValue).
	var bad byte
	for i := range dst {
		hi, lo := hexValue[part[2*i]], hexValue[part[2*i+1]]
		dst[i] = hi<<4 | lo
		bad |= hi | lo
	}
	return bad <= 0xf
}

// hexValue is the value of each lower-case hex digit, 0xff for any other
// byte.
var hexValue = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i, c := range []byte("0123456789abcdef") {
		t[c] = byte(i)
	}
	return t
}()

// appendTraceparent appends sc's traceparent (version 00) to b.
func appendTraceparent(b []byte, sc trace.SpanContext) []byte {
	tid, sid := sc.TraceID(), sc.SpanID()
	b = append(b, "00-"...)
	b = hex.AppendEncode(b, tid[:])
	b = append(b, '-')
	b = hex.AppendEncode(b, sid[:])
	b = append(b, '-')
	return hex.AppendEncode(b, []byte{byte(sc.TraceFlags() & (trace.FlagsSampled | trace.FlagsRandom))})
}

// putHeaders puts into h the headers of a record written in the span sc:
// its traceparent and tracestate, and the baggage of ctx (nil: none).
func putHeaders(h goka.Headers, sc trace.SpanContext, ctx context.Context) {
	h[traceparentHeader] = appendTraceparent(make([]byte, 0, traceparentLen), sc)
	if ts := sc.TraceState(); ts.Len() > 0 {
		h[tracestateHeader] = []byte(ts.String())
	}
	if ctx != nil {
		if b := baggage.FromContext(ctx); b.Len() > 0 {
			h[baggageHeader] = []byte(b.String())
		}
	}
}

// withBaggage is ctx with the baggage the headers carry; ctx itself when
// they carry none (the usual case, which costs nothing).
func withBaggage(ctx context.Context, h goka.Headers) (context.Context, bool) {
	if len(h[baggageHeader]) == 0 {
		return ctx, false
	}
	return propagation.Baggage{}.Extract(ctx, HeadersCarrier(h)), true
}

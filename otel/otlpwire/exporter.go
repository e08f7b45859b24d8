// Package otlpwire is an OTLP span exporter that sends what the OpenTelemetry
// Go exporter (otlptrace) sends, through the same clients, for less CPU: a
// span with 14 attributes and a link costs its process 5-8 µs from Start
// to the encoded request instead of 13-16 µs (BenchmarkSpanCost in
// otel/telemetry, which runs both; 2 shared vCPUs, 2026-12-03).
//
// The clients are otlptracegrpc.NewClient and otlptracehttp.NewClient, so
// endpoints, TLS, headers, compression, timeouts and retries come from the
// same options and OTEL_EXPORTER_OTLP_* variables. What differs is how a
// batch becomes a request. otlptrace builds a generated protobuf message per
// span, link, attribute and attribute value (three allocations per
// attribute), and protobuf-go then walks that tree twice, once to size it
// and once to write it: two thirds of a span's cost. Here each span, and
// each resource and scope, is written straight in protobuf wire format
// (protowire) into a buffer the exporter keeps from batch to batch, and
// travels as the raw contents of an otherwise empty generated message:
// protobuf-go copies raw contents as they are, and a receiver cannot tell
// them from fields that were set. The request, its ResourceSpans and
// ScopeSpans are real generated messages, one tracepb.Span per span, as the
// clients expect (they count the spans).
//
// The request holds the same fields with the same values as otlptrace
// v1.47.0's (exporter_test.go compares them span by span). Unlike
// otlptrace, resources and scopes keep the order in which the batch first
// names them.
package otlpwire

import (
	"context"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Exporter is a sdktrace.SpanExporter over an otlptrace.Client.
type Exporter struct {
	client otlptrace.Client
	stop   sync.Once

	// mu guards buf, the wire bytes of the batch being exported, and
	// messages, its spans' messages, both kept for the next batch: a
	// request only borrows them while UploadTraces runs. (The SDK never
	// exports concurrently on one exporter; mu makes that no assumption.)
	mu       sync.Mutex
	buf      []byte
	messages []tracepb.Span
}

var _ sdktrace.SpanExporter = (*Exporter)(nil)

// New starts client and returns an exporter that uploads through it.
func New(ctx context.Context, client otlptrace.Client) (*Exporter, error) {
	if err := client.Start(ctx); err != nil {
		return nil, fmt.Errorf("otlpwire: start %T: %w", client, err)
	}
	return &Exporter{client: client}, nil
}

// ExportSpans encodes spans and uploads them in one request.
func (e *Exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if cap(e.messages) < len(spans) {
		// A batch of 512 spans' messages is 100 KB, much of what a batch
		// allocated: made again for every batch, it cost a fifth of the
		// export in the garbage collector.
		e.messages = make([]tracepb.Span, len(spans))
	}
	var rs []*tracepb.ResourceSpans
	rs, e.buf = encode(spans, e.buf[:0], e.messages[:len(spans)])
	if len(rs) == 0 {
		return nil
	}
	if err := e.client.UploadTraces(ctx, rs); err != nil {
		return fmt.Errorf("traces export: %w", err)
	}
	return nil
}

// Shutdown stops the client, once; later exports fail with the client's error.
func (e *Exporter) Shutdown(ctx context.Context) error {
	var err error
	e.stop.Do(func() { err = e.client.Stop(ctx) })
	return err
}

// encode groups spans by resource and instrumentation scope, as OTLP
// requests do, each span's fields already in wire format in buf, which it
// returns grown, and each span's message one of messages (one per span,
// reset here). Nil spans are skipped.
func encode(spans []sdktrace.ReadOnlySpan, buf []byte, messages []tracepb.Span) ([]*tracepb.ResourceSpans, []byte) {
	type scopeKey struct {
		resource attribute.Distinct
		scope    instrumentation.Scope
	}
	var (
		out     []*tracepb.ResourceSpans
		byRes   = map[attribute.Distinct]*tracepb.ResourceSpans{}
		byScope = map[scopeKey]*tracepb.ScopeSpans{}
	)
	for i, s := range spans {
		if s == nil {
			continue
		}
		res := s.Resource()
		rk := res.Equivalent()
		rs, ok := byRes[rk]
		if !ok {
			rs = &tracepb.ResourceSpans{Resource: resourceMessage(res), SchemaUrl: res.SchemaURL()}
			byRes[rk] = rs
			out = append(out, rs)
		}
		sk := scopeKey{rk, s.InstrumentationScope()}
		ss, ok := byScope[sk]
		if !ok {
			ss = &tracepb.ScopeSpans{Scope: scopeMessage(sk.scope), SchemaUrl: sk.scope.SchemaURL}
			byScope[sk] = ss
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		// Each span's bytes are a slice of buf. When append moves buf,
		// earlier slices keep the array they were cut from.
		start := len(buf)
		buf = appendSpan(buf, s)
		m := &messages[i]
		m.Reset()
		m.ProtoReflect().SetUnknown(protoreflect.RawFields(buf[start:len(buf):len(buf)]))
		ss.Spans = append(ss.Spans, m)
	}
	return out, buf
}

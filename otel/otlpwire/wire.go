package otlpwire

import (
	"math"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Field numbers of opentelemetry/proto/trace/v1/trace.proto and
// common/v1/common.proto (OTLP 1.x; they never change).
const (
	spanTraceID      protowire.Number = 1
	spanSpanID       protowire.Number = 2
	spanTraceState   protowire.Number = 3
	spanParentSpanID protowire.Number = 4
	spanName         protowire.Number = 5
	spanKind         protowire.Number = 6
	spanStart        protowire.Number = 7
	spanEnd          protowire.Number = 8
	spanAttributes   protowire.Number = 9
	spanDroppedAttrs protowire.Number = 10
	spanEvents       protowire.Number = 11
	spanDroppedEvts  protowire.Number = 12
	spanLinks        protowire.Number = 13
	spanDroppedLinks protowire.Number = 14
	spanStatus       protowire.Number = 15
	spanFlags        protowire.Number = 16

	eventTime         protowire.Number = 1
	eventName         protowire.Number = 2
	eventAttributes   protowire.Number = 3
	eventDroppedAttrs protowire.Number = 4

	linkTraceID      protowire.Number = 1
	linkSpanID       protowire.Number = 2
	linkAttributes   protowire.Number = 4
	linkDroppedAttrs protowire.Number = 5
	linkFlags        protowire.Number = 6

	statusMessage protowire.Number = 2
	statusCode    protowire.Number = 3

	resourceAttributes protowire.Number = 1

	scopeName       protowire.Number = 1
	scopeVersion    protowire.Number = 2
	scopeAttributes protowire.Number = 3

	kvKey   protowire.Number = 1
	kvValue protowire.Number = 2

	anyString protowire.Number = 1
	anyBool   protowire.Number = 2
	anyInt    protowire.Number = 3
	anyDouble protowire.Number = 4
	anyArray  protowire.Number = 5
	anyKVList protowire.Number = 6
	anyBytes  protowire.Number = 7

	// ArrayValue.values and KeyValueList.values.
	listValues protowire.Number = 1
)

// appendSpan appends the fields of s as an OTLP Span message's contents,
// field by field as otlptrace's transform sets them: proto3 scalars only
// when not zero, the status always.
func appendSpan(b []byte, s sdktrace.ReadOnlySpan) []byte {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	b = appendBytes(b, spanTraceID, tid[:])
	b = appendBytes(b, spanSpanID, sid[:])
	b = appendString(b, spanTraceState, sc.TraceState().String())
	parent := s.Parent()
	if psid := parent.SpanID(); psid.IsValid() {
		b = appendBytes(b, spanParentSpanID, psid[:])
	}
	b = appendString(b, spanName, s.Name())
	b = appendVarint(b, spanKind, uint64(kind(s.SpanKind())))
	b = appendFixed64(b, spanStart, unixNano(s.StartTime()))
	b = appendFixed64(b, spanEnd, unixNano(s.EndTime()))
	for _, kv := range s.Attributes() {
		b = appendKeyValue(b, spanAttributes, kv)
	}
	b = appendVarint(b, spanDroppedAttrs, clampUint32(s.DroppedAttributes()))
	for _, e := range s.Events() {
		var at int
		b, at = open(b, spanEvents)
		b = appendFixed64(b, eventTime, unixNano(e.Time))
		b = appendString(b, eventName, e.Name)
		for _, kv := range e.Attributes {
			b = appendKeyValue(b, eventAttributes, kv)
		}
		b = appendVarint(b, eventDroppedAttrs, clampUint32(e.DroppedAttributeCount))
		b = closeAt(b, at)
	}
	b = appendVarint(b, spanDroppedEvts, clampUint32(s.DroppedEvents()))
	for _, l := range s.Links() {
		// otlptrace sends no trace state for links; neither do we, so
		// that both exporters send the same.
		var at int
		b, at = open(b, spanLinks)
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		b = appendBytes(b, linkTraceID, ltid[:])
		b = appendBytes(b, linkSpanID, lsid[:])
		for _, kv := range l.Attributes {
			b = appendKeyValue(b, linkAttributes, kv)
		}
		b = appendVarint(b, linkDroppedAttrs, clampUint32(l.DroppedAttributeCount))
		b = appendFixed32(b, linkFlags, flags(l.SpanContext.TraceFlags(), l.SpanContext))
		b = closeAt(b, at)
	}
	b = appendVarint(b, spanDroppedLinks, clampUint32(s.DroppedLinks()))
	st := s.Status()
	var at int
	b, at = open(b, spanStatus)
	b = appendString(b, statusMessage, st.Description)
	b = appendVarint(b, statusCode, uint64(statusCodeOf(st.Code)))
	b = closeAt(b, at)
	return appendFixed32(b, spanFlags, flags(sc.TraceFlags(), parent))
}

// resourceMessage is r as a Resource (nil for nil, as otlptrace sends it).
func resourceMessage(r *resource.Resource) *resourcepb.Resource {
	if r == nil {
		return nil
	}
	var b []byte
	for it := r.Iter(); it.Next(); {
		b = appendKeyValue(b, resourceAttributes, it.Attribute())
	}
	m := &resourcepb.Resource{}
	m.ProtoReflect().SetUnknown(protoreflect.RawFields(b))
	return m
}

// scopeMessage is s as an InstrumentationScope, nil for the zero scope.
func scopeMessage(s instrumentation.Scope) *commonpb.InstrumentationScope {
	if s == (instrumentation.Scope{}) {
		return nil
	}
	b := appendString(nil, scopeName, s.Name)
	b = appendString(b, scopeVersion, s.Version)
	for it := s.Attributes.Iter(); it.Next(); {
		b = appendKeyValue(b, scopeAttributes, it.Attribute())
	}
	m := &commonpb.InstrumentationScope{}
	m.ProtoReflect().SetUnknown(protoreflect.RawFields(b))
	return m
}

// appendKeyValue appends kv as a KeyValue message in field num. The value
// message is always there, empty for an EMPTY value.
//
// A string, integer or boolean value (all of a span's attributes but a
// rare few) is written with its lengths worked out first, so that nothing
// is moved: nearly every span's attributes are these, and moving each
// KeyValue's bytes twice to put two lengths in front of them was a third
// of encoding a span.
func appendKeyValue(b []byte, num protowire.Number, kv attribute.KeyValue) []byte {
	var value int // the AnyValue message's size
	switch kv.Value.Type() {
	case attribute.STRING:
		value = protowire.SizeTag(anyString) + protowire.SizeBytes(len(kv.Value.AsString()))
	case attribute.INT64:
		value = protowire.SizeTag(anyInt) + protowire.SizeVarint(uint64(kv.Value.AsInt64()))
	case attribute.BOOL:
		value = protowire.SizeTag(anyBool) + 1
	default:
		return appendKeyValueMoving(b, num, kv)
	}
	size := protowire.SizeBytes(value) + protowire.SizeTag(kvValue)
	if kv.Key != "" {
		size += protowire.SizeTag(kvKey) + protowire.SizeBytes(len(kv.Key))
	}
	b = protowire.AppendVarint(protowire.AppendTag(b, num, protowire.BytesType), uint64(size))
	b = appendString(b, kvKey, string(kv.Key))
	b = protowire.AppendVarint(protowire.AppendTag(b, kvValue, protowire.BytesType), uint64(value))
	return appendAnyValue(b, kv.Value)
}

// appendKeyValueMoving is appendKeyValue for any value: it writes the
// value, then puts the lengths in front.
func appendKeyValueMoving(b []byte, num protowire.Number, kv attribute.KeyValue) []byte {
	b, at := open(b, num)
	b = appendString(b, kvKey, string(kv.Key))
	b, vat := open(b, kvValue)
	b = appendAnyValue(b, kv.Value)
	return closeAt(closeAt(b, vat), at)
}

// appendAnyValue appends the contents of an AnyValue message. Its value is
// a oneof, written even when zero (false, 0, "").
func appendAnyValue(b []byte, v attribute.Value) []byte {
	switch v.Type() {
	case attribute.BOOL:
		return protowire.AppendVarint(protowire.AppendTag(b, anyBool, protowire.VarintType), protowire.EncodeBool(v.AsBool()))
	case attribute.INT64:
		return protowire.AppendVarint(protowire.AppendTag(b, anyInt, protowire.VarintType), uint64(v.AsInt64()))
	case attribute.FLOAT64:
		return protowire.AppendFixed64(protowire.AppendTag(b, anyDouble, protowire.Fixed64Type), math.Float64bits(v.AsFloat64()))
	case attribute.STRING:
		return protowire.AppendString(protowire.AppendTag(b, anyString, protowire.BytesType), v.AsString())
	case attribute.BYTESLICE:
		return protowire.AppendBytes(protowire.AppendTag(b, anyBytes, protowire.BytesType), v.AsByteSlice())
	case attribute.BOOLSLICE:
		return appendArray(b, v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		return appendArray(b, v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		return appendArray(b, v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		return appendArray(b, v.AsStringSlice(), attribute.StringValue)
	case attribute.SLICE:
		return appendArray(b, v.AsSlice(), func(v attribute.Value) attribute.Value { return v })
	case attribute.MAP:
		b, at := open(b, anyKVList)
		for _, kv := range v.AsMap() {
			b = appendKeyValue(b, listValues, kv)
		}
		return closeAt(b, at)
	case attribute.EMPTY:
		return b
	}
	return protowire.AppendString(protowire.AppendTag(b, anyString, protowire.BytesType), "INVALID")
}

// appendArray appends an ArrayValue in the AnyValue's array field.
func appendArray[T any](b []byte, elems []T, value func(T) attribute.Value) []byte {
	b, at := open(b, anyArray)
	for _, e := range elems {
		var vat int
		b, vat = open(b, listValues)
		b = appendAnyValue(b, value(e))
		b = closeAt(b, vat)
	}
	return closeAt(b, at)
}

// open appends the tag of a length-delimited field; its contents follow
// from the returned offset, and closeAt puts their length in front of them.
func open(b []byte, num protowire.Number) ([]byte, int) {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return b, len(b)
}

// closeAt prefixes the contents that start at offset at with their length
// as a varint, moving them right by its size (one byte below 128, as
// nearly every attribute is).
func closeAt(b []byte, at int) []byte {
	n := len(b) - at
	k := protowire.SizeVarint(uint64(n))
	for range k {
		b = append(b, 0)
	}
	copy(b[at+k:], b[at:at+n])
	protowire.AppendVarint(b[:at], uint64(n))
	return b
}

func appendBytes(b []byte, num protowire.Number, v []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), v)
}

// appendString appends a proto3 string field: nothing when empty.
func appendString(b []byte, num protowire.Number, v string) []byte {
	if v == "" {
		return b
	}
	return protowire.AppendString(protowire.AppendTag(b, num, protowire.BytesType), v)
}

// appendVarint appends a proto3 integer or enum field: nothing when zero.
func appendVarint(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), v)
}

func appendFixed64(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendFixed64(protowire.AppendTag(b, num, protowire.Fixed64Type), v)
}

func appendFixed32(b []byte, num protowire.Number, v uint32) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendFixed32(protowire.AppendTag(b, num, protowire.Fixed32Type), v)
}

// flags are the W3C trace flags in the low byte and whether the parent (or
// the linked span) is remote, with the bit that says that this is known.
func flags(tf trace.TraceFlags, parent trace.SpanContext) uint32 {
	f := uint32(tf) | uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK)
	if parent.IsRemote() {
		f |= uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)
	}
	return f
}

func kind(k trace.SpanKind) tracepb.Span_SpanKind {
	switch k {
	case trace.SpanKindInternal:
		return tracepb.Span_SPAN_KIND_INTERNAL
	case trace.SpanKindServer:
		return tracepb.Span_SPAN_KIND_SERVER
	case trace.SpanKindClient:
		return tracepb.Span_SPAN_KIND_CLIENT
	case trace.SpanKindProducer:
		return tracepb.Span_SPAN_KIND_PRODUCER
	case trace.SpanKindConsumer:
		return tracepb.Span_SPAN_KIND_CONSUMER
	}
	return tracepb.Span_SPAN_KIND_UNSPECIFIED
}

func statusCodeOf(c codes.Code) tracepb.Status_StatusCode {
	switch c {
	case codes.Ok:
		return tracepb.Status_STATUS_CODE_OK
	case codes.Error:
		return tracepb.Status_STATUS_CODE_ERROR
	}
	return tracepb.Status_STATUS_CODE_UNSET
}

// unixNano is t in Unix nanoseconds, 0 before 1970 (as otlptrace sends it).
func unixNano(t time.Time) uint64 { return uint64(max(0, t.UnixNano())) }

func clampUint32(v int) uint64 {
	return uint64(min(max(v, 0), math.MaxUint32))
}

package servicemap

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/northpole-workshop/northpole/internal/record"
)

// Attribute keys the map reads.
const (
	keyService   = "service.name"
	keyMessaging = "messaging.system"
	keyDest      = "messaging.destination.name"
	keyDB        = "db.system"
	keyDBName    = "db.system.name" // the current name; SigNoz reads db.system
	keyDead      = record.ReasonAttribute
	unknownSvc   = "unknown_service"
)

// FromSDK converts spans of the Go SDK (an exporter's batch).
func FromSDK(spans []sdktrace.ReadOnlySpan) []Span {
	out := make([]Span, 0, len(spans))
	for _, s := range spans {
		sp := Span{
			TraceID: s.SpanContext().TraceID(), SpanID: s.SpanContext().SpanID(),
			Name: s.Name(), Kind: Kind(s.SpanKind()), Duration: s.EndTime().Sub(s.StartTime()),
			Error: s.Status().Code == codes.Error, Service: unknownSvc,
		}
		if s.Parent().IsValid() {
			sp.ParentSpanID = s.Parent().SpanID()
		}
		if r := s.Resource(); r != nil {
			if v, ok := r.Set().Value(keyService); ok && v.AsString() != "" {
				sp.Service = v.AsString()
			}
		}
		for _, a := range s.Attributes() {
			switch a.Key {
			case keyMessaging:
				sp.Messaging = a.Value.AsString()
			case keyDest:
				sp.Destination = a.Value.AsString()
			case keyDB:
				sp.DB = a.Value.AsString()
			case keyDBName:
				if sp.DB == "" {
					sp.DB = a.Value.AsString()
				}
			case keyDead:
				sp.DeadLetter = true
			}
		}
		out = append(out, sp)
	}
	return out
}

// Exporter is an sdktrace.SpanExporter that feeds a Builder: register it
// (behind a batch span processor) to draw the map of this process's spans.
type Exporter struct{ B *Builder }

func (e Exporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.B.Add(FromSDK(spans))
	return nil
}

func (e Exporter) Shutdown(context.Context) error { return nil }

// FromProto converts the resource spans of one OTLP request.
func FromProto(rss []*tracepb.ResourceSpans) []Span {
	var out []Span
	for _, rs := range rss {
		svc := unknownSvc
		if rs.GetResource() != nil {
			for _, a := range rs.GetResource().GetAttributes() {
				if a.GetKey() == keyService && a.GetValue().GetStringValue() != "" {
					svc = a.GetValue().GetStringValue()
				}
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := Span{Service: svc, Name: s.GetName(), Kind: Kind(s.GetKind()),
					Error: s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR}
				copy(sp.TraceID[:], s.GetTraceId())
				copy(sp.SpanID[:], s.GetSpanId())
				copy(sp.ParentSpanID[:], s.GetParentSpanId())
				if e, st := s.GetEndTimeUnixNano(), s.GetStartTimeUnixNano(); e >= st {
					sp.Duration = time.Duration(e - st)
				}
				sp.Messaging, sp.Destination, sp.DB, sp.DeadLetter = attrsOf(s.GetAttributes())
				out = append(out, sp)
			}
		}
	}
	return out
}

func attrsOf(kvs []*commonpb.KeyValue) (messaging, dest, db string, dead bool) {
	for _, a := range kvs {
		switch a.GetKey() {
		case keyMessaging:
			messaging = a.GetValue().GetStringValue()
		case keyDest:
			dest = a.GetValue().GetStringValue()
		case keyDB:
			db = a.GetValue().GetStringValue()
		case keyDBName:
			if db == "" {
				db = a.GetValue().GetStringValue()
			}
		case keyDead:
			dead = true
		}
	}
	return messaging, dest, db, dead
}

// The OTLP JSON encoding differs from protobuf's canonical JSON: trace and
// span ids are hex, not base64, and enums are integers. So JSON is decoded
// here, for the fields the map needs, and not with protojson.
type jsonRequest struct {
	ResourceSpans []struct {
		Resource struct {
			Attributes []jsonKV `json:"attributes"`
		} `json:"resource"`
		ScopeSpans []jsonScope `json:"scopeSpans"`
		// Before OTLP 1.0 the scope was an "instrumentation library".
		LibrarySpans []jsonScope `json:"instrumentationLibrarySpans"`
	} `json:"resourceSpans"`
}

type jsonScope struct {
	Spans []jsonSpan `json:"spans"`
}

type jsonSpan struct {
	TraceID      string          `json:"traceId"`
	SpanID       string          `json:"spanId"`
	ParentSpanID string          `json:"parentSpanId"`
	Name         string          `json:"name"`
	Kind         json.RawMessage `json:"kind"`
	Start        json.RawMessage `json:"startTimeUnixNano"`
	End          json.RawMessage `json:"endTimeUnixNano"`
	Attributes   []jsonKV        `json:"attributes"`
	Status       struct {
		Code json.RawMessage `json:"code"`
	} `json:"status"`
}

type jsonKV struct {
	Key   string `json:"key"`
	Value struct {
		StringValue *string `json:"stringValue"`
	} `json:"value"`
}

// FromJSON converts one OTLP/JSON traces message (an ExportTraceServiceRequest
// or a TracesData: both are {"resourceSpans": [...]}).
func FromJSON(b []byte) ([]Span, error) {
	var req jsonRequest
	if err := json.Unmarshal(b, &req); err != nil {
		return nil, fmt.Errorf("OTLP JSON: %w", err)
	}
	var out []Span
	for _, rs := range req.ResourceSpans {
		svc := unknownSvc
		if v := stringAttr(rs.Resource.Attributes, keyService); v != "" {
			svc = v
		}
		for _, ss := range append(rs.ScopeSpans, rs.LibrarySpans...) {
			for _, s := range ss.Spans {
				sp, err := s.span(svc)
				if err != nil {
					return nil, fmt.Errorf("OTLP JSON: span %q: %w", s.Name, err)
				}
				out = append(out, sp)
			}
		}
	}
	return out, nil
}

// stringAttr is the last non-empty string value of key among attrs.
func stringAttr(attrs []jsonKV, key string) string {
	v := ""
	for _, a := range attrs {
		if a.Key == key && a.Value.StringValue != nil && *a.Value.StringValue != "" {
			v = *a.Value.StringValue
		}
	}
	return v
}

// span is s as the map sees it, in service svc.
func (s jsonSpan) span(svc string) (Span, error) {
	sp := Span{Service: svc, Name: s.Name}
	err := decodeID(sp.TraceID[:], s.TraceID)
	if err == nil {
		err = decodeID(sp.SpanID[:], s.SpanID)
	}
	if err == nil {
		err = decodeID(sp.ParentSpanID[:], s.ParentSpanID)
	}
	if err != nil {
		return Span{}, err
	}
	kind, err := enumValue(s.Kind, "SPAN_KIND_", []string{"UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER"})
	if err != nil {
		return Span{}, fmt.Errorf("kind: %w", err)
	}
	code, err := enumValue(s.Status.Code, "STATUS_CODE_", []string{"UNSET", "OK", "ERROR"})
	if err != nil {
		return Span{}, fmt.Errorf("status: %w", err)
	}
	sp.Kind, sp.Error = Kind(kind), code == 2
	start, err1 := nanos(s.Start)
	end, err2 := nanos(s.End)
	if err := errors.Join(err1, err2); err != nil {
		return Span{}, fmt.Errorf("times: %w", err)
	}
	if end >= start {
		sp.Duration = time.Duration(end - start)
	}
	sp.Messaging = stringAttr(s.Attributes, keyMessaging)
	sp.Destination = stringAttr(s.Attributes, keyDest)
	sp.DB = stringAttr(s.Attributes, keyDB)
	if sp.DB == "" {
		sp.DB = stringAttr(s.Attributes, keyDBName)
	}
	sp.DeadLetter = stringAttr(s.Attributes, keyDead) != ""
	return sp, nil
}

// decodeID reads a hex id (the OTLP JSON form), or base64 (what protobuf's
// canonical JSON would write) when it is not hex of the right length.
func decodeID(dst []byte, s string) error {
	if s == "" {
		return nil
	}
	if len(s) == 2*len(dst) {
		if _, err := hex.Decode(dst, []byte(s)); err == nil {
			return nil
		}
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b) != len(dst) {
		return fmt.Errorf("id %q is neither %d hex digits nor base64 of %d bytes", s, 2*len(dst), len(dst))
	}
	copy(dst, b)
	return nil
}

func enumValue(raw json.RawMessage, prefix string, names []string) (int, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	var n int
	if err := json.Unmarshal(raw, &n); err == nil {
		return n, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, fmt.Errorf("%s is neither a number nor a name", raw)
	}
	for i, name := range names {
		if s == prefix+name {
			return i, nil
		}
	}
	return 0, fmt.Errorf("unknown value %q", s)
}

// nanos reads a uint64 that OTLP JSON writes as a string (or a number).
func nanos(raw json.RawMessage) (uint64, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	s := strings.Trim(string(raw), `"`)
	return strconv.ParseUint(s, 10, 64)
}

// ReadJSON reads an OTLP JSON file into b: one JSON document, or one per line
// (what the collector's file exporter writes; each line is one batch).
func ReadJSON(r io.Reader, b *Builder) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("read OTLP JSON: %w", err)
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return errors.New("read OTLP JSON: empty input")
	}
	if json.Valid(trimmed) {
		spans, err := FromJSON(trimmed)
		if err != nil {
			return err
		}
		b.Add(spans)
		return nil
	}
	sc := bufio.NewScanner(bytes.NewReader(trimmed))
	sc.Buffer(make([]byte, 0, 1<<20), 1<<30)
	line := 0
	for sc.Scan() {
		line++
		l := bytes.TrimSpace(sc.Bytes())
		if len(l) == 0 {
			continue
		}
		spans, err := FromJSON(l)
		if err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		b.Add(spans)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read OTLP JSON: %w", err)
	}
	return nil
}

// ReadJSONFile reads the OTLP JSON file at path into b (ReadJSON).
func ReadJSONFile(path string, b *Builder) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("servicemap: %w", err)
	}
	defer f.Close()
	if err := ReadJSON(f, b); err != nil {
		return fmt.Errorf("servicemap: %s: %w", path, err)
	}
	return nil
}

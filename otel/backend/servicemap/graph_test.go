package servicemap

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/northpole-workshop/northpole/internal/record"
)

func sp(trace byte, id, parent byte, svc string, kind Kind, d time.Duration, failed bool) Span {
	s := Span{Service: svc, Name: svc + "-op", Kind: kind, Duration: d, Error: failed}
	s.TraceID[0] = trace
	s.SpanID[7] = id
	if parent != 0 {
		s.ParentSpanID[7] = parent
	}
	return s
}

func TestGraphEdgesFromParentsInOtherServices(t *testing.T) {
	b := NewBuilder(Options{})
	send := sp(1, 1, 0, "toy-elves", KindProducer, time.Millisecond, false)
	send.Messaging = "kafka"
	proc := sp(1, 2, 1, "packer", KindConsumer, 2*time.Millisecond, false)
	proc.Messaging = "kafka"
	inner := sp(1, 3, 2, "packer", KindInternal, time.Millisecond, false) // same service: no edge
	sleigh := sp(1, 4, 2, "sleigh", KindConsumer, 10*time.Millisecond, true)
	orphan := sp(2, 5, 9, "sleigh", KindConsumer, time.Millisecond, false)
	server := sp(3, 6, 0, "api", KindServer, time.Millisecond, false)
	server.DB = "postgresql" // SERVER spans draw no system edge
	query := sp(3, 7, 6, "compare", KindClient, 3*time.Millisecond, false)
	query.DB = "postgresql"
	b.Add([]Span{send, proc})
	b.Add([]Span{inner, sleigh, orphan, server, query})
	g := b.Graph()

	want := map[[2]string]struct {
		kind           string
		calls, errors  int
		p50, p99       time.Duration
		sameBatchEdges bool
	}{
		{"toy-elves", "packer"}:   {"service", 1, 0, 2 * time.Millisecond, 2 * time.Millisecond, true},
		{"packer", "sleigh"}:      {"service", 1, 1, 10 * time.Millisecond, 10 * time.Millisecond, false},
		{"api", "compare"}:        {"service", 1, 0, 3 * time.Millisecond, 3 * time.Millisecond, true},
		{"toy-elves", "kafka"}:    {"messaging", 1, 0, time.Millisecond, time.Millisecond, true},
		{"packer", "kafka"}:       {"messaging", 1, 0, 2 * time.Millisecond, 2 * time.Millisecond, true},
		{"compare", "postgresql"}: {"database", 1, 0, 3 * time.Millisecond, 3 * time.Millisecond, true},
	}
	if len(g.Edges) != len(want) {
		t.Errorf("edges %+v, want %d", g.Edges, len(want))
	}
	for k, w := range want {
		e, ok := g.Edge(k[0], k[1])
		if !ok {
			t.Errorf("no edge %s -> %s", k[0], k[1])
			continue
		}
		if e.Kind != w.kind || e.Calls != w.calls || e.Errors != w.errors || e.P50 != w.p50 || e.P99 != w.p99 {
			t.Errorf("edge %s -> %s = %+v, want %+v", k[0], k[1], e, w)
		}
	}
	if g.Orphans != 1 || g.Spans != 7 {
		t.Errorf("orphans %d spans %d, want 1 and 7", g.Orphans, g.Spans)
	}

	// SigNoz's join only sees parents in the child's batch: packer -> sleigh
	// crosses two batches and disappears.
	strict := NewBuilder(Options{SameBatch: true})
	strict.Add([]Span{send, proc})
	strict.Add([]Span{inner, sleigh, orphan, server, query})
	sg := strict.Graph()
	for k, w := range want {
		if _, ok := sg.Edge(k[0], k[1]); ok != w.sameBatchEdges {
			t.Errorf("same batch: edge %s -> %s present %v, want %v", k[0], k[1], ok, w.sameBatchEdges)
		}
	}
	// inner and sleigh have their parent in batch 1; the orphan none at all.
	if sg.Orphans != 1 || sg.CrossBatch != 2 || sg.Batches != 2 || !sg.SameBatch {
		t.Errorf("same batch: orphans %d, cross-batch %d, batches %d; want 1, 2, 2", sg.Orphans, sg.CrossBatch, sg.Batches)
	}

	var text, mer, svg bytes.Buffer
	if err := g.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := g.WriteMermaid(&mer); err != nil {
		t.Fatal(err)
	}
	if err := g.WriteSVG(&svg); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"toy-elves", "->", "packer", "sleigh", "1 errors"[2:], "p99"} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("text lacks %q:\n%s", s, text.String())
		}
	}
	if !strings.HasPrefix(mer.String(), "graph LR\n") || strings.Count(mer.String(), "-->") != 3 || strings.Count(mer.String(), "-.->") != 3 {
		t.Errorf("mermaid:\n%s", mer.String())
	}
	if !strings.HasPrefix(svg.String(), "<svg") || strings.Count(svg.String(), `<path class="edge" d="M`) != 6 || !strings.Contains(svg.String(), ">sleigh</text>") {
		t.Errorf("svg:\n%s", svg.String())
	}
}

// TestSameBatchReplaysTheCollectorsBatches: with SameBatch and a batch
// processor, a parent and its child in two requests are joined when the
// collector would send them on in one batch, by size or by its timer, and
// not otherwise; the zero BatchConfig makes each request a batch.
func TestSameBatchReplaysTheCollectorsBatches(t *testing.T) {
	small := BatchConfig{Size: 4, MaxSize: 5, Timeout: 10 * time.Second}
	parent := sp(1, 1, 0, "toy-elves", KindProducer, time.Millisecond, false)
	child := sp(1, 2, 1, "packer", KindConsumer, time.Millisecond, false)
	fill := func(n int) []Span { // roots of another trace
		out := make([]Span, n)
		for i := range out {
			out[i] = sp(9, 0, 0, "other", KindInternal, time.Millisecond, false)
		}
		return out
	}
	type req struct {
		at    time.Duration // since the first request
		spans []Span
	}
	with := func(spans ...[]Span) []Span { return slices.Concat(spans...) }
	one := func(s Span) []Span { return []Span{s} }
	for _, c := range []struct {
		name       string
		cfg        BatchConfig
		reqs       []req
		joined     bool
		batches    int
		crossBatch int
	}{
		{"two requests 1s apart: one batch", small, []req{{0, one(parent)}, {time.Second, one(child)}}, true, 1, 0},
		{"the timer fires between them", small, []req{{0, one(parent)}, {11 * time.Second, one(child)}}, false, 2, 1},
		{"timer phase: 9s and 11s are split", small, []req{{0, fill(1)}, {9 * time.Second, one(parent)}, {11 * time.Second, one(child)}}, false, 2, 1},
		{"timer phase: 10.5s and 19s are not", small, []req{{0, fill(1)}, {10500 * time.Millisecond, one(parent)}, {19 * time.Second, one(child)}}, true, 2, 0},
		{"idle gaps: 25s and 29s are not split", small, []req{{0, fill(1)}, {25 * time.Second, one(parent)}, {29 * time.Second, one(child)}}, true, 2, 0},
		{"the parent's request fills the batch", small, []req{{0, with(fill(3), one(parent))}, {time.Second, one(child)}}, false, 2, 1},
		{"the child's request fills it", small, []req{{0, with(fill(2), one(parent))}, {time.Second, one(child)}}, true, 1, 0},
		{"the timer re-arms after a send by size", small, []req{{0, fill(1)}, {5 * time.Second, fill(3)}, {9 * time.Second, one(parent)}, {11 * time.Second, one(child)}}, true, 2, 0},
		{"split at MaxSize inside one request", small, []req{{0, with(fill(4), one(parent), one(child))}}, false, 2, 1},
		{"MaxSize leaves both pending", small, []req{{0, with(fill(5), one(parent), one(child))}}, true, 2, 0},
		{"no batch processor: each request", BatchConfig{}, []req{{0, one(parent)}, {0, one(child)}}, false, 2, 1},
		{"no batch processor: one request", BatchConfig{}, []req{{0, with(one(parent), one(child))}}, true, 1, 0},
		{"SigNoz: 10,000 spans go at once", SigNozBatch, []req{{0, with(fill(9_999), one(parent))}, {time.Second, one(child)}}, false, 2, 1},
		{"SigNoz: the 10,000th span joins", SigNozBatch, []req{{0, with(fill(9_998), one(parent))}, {9 * time.Second, one(child)}}, true, 1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := NewBuilder(Options{SameBatch: true, Batch: c.cfg})
			t0 := time.Date(2026, 12, 24, 0, 0, 0, 0, time.UTC)
			for _, r := range c.reqs {
				b.now = func() time.Time { return t0.Add(r.at) }
				b.Add(r.spans)
			}
			g := b.Graph()
			if _, ok := g.Edge("toy-elves", "packer"); ok != c.joined || g.Batches != c.batches || g.CrossBatch != c.crossBatch {
				t.Errorf("edge %v, %d batches, %d cross-batch; want %v, %d, %d", ok, g.Batches, g.CrossBatch, c.joined, c.batches, c.crossBatch)
			}
			// Without SameBatch, the same spans always join.
			all := NewBuilder(Options{Batch: c.cfg})
			for _, r := range c.reqs {
				all.Add(r.spans)
			}
			if _, ok := all.Graph().Edge("toy-elves", "packer"); !ok {
				t.Errorf("without SameBatch: no edge")
			}
		})
	}
}

func TestQuantileNearestRank(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	if q := quantile(d, 0.5); q != 50 {
		t.Errorf("p50 of 1..100 = %d", q)
	}
	if q := quantile(d, 0.99); q != 99 {
		t.Errorf("p99 of 1..100 = %d", q)
	}
	if q := quantile(d[:1], 0.99); q != 1 {
		t.Errorf("p99 of one = %d", q)
	}
}

// An OTLP JSON file as the collector's file exporter writes it: one request
// per line, hex ids, integer enums, times as strings.
const otlpJSONLines = `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"toy-elves"}}]},"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"send toys","kind":4,"startTimeUnixNano":"1000","endTimeUnixNano":"3000","attributes":[{"key":"messaging.system","value":{"stringValue":"kafka"}}]}]}]}]}
{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"packer"}}]},"scopeSpans":[{"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b175","parentSpanId":"eee19b7ec3c1b174","name":"process toys","kind":"SPAN_KIND_CONSUMER","startTimeUnixNano":"4000","endTimeUnixNano":"9000","status":{"code":2}}]}]}]}
`

func TestReadJSONLines(t *testing.T) {
	b := NewBuilder(Options{})
	if err := ReadJSON(strings.NewReader(otlpJSONLines), b); err != nil {
		t.Fatal(err)
	}
	g := b.Graph()
	e, ok := g.Edge("toy-elves", "packer")
	if !ok || e.Calls != 1 || e.Errors != 1 || e.P99 != 5000 {
		t.Errorf("edge toy-elves -> packer = %+v (%v), want 1 call, 1 error, 5µs", e, ok)
	}
	if _, ok := g.Edge("toy-elves", "kafka"); !ok {
		t.Errorf("no messaging edge: %+v", g.Edges)
	}
	// Same batch: the two lines are two batches, so SigNoz would not join them.
	sb := NewBuilder(Options{SameBatch: true})
	if err := ReadJSON(strings.NewReader(otlpJSONLines), sb); err != nil {
		t.Fatal(err)
	}
	if _, ok := sb.Graph().Edge("toy-elves", "packer"); ok {
		t.Errorf("same batch: edge across two lines")
	}
	if err := ReadJSON(strings.NewReader(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz","spanId":"1"}]}]}]}`), NewBuilder(Options{})); err == nil {
		t.Errorf("bad ids accepted")
	}
}

// TestDeadLettersCountedApart: a span that carries the dead-letter reason
// counts on its edge as a dead letter, not an error, in each of the three
// forms the map reads (the Go SDK's spans, OTLP protobuf, OTLP JSON).
func TestDeadLettersCountedApart(t *testing.T) {
	const js = `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"packer"}}]},"scopeSpans":[{"spans":[` +
		`{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b176","name":"send dead-letters","kind":4,"startTimeUnixNano":"1000","endTimeUnixNano":"3000",` +
		`"attributes":[{"key":"messaging.system","value":{"stringValue":"kafka"}},{"key":"` + record.ReasonAttribute + `","value":{"stringValue":"malformed json"}}]}]}]}]}`
	fromJSON, err := FromJSON([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	kv := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	fromProto := FromProto([]*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{kv("service.name", "packer")}},
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{
			TraceId: bytes.Repeat([]byte{1}, 16), SpanId: bytes.Repeat([]byte{2}, 8), Name: "send dead-letters", Kind: tracepb.Span_SPAN_KIND_PRODUCER,
			Attributes: []*commonpb.KeyValue{kv("messaging.system", "kafka"), kv(record.ReasonAttribute, "duplicate")},
		}}}},
	}})
	stub := tracetest.SpanStub{
		Name: "send dead-letters", SpanKind: trace.SpanKindProducer,
		SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{3}, SpanID: trace.SpanID{4}}),
		Resource:    resource.NewSchemaless(attribute.String("service.name", "packer")),
		Attributes:  []attribute.KeyValue{attribute.String("messaging.system", "kafka"), attribute.String(record.ReasonAttribute, "bad size")},
	}
	fromSDK := FromSDK([]sdktrace.ReadOnlySpan{stub.Snapshot()})
	for name, spans := range map[string][]Span{"JSON": fromJSON, "protobuf": fromProto, "SDK": fromSDK} {
		b := NewBuilder(Options{})
		b.Add(spans)
		e, ok := b.Graph().Edge("packer", "kafka")
		if !ok || e.Calls != 1 || e.DeadLetters != 1 || e.Errors != 0 {
			t.Errorf("%s: edge packer -> kafka = %+v (%v), want 1 call, 1 dead letter, no error", name, e, ok)
		}
		if l := label(e); !strings.Contains(l, "1 dead letter") || strings.Contains(l, "error") {
			t.Errorf("%s: label %q, want the dead letter and no error", name, l)
		}
	}
}

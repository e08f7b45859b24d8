package otlpwire_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/northpole-workshop/northpole/otel/otlpwire"
)

// capture is an otlptrace.Client that keeps each request as a receiver
// would see it: encoded, then decoded into the generated messages.
type capture struct {
	requests []*coltracepb.ExportTraceServiceRequest
}

func (*capture) Start(context.Context) error { return nil }
func (*capture) Stop(context.Context) error  { return nil }
func (c *capture) UploadTraces(_ context.Context, rs []*tracepb.ResourceSpans) error {
	b, err := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: rs})
	if err != nil {
		return err
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		return err
	}
	c.requests = append(c.requests, &req)
	return nil
}

// scoped is one span with the resource and scope it was sent under, each
// encoded, so that two requests compare whatever order they group in.
type scoped struct {
	resource, scope string
	span            *tracepb.Span
}

func flatten(t *testing.T, reqs []*coltracepb.ExportTraceServiceRequest) []scoped {
	t.Helper()
	det := proto.MarshalOptions{Deterministic: true}
	var out []scoped
	for _, req := range reqs {
		for _, rs := range req.ResourceSpans {
			r, err := det.Marshal(rs.Resource)
			if err != nil {
				t.Fatal(err)
			}
			for _, ss := range rs.ScopeSpans {
				s, err := det.Marshal(ss.Scope)
				if err != nil {
					t.Fatal(err)
				}
				for _, sp := range ss.Spans {
					out = append(out, scoped{resource: string(r) + "|" + rs.SchemaUrl, scope: string(s) + "|" + ss.SchemaUrl, span: sp})
				}
			}
		}
	}
	return out
}

// exportBoth sends spans through otlptrace's exporter and through ours.
func exportBoth(t *testing.T, spans []sdktrace.ReadOnlySpan) (want, got []scoped) {
	t.Helper()
	ctx := context.Background()
	var theirs, ours capture
	ref, err := otlptrace.New(ctx, &theirs)
	if err != nil {
		t.Fatal(err)
	}
	exp, err := otlpwire.New(ctx, &ours)
	if err != nil {
		t.Fatal(err)
	}
	// Three batches through one exporter, the last the smallest: each
	// reuses the buffer and the span messages of the one before, which
	// must not change what that one sent.
	for _, batch := range [][]sdktrace.ReadOnlySpan{spans[:len(spans)/2], spans[len(spans)/2:], spans[:len(spans)/3]} {
		if err := ref.ExportSpans(ctx, batch); err != nil {
			t.Fatal(err)
		}
		if err := exp.ExportSpans(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	return flatten(t, theirs.requests), flatten(t, ours.requests)
}

// sameSpans compares span by span: the spans of one (resource, scope) keep
// their order in both exporters; the groups may come in any order.
func sameSpans(t *testing.T, want, got []scoped) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d spans, otlptrace sent %d", len(got), len(want))
	}
	group := func(s []scoped) map[string][]*tracepb.Span {
		m := map[string][]*tracepb.Span{}
		for _, x := range s {
			k := x.resource + "\x00" + x.scope
			m[k] = append(m[k], x.span)
		}
		return m
	}
	w, g := group(want), group(got)
	if len(g) != len(w) {
		t.Fatalf("got %d (resource, scope) groups, otlptrace sent %d", len(g), len(w))
	}
	for k, ws := range w {
		gs, ok := g[k]
		if !ok {
			t.Fatalf("a (resource, scope) group otlptrace sent is missing")
		}
		for i := range ws {
			if !proto.Equal(gs[i], ws[i]) {
				t.Fatalf("span %d of a group differs:\n got  %v\n want %v", i, gs[i], ws[i])
			}
		}
	}
}

func TestSameAsOTLPTrace(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 7))
			spans := randomSpans(r, 1+r.IntN(60))
			want, got := exportBoth(t, spans)
			sameSpans(t, want, got)
		})
	}
}

// TestSpansOfRealProvider exports what the SDK itself makes (a provider
// with limits, so that dropped counts are not zero) through both.
func TestSpansOfRealProvider(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec),
		sdktrace.WithRawSpanLimits(sdktrace.SpanLimits{AttributeCountLimit: 3, EventCountLimit: 1, LinkCountLimit: 1,
			AttributeValueLengthLimit: 5, AttributePerEventCountLimit: 1, AttributePerLinkCountLimit: 1}),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "elves"))))
	tr := tp.Tracer("scope", trace.WithInstrumentationVersion("1.0"), trace.WithSchemaURL("https://opentelemetry.io/schemas/1.26.0"))
	ctx, parent := tr.Start(context.Background(), "parent")
	_, child := tr.Start(ctx, "child", trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithLinks(trace.Link{SpanContext: parent.SpanContext(), Attributes: []attribute.KeyValue{attribute.Int("a", 1), attribute.Int("b", 2)}},
			trace.Link{SpanContext: parent.SpanContext()}))
	child.SetAttributes(attribute.String("long", "a value longer than five"), attribute.Bool("b", false), attribute.Int("i", 0), attribute.Float64("f", 1.5))
	child.AddEvent("e1", trace.WithAttributes(attribute.Int("x", 1), attribute.Int("y", 2)))
	child.AddEvent("e2")
	child.SetStatus(codes.Error, "broken")
	child.End()
	parent.End()
	spans := rec.Ended()
	if got := spans[0].DroppedAttributes() + spans[0].DroppedEvents() + spans[0].DroppedLinks(); got == 0 {
		t.Fatalf("the limits dropped nothing; the test would not see dropped counts")
	}
	want, got := exportBoth(t, spans)
	sameSpans(t, want, got)
}

// TestGroups checks the grouping itself: three resources, two scopes in
// one of them, in the order the batch first names them.
func TestGroups(t *testing.T) {
	res := func(name string) *resource.Resource {
		return resource.NewSchemaless(attribute.String("service.name", name))
	}
	stubs := tracetest.SpanStubs{
		{Name: "a", Resource: res("elves"), InstrumentationScope: instrumentation.Scope{Name: "x"}},
		{Name: "b", Resource: res("packer"), InstrumentationScope: instrumentation.Scope{Name: "x"}},
		{Name: "c", Resource: res("elves"), InstrumentationScope: instrumentation.Scope{Name: "y"}},
		{Name: "d", Resource: res("elves"), InstrumentationScope: instrumentation.Scope{Name: "x"}},
		{Name: "e", Resource: res("sleigh")},
	}
	var ours capture
	exp, err := otlpwire.New(context.Background(), &ours)
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.ExportSpans(context.Background(), stubs.Snapshots()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range ours.requests[0].ResourceSpans {
		g := r.Resource.Attributes[0].Value.GetStringValue() + ":"
		for _, ss := range r.ScopeSpans {
			g += " " + ss.Scope.GetName() + "="
			for _, s := range ss.Spans {
				g += s.Name
			}
		}
		got = append(got, g)
	}
	want := []string{"elves: x=ad y=c", "packer: x=b", "sleigh: =e"}
	if !slices.Equal(got, want) {
		t.Fatalf("groups: got %q, want %q", got, want)
	}
}

func TestEmptyBatch(t *testing.T) {
	var ours capture
	exp, err := otlpwire.New(context.Background(), &ours)
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.ExportSpans(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if len(ours.requests) != 0 {
		t.Fatalf("an empty batch sent %d requests", len(ours.requests))
	}
}

func randomSpans(r *rand.Rand, n int) []sdktrace.ReadOnlySpan {
	resources := []*resource.Resource{
		nil,
		resource.NewSchemaless(attribute.String("service.name", "packer"), attribute.Int("pid", 7)),
		resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0", attribute.String("service.name", "elves")),
	}
	scopes := []instrumentation.Scope{
		{},
		{Name: "kafkatrace", Version: "v1"},
		{Name: "other", SchemaURL: "https://example.com/s", Attributes: attribute.NewSet(attribute.Bool("x", true))},
	}
	stubs := make(tracetest.SpanStubs, n)
	for i := range stubs {
		s := &stubs[i]
		s.Name = pick(r, []string{"", "process toys", "send packed", "ünïcode ✓"})
		s.SpanKind = trace.SpanKind(r.IntN(7))
		s.SpanContext = randomSpanContext(r)
		if r.IntN(3) > 0 {
			s.Parent = randomSpanContext(r)
		}
		s.StartTime, s.EndTime = randomTime(r), randomTime(r)
		s.Attributes = randomAttrs(r, r.IntN(20))
		for range r.IntN(3) {
			s.Events = append(s.Events, sdktrace.Event{Name: pick(r, []string{"", "exception"}), Time: randomTime(r),
				Attributes: randomAttrs(r, r.IntN(4)), DroppedAttributeCount: r.IntN(3)})
		}
		for range r.IntN(3) {
			s.Links = append(s.Links, sdktrace.Link{SpanContext: randomSpanContext(r), Attributes: randomAttrs(r, r.IntN(3)),
				DroppedAttributeCount: r.IntN(2)})
		}
		s.Status = sdktrace.Status{Code: codes.Code(r.IntN(3)), Description: pick(r, []string{"", "dead letter: bad size"})}
		s.DroppedAttributes, s.DroppedEvents, s.DroppedLinks = r.IntN(3)-1, r.IntN(2), r.IntN(2)
		s.Resource = pick(r, resources)
		s.InstrumentationScope = pick(r, scopes)
	}
	return stubs.Snapshots()
}

func randomSpanContext(r *rand.Rand) trace.SpanContext {
	var tid trace.TraceID
	var sid trace.SpanID
	for i := range tid {
		tid[i] = byte(r.Uint32())
	}
	for i := range sid {
		sid[i] = byte(r.Uint32())
	}
	cfg := trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.TraceFlags(r.IntN(2)), Remote: r.IntN(2) == 0}
	if r.IntN(3) == 0 {
		cfg.TraceState, _ = trace.ParseTraceState("vendor=a,other=b")
	}
	return trace.NewSpanContext(cfg)
}

func randomTime(r *rand.Rand) time.Time {
	switch r.IntN(5) {
	case 0:
		return time.Unix(0, 0)
	case 1:
		return time.Unix(-10, 0) // before 1970: sent as 0
	}
	return time.Unix(1_700_000_000+r.Int64N(1e8), r.Int64N(1e9))
}

func randomAttrs(r *rand.Rand, n int) []attribute.KeyValue {
	out := make([]attribute.KeyValue, n)
	for i := range out {
		out[i] = attribute.KeyValue{Key: attribute.Key(pick(r, []string{"", "messaging.system", "k", "ключ"})), Value: randomValue(r, 2)}
	}
	return out
}

func randomValue(r *rand.Rand, depth int) attribute.Value {
	kinds := 10
	if depth > 0 {
		kinds = 12
	}
	switch r.IntN(kinds) {
	case 0:
		return attribute.BoolValue(r.IntN(2) == 0)
	case 1:
		return attribute.Int64Value(r.Int64() - r.Int64())
	case 2:
		return attribute.Float64Value(pick(r, []float64{0, -1.5, 1e300, r.NormFloat64()}))
	case 3:
		return attribute.StringValue(pick(r, []string{"", "kafka", string(make([]byte, 300))}))
	case 4:
		return attribute.ByteSliceValue(pick(r, [][]byte{nil, {0, 1, 2}}))
	case 5:
		return attribute.BoolSliceValue(pick(r, [][]bool{nil, {true, false}}))
	case 6:
		return attribute.Int64SliceValue(pick(r, [][]int64{nil, {0, -1, 1 << 40}}))
	case 7:
		return attribute.Float64SliceValue(pick(r, [][]float64{nil, {0, 2.5}}))
	case 8:
		return attribute.StringSliceValue(pick(r, [][]string{nil, {"", "a"}}))
	case 9:
		return attribute.Value{} // EMPTY
	case 10:
		vs := make([]attribute.Value, r.IntN(3))
		for i := range vs {
			vs[i] = randomValue(r, depth-1)
		}
		return attribute.SliceValue(vs...)
	}
	kvs := make([]attribute.KeyValue, r.IntN(3))
	for i := range kvs {
		kvs[i] = attribute.KeyValue{Key: attribute.Key(fmt.Sprint("m", i)), Value: randomValue(r, depth-1)}
	}
	return attribute.MapValue(kvs...)
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// BenchmarkExportSpans is the exporter's part of a span's cost: a batch of
// 512 spans shaped like the packer's "process" spans (14 attributes, one
// link) encoded into a request and marshalled as the clients marshal it;
// cpu-ns/span includes the garbage collector's share. Run it with -cpu 1.
func BenchmarkExportSpans(b *testing.B) {
	res := resource.NewSchemaless(attribute.String("service.name", "packer"))
	stubs := make(tracetest.SpanStubs, 512)
	for i := range stubs {
		sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{byte(i), 1}, SpanID: trace.SpanID{byte(i), 2}, TraceFlags: trace.FlagsSampled})
		stubs[i] = tracetest.SpanStub{
			Name: "process toys", SpanKind: trace.SpanKindConsumer, SpanContext: sc, Parent: sc,
			StartTime: time.Unix(1_700_000_000, int64(i)), EndTime: time.Unix(1_700_000_000, int64(i)+40_000),
			Attributes: []attribute.KeyValue{
				attribute.String("messaging.system", "kafka"), attribute.String("messaging.operation.name", "process"),
				attribute.String("messaging.operation.type", "process"), attribute.String("messaging.destination.name", "bench-toys"),
				attribute.String("server.address", "127.0.0.1"), attribute.Int("server.port", 9092),
				attribute.String("messaging.consumer.group.name", "bench-packer-clock"), attribute.String("messaging.kafka.consumer.group", "bench-packer-clock"),
				attribute.String("messaging.client.id", "northpole-bench-packer-clock"), attribute.String("messaging.client_id", "northpole-bench-packer-clock"),
				attribute.String("messaging.destination.partition.id", "3"), attribute.Int("messaging.kafka.offset", 100_000+i),
				attribute.String("messaging.kafka.message.key", "M"), attribute.Int("messaging.message.body.size", 120),
			},
			Links:                []sdktrace.Link{{SpanContext: sc}},
			Resource:             res,
			InstrumentationScope: instrumentation.Scope{Name: "kafkatrace"},
		}
	}
	spans := stubs.Snapshots()
	exp, err := otlpwire.New(context.Background(), marshal{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	c0 := cpuNanos()
	for b.Loop() {
		if err := exp.ExportSpans(context.Background(), spans); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuNanos()-c0)/float64(b.N*len(spans)), "cpu-ns/span")
}

// cpuNanos is the process's user and system CPU so far: on a shared
// machine it says more than the wall time.
func cpuNanos() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// marshal encodes each request as the clients do, and sends it nowhere.
type marshal struct{}

func (marshal) Start(context.Context) error { return nil }
func (marshal) Stop(context.Context) error  { return nil }
func (marshal) UploadTraces(_ context.Context, rs []*tracepb.ResourceSpans) error {
	_, err := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: rs})
	return err
}

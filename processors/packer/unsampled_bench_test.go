package packer

import (
	"context"
	"reflect"
	"syscall"
	"testing"
	"unsafe"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/northpole-workshop/northpole/otel/kafkatrace"
	"github.com/northpole-workshop/northpole/otel/telemetry"
)

// BenchmarkUnsampledRecord is what tracing costs the packer for one input
// record that nobody samples, alone: the input's process middleware, its
// trace context into the clock's decision and out of it, and for every
// second record (the packer writes about half an output row per input
// event) the slots stage resuming it, linking the slot's two items and
// emitting a row with its traceparent, the headers going through what goka
// and the producer do with them (emulated: goka's two copies of the
// headers, kgo's record headers). "off" is the same path with tracing off;
// the difference is the unsampled path's cost. cpu-ns/op is the process's
// CPU per record, the garbage collector's included: on a shared machine it
// says more than ns/op. Inputs come with an
// unsampled traceparent (as from the elves at 10 %) or without one (the
// packer starts the trace, as in the bench).
func BenchmarkUnsampledRecord(b *testing.B) {
	for _, c := range []struct {
		name    string
		sampler string // "": tracing off
		headers goka.Headers
	}{
		{"off", "", goka.Headers{}},
		{"unsampled-parent", "parentbased_always_off", goka.Headers{"traceparent": []byte("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00")}},
		{"root", "parentbased_always_off", goka.Headers{}},
		{"sampled", "parentbased_always_on", goka.Headers{"traceparent": []byte("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")}},
	} {
		b.Run(c.name, func(b *testing.B) {
			path := newUnsampledPath(b, c.sampler)
			in := &recordContext{headers: c.headers}
			b.ReportAllocs()
			c0 := cpuNanos()
			for i := 0; b.Loop(); i++ {
				path.record(in, i%2 == 1)
			}
			b.ReportMetric(float64(cpuNanos()-c0)/float64(b.N), "cpu-ns/op")
		})
	}
}

func cpuNanos() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// TestUnsampledRecordAllocations: a record nobody samples allocates, for
// its trace, its goka context (the span context it carries); and for a row
// it writes, the slots stage's context, the row's traceparent, goka's
// header option and the slice it goes in, goka's two copies of the headers
// (a map and a group each) and kgo's record headers: 10. No span, no
// context.Context, no attribute, no link.
func TestUnsampledRecordAllocations(t *testing.T) {
	in := &recordContext{headers: goka.Headers{}}
	off, on := newUnsampledPath(t, ""), newUnsampledPath(t, "parentbased_always_off")
	cost := func(p *unsampledPath, emit bool) float64 {
		return testing.AllocsPerRun(1000, func() { p.record(in, emit) })
	}
	if d := cost(on, false) - cost(off, false); d > 1 {
		t.Errorf("a record that writes nothing: %v allocations more with tracing on, want at most 1", d)
	}
	if d := cost(on, true) - cost(off, true); d > 10 {
		t.Errorf("a record that writes a row: %v allocations more with tracing on, want at most 10", d)
	}
}

// unsampledPath is the packer's tracing work for one input record.
type unsampledPath struct {
	process goka.ProcessCallback
	slots   *kafkatrace.Goka
	out     *recordContext
	ref     traceRef // the last record's, decoded from its decision
	prev    traceRef // the one before
	buf     []byte
}

func newUnsampledPath(tb testing.TB, sampler string) *unsampledPath {
	checkCtxOptions(tb)
	p := &unsampledPath{out: &recordContext{producer: nopProducer{}}}
	var clock *kafkatrace.Goka
	if sampler != "" {
		env := map[string]string{"OTEL_TRACES_SAMPLER": sampler}
		tel, err := telemetry.New(context.Background(), telemetry.Options{Exporter: discardExporter{}, Getenv: func(k string) string { return env[k] }})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
		tp := tel.TracerProvider("packer")
		clock = kafkatrace.NewGoka(tp, kafkatrace.GokaConfig{Group: "packer-clock", ClientID: "packer-clock", Brokers: []string{"kafka:9092"}})
		p.slots = kafkatrace.NewGoka(tp, kafkatrace.GokaConfig{Group: "packer-slots", ClientID: "packer-slots", Brokers: []string{"kafka:9092"}, OnSend: onSend})
		p.out.producer = p.slots.Producer(p.out.producer)
	}
	pk := &Packer{trace: stageTracing{clock: clock, slots: p.slots}}
	p.process = clock.Process()(func(ctx goka.Context, _ any) {
		ref := pk.traceOf(ctx)
		p.buf = ref.appendBin(p.buf[:0])
		p.prev = p.ref
		p.ref.readBin(&binReader{b: p.buf})
	})
	return p
}

// record is one input record; with emit, the slots stage writes a row.
func (p *unsampledPath) record(in *recordContext, emit bool) {
	p.process(in, []byte(`{}`))
	if emit {
		ctx := withItems(resume(p.slots, p.out, p.ref), p.prev, p.ref)
		ctx.Emit("packed", "M|1|1", nil)
	}
}

// recordContext is the part of a goka.Context the path uses. Its Emit does
// with the headers what goka's does (WithCtxEmitHeaders, then
// emitterDefaultHeaders.Merged) before it hands them to producer.
type recordContext struct {
	gokaContext
	headers  goka.Headers
	producer goka.Producer
}

func (c *recordContext) Context() context.Context { return context.Background() }
func (c *recordContext) Headers() goka.Headers    { return c.headers }
func (c *recordContext) Topic() goka.Stream       { return "toys" }
func (c *recordContext) Key() string              { return "M" }
func (c *recordContext) Partition() int32         { return 2 }
func (c *recordContext) Offset() int64            { return 7 }

func (c *recordContext) Emit(topic goka.Stream, key string, _ any, options ...goka.ContextOption) {
	var opts gokaCtxOptions
	for _, o := range options {
		applyOption(o, &opts)
	}
	c.producer.EmitWithHeaders(string(topic), key, nil, goka.Headers(nil).Merged(opts.emitHeaders))
}

// gokaContext names the embedded goka.Context (nil: what the path does
// not use panics), whose Context method recordContext has.
type gokaContext = goka.Context

// gokaCtxOptions has the layout of goka's unexported ctxOptions (v1.1.17:
// the emit headers alone), so that its options can be applied here as goka
// applies them; checkCtxOptions makes sure.
type gokaCtxOptions struct{ emitHeaders goka.Headers }

func applyOption(o goka.ContextOption, opts *gokaCtxOptions) {
	(*(*func(*gokaCtxOptions))(unsafe.Pointer(&o)))(opts)
}

func checkCtxOptions(tb testing.TB) {
	t := reflect.TypeOf(goka.ContextOption(nil)).In(0).Elem()
	if t.NumField() != 1 || t.Field(0).Type != reflect.TypeOf(goka.Headers(nil)) {
		tb.Fatalf("goka's ctxOptions is %v now: recordContext cannot apply its options", t)
	}
}

// produced keeps the last record's headers, as a record would.
var produced []kgo.RecordHeader

// nopProducer turns the headers into kgo's and answers with the record's
// partition and offset, as gokakit's producer does, at once.
type nopProducer struct{}

func (nopProducer) Emit(topic, key string, value []byte) *goka.Promise {
	return nopProducer{}.EmitWithHeaders(topic, key, value, nil)
}

func (nopProducer) EmitWithHeaders(topic, _ string, _ []byte, headers goka.Headers) *goka.Promise {
	if len(headers) > 0 {
		hs := make([]kgo.RecordHeader, 0, len(headers))
		for k, v := range headers {
			hs = append(hs, kgo.RecordHeader{Key: k, Value: v})
		}
		produced = hs
	}
	p, finish := goka.NewPromiseWithFinisher()
	finish(&sarama.ProducerMessage{Topic: topic, Partition: 1, Offset: 1000}, nil)
	return p
}

func (nopProducer) Close() error { return nil }

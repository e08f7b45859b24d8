package packer

import (
	"context"
	"syscall"
	"testing"

	"github.com/lovoo/goka"

	"github.com/northpole-workshop/northpole/internal/testsupport/gokatest"
	"github.com/northpole-workshop/northpole/otel/kafkatrace"
	"github.com/northpole-workshop/northpole/otel/telemetry"
)

// BenchmarkUnsampledRecord is what tracing costs the packer for one input
// record that nobody samples, alone: the input's process middleware, its
// trace context into the clock's decision and out of it, and for every
// second record (the packer writes about half an output row per input
// event) linking the slot's two items and writing a row with its
// traceparent through goka's emit and the producer
// (internal/gokatest: what goka and gokakit's producer do with headers,
// nothing else). "off" is the same path with tracing off; the difference
// is the unsampled path's cost. Inputs come with an unsampled traceparent
// (as from the elves at 10 %) or without one (the packer starts the trace,
// as in the bench). "sampled" is the same with every record sampled, its
// spans exported as telemetry exports them, to an exporter that discards
// them. cpu-ns/op is the
// process's CPU per record, the garbage collector's included: on a shared
// machine it says more than ns/op.
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
			path := newUnsampledPath(b, c.sampler, c.headers)
			b.ReportAllocs()
			c0 := cpuNanos()
			for i := 0; b.Loop(); i++ {
				path.record(i%2 == 1)
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
// it writes, the slots stage's context, the row's headers (a map, its
// group and the traceparent, made once, in the producer) and kgo's record
// headers: 6 in all. No span, no context.Context, no attribute, no link.
func TestUnsampledRecordAllocations(t *testing.T) {
	off, on := newUnsampledPath(t, "", goka.Headers{}), newUnsampledPath(t, "parentbased_always_off", goka.Headers{})
	cost := func(p *unsampledPath, emit bool) float64 {
		return testing.AllocsPerRun(1000, func() { p.record(emit) })
	}
	if d := cost(on, false) - cost(off, false); d > 1 {
		t.Errorf("a record that writes nothing: %v allocations more with tracing on, want at most 1", d)
	}
	if d := cost(on, true) - cost(off, true); d > 6 {
		t.Errorf("a record that writes a row: %v allocations more with tracing on, want at most 6", d)
	}
}

// unsampledPath is the packer's tracing work for one input record.
type unsampledPath struct {
	process   goka.ProcessCallback
	in        goka.Context
	emit      bool     // the record being processed writes a row
	ref, prev traceRef // the last record's, decoded from its decision, and the one before
	buf       []byte
}

func newUnsampledPath(tb testing.TB, sampler string, headers goka.Headers) *unsampledPath {
	var g *kafkatrace.Goka
	if sampler != "" {
		env := map[string]string{"OTEL_TRACES_SAMPLER": sampler}
		tel, err := telemetry.New(context.Background(), telemetry.Options{Exporter: discardExporter{}, Getenv: func(k string) string { return env[k] }})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
		g = kafkatrace.NewGoka(tel.TracerProvider("packer"), kafkatrace.GokaConfig{Group: "packer-clock", ClientID: "packer-clock", Brokers: []string{"kafka:9092"}, OnSend: onSend})
	}
	in, err := gokatest.New(gokatest.Record{Topic: "toys", Key: "M", Partition: 2, Offset: 7, Headers: headers}, g.Producer(&gokatest.Producer{}))
	if err != nil {
		tb.Fatal(err)
	}
	p := &unsampledPath{in: in}
	pk := &Packer{trace: g}
	p.process = g.Process()(func(ctx goka.Context, _ any) {
		ref := pk.traceOf(ctx)
		p.buf = ref.appendBin(p.buf[:0])
		p.prev = p.ref
		p.ref.readBin(&binReader{b: p.buf})
		if p.emit {
			withItems(ctx, p.prev, p.ref).Emit("packed", "M|1|1", nil)
		}
	})
	return p
}

// record is one input record; with emit, it writes a row.
func (p *unsampledPath) record(emit bool) {
	p.emit = emit
	p.process(p.in, []byte(`{}`))
}

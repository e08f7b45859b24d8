package packer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/northpole-workshop/northpole/internal/contract"
	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
	"github.com/northpole-workshop/northpole/internal/testsupport/hostile"
	"github.com/northpole-workshop/northpole/internal/testsupport/testkafka"
	"github.com/northpole-workshop/northpole/internal/topicread"
	"github.com/northpole-workshop/northpole/processors/packer"
	"github.com/northpole-workshop/northpole/processors/packer/outputs"
	"github.com/northpole-workshop/northpole/processors/packer/readback"
)

// rawProducer is hostile.NewProducer, closed when the test ends.
func rawProducer(t *testing.T, kc kafkaconf.Config) *kgo.Client {
	t.Helper()
	cl, err := hostile.NewProducer(kc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// produceRaw writes recs to pl's input topics (hostile.Produce).
func produceRaw(t *testing.T, ctx context.Context, cl *kgo.Client, pl pipeline, recs []*hostile.Record) {
	t.Helper()
	if err := hostile.Produce(ctx, cl, pl.cfg.Topics.Toys, pl.cfg.Topics.Boxes, recs); err != nil {
		t.Fatal(err)
	}
}

// outcome is what the packer made of the record at (x, partition, offset)
// with id, made in the window starting at window: its dead letter's reason,
// late (both by position), or the set that holds its id in that window.
func outcome(got results.Set, x record.Stream, partition int32, offset int64, line, id, window string) string {
	for _, d := range got.Dead {
		if d.Stream == string(x) && d.Partition == partition && d.Offset == offset {
			return "dead: " + d.Reason
		}
	}
	for _, r := range got.Late {
		if r.Stream == string(x) && r.Partition == partition && r.Offset == offset {
			return "late"
		}
	}
	is := func(shown string, c results.Cut, l, ws string) bool {
		return l == line && ws == window && (shown == id || !c.IsZero() && c.Matches(shown, id))
	}
	for _, r := range got.Packed {
		if x == record.Toys && is(r.ToyID, r.ToyIDCut, r.Line, r.WindowStart) || x == record.Boxes && is(r.BoxID, r.BoxIDCut, r.Line, r.WindowStart) {
			return "packed"
		}
	}
	for _, r := range got.Unpacked {
		if x == record.Toys && is(r.ToyID, r.ToyIDCut, r.Line, r.WindowStart) {
			return "unpacked"
		}
	}
	for _, r := range got.Spare {
		if x == record.Boxes && is(r.BoxID, r.BoxIDCut, r.Line, r.WindowStart) {
			return "spare"
		}
	}
	return "heartbeat"
}

// windowOf is the start of the window rec was made in, as the results give
// it.
func windowOf(rec record.Record, w time.Duration) string {
	us, wus := rec.MadeAt.UnixMicro(), w.Microseconds()
	return record.FormatMicros(us - ((us%wus)+wus)%wus)
}

// TestHostileInputs sends every record of hostileRecords, with trace context
// on, and checks that the packer keeps running, that each record has the
// outcome the contract gives it, that the results equal the reference, and
// that every record the packer wrote fits in the broker's limit, cut where it
// had to be, with the whole value's length and digest.
func TestHostileInputs(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	kc := testkafka.Config(t)
	pl := newPipeline(t, kc, scenario{partitions: 2, window: 10 * time.Second, lateness: 5 * time.Second})
	cfg := pl.cfg
	cfg.Tracer = sampledProvider(t)
	pk, err := packer.New(cfg, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	run := startRun(t, ctx, pk)
	recs := slices.Concat(hostile.Records(), hostile.FinalHeartbeats())
	produceRaw(t, ctx, rawProducer(t, kc), pl, recs)
	if err := outputs.WaitQuiet(ctx, pl.cfg, 200*time.Millisecond, run.done, slog.Default()); err != nil {
		t.Fatal(err)
	}
	if run.stopped() {
		t.Fatal("the packer stopped")
	}

	got := pl.checkAgainstReference(t, ctx)
	for _, r := range recs {
		if r.Refused || r.Want == "" {
			continue
		}
		line, id, window := "", "", ""
		if rec, err := record.Parse(r.Stream, r.Key, r.Value); err == nil {
			line, id, window = rec.Line, rec.ID, windowOf(rec, pl.cfg.Window)
		}
		o := outcome(got, r.Stream, r.Partition, r.Offset, line, id, window)
		if o == r.Want || r.Want == "item" && (o == "packed" || o == "unpacked" || o == "spare") {
			continue
		}
		t.Errorf("%s (%s/%d@%d): %s, want %s", r.Name, r.Stream, r.Partition, r.Offset, o, r.Want)
	}
	pl.checkWrittenFit(t, ctx, recs)
}

// checkAgainstReference compares the packer's results with the reference on
// the records in the input topics, and returns the packer's.
func (pl pipeline) checkAgainstReference(t *testing.T, ctx context.Context) results.Set {
	t.Helper()
	rb, err := readback.Read(ctx, pl.kc, pl.cfg.Topics)
	if err != nil {
		t.Fatal(err)
	}
	got, raw := rb.Goka, rb.Raw
	want := contract.Compute(rb.Inputs(), pl.cfg.Params, contract.Literal)
	for _, d := range results.Compare(got, want) {
		t.Errorf("%s: only goka %d rows %.3v, only reference %d rows %.3v", d.Set, len(d.OnlyA), d.OnlyA, len(d.OnlyB), d.OnlyB)
	}
	if raw.Conflicts != 0 {
		t.Errorf("%d output keys were written with two different values", raw.Conflicts)
	}
	return got
}

// checkWrittenFit reads every topic the packer wrote and checks that each
// record fits in the broker's limit, and that each cut dead letter describes
// the input record's whole value and key.
func (pl pipeline) checkWrittenFit(t *testing.T, ctx context.Context, recs []*hostile.Record) {
	t.Helper()
	byPos := map[string]*hostile.Record{}
	for _, r := range recs {
		if !r.Refused {
			byPos[fmt.Sprintf("%s/%d/%d", r.Stream, r.Partition, r.Offset)] = r
		}
	}
	c := pl.cfg.Topics
	cuts := 0
	for _, topic := range []string{c.Packed, c.Unpacked, c.Spare, c.Late, c.Dead} {
		msgs, err := topicread.All(ctx, pl.kc, topic)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			size := len(m.Key) + len(m.Value)
			for _, h := range m.Headers {
				size += len(h.Key) + len(h.Value)
			}
			if size > hostile.BrokerMaxMessageBytes-61 {
				t.Errorf("%s/%d@%d: %d bytes of key, value and headers", topic, m.Partition, m.Offset, size)
			}
			if topic != c.Dead {
				continue
			}
			var dl packer.DeadLetter
			if err := json.Unmarshal(m.Value, &dl); err != nil {
				t.Fatal(err)
			}
			in := byPos[fmt.Sprintf("%s/%d/%d", dl.Stream, dl.Partition, dl.Offset)]
			if in == nil {
				t.Errorf("dead letter of %s/%d@%d, which the test did not write", dl.Stream, dl.Partition, dl.Offset)
				continue
			}
			if !dl.ValueCut.IsZero() {
				cuts++
				if dl.ValueCut != results.CutOf(in.Value) {
					t.Errorf("%s: value_cut %v does not describe the input's value", in.Name, dl.ValueCut)
				}
			}
			if !dl.KeyCut.IsZero() && dl.KeyCut != results.CutOf(in.Key) {
				t.Errorf("%s: key_cut %v does not describe the input's key", in.Name, dl.KeyCut)
			}
		}
	}
	if cuts == 0 {
		t.Error("no dead letter was cut: the records at the limit test nothing")
	}
}

// run is a packer running in the background. done delivers Run's error
// once; exited is closed after that, so that stop returns also when done's
// value was taken already (by WaitQuiet, say).
type run struct {
	done   chan error
	exited chan struct{}
	cancel context.CancelFunc
}

func startRun(t *testing.T, ctx context.Context, pk *packer.Packer) *run {
	t.Helper()
	if err := pk.EnsureTopics(ctx); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &run{done: make(chan error, 1), exited: make(chan struct{}), cancel: cancel}
	go func() {
		r.done <- pk.Run(ctx)
		close(r.exited)
	}()
	t.Cleanup(func() { _ = r.stop() })
	return r
}

func (r *run) stopped() bool { return len(r.done) > 0 }

// stop ends the run and returns its error (nil for a clean stop, or when
// the error was taken already).
func (r *run) stop() error {
	r.cancel()
	select {
	case err, ok := <-r.done:
		if ok {
			close(r.done)
		}
		return err
	case <-r.exited:
		return nil
	}
}

// alterMaxMessageBytes sets (or, with "", removes) a topic's max.message.bytes.
func alterMaxMessageBytes(t *testing.T, ctx context.Context, kc kafkaconf.Config, topic, value string) {
	t.Helper()
	admin := readerAdmin(t, ctx, kc)
	alter := kadm.AlterConfig{Op: kadm.DeleteConfig, Name: "max.message.bytes"}
	if value != "" {
		alter = kadm.AlterConfig{Op: kadm.SetConfig, Name: "max.message.bytes", Value: &value}
	}
	resps, err := admin.AlterTopicConfigs(ctx, []kadm.AlterConfig{alter}, topic)
	if err == nil {
		var resp kadm.AlterConfigsResponse
		resp, err = resps.On(topic, nil)
		if err == nil {
			err = resp.Err
		}
	}
	if err != nil {
		t.Fatalf("alter max.message.bytes of %s: %v", topic, err)
	}
}

// readerAdmin is an admin client that the test closes at its end.
func readerAdmin(t *testing.T, ctx context.Context, kc kafkaconf.Config) *kadm.Client {
	t.Helper()
	cl, err := kc.NewReaderClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// TestFailedWriteIsNotCommittedPast makes the write of one record's outcome
// fail (its dead letter is larger than the dead-letter topic takes, once the
// packer runs) while later records' writes succeed. The packer must stop
// without committing past that record, refuse to start while the topic's
// limit is too small to hold a record, and after a restart with the limit
// back write the record's outcome: nothing lost.
func TestFailedWriteIsNotCommittedPast(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kc := testkafka.Config(t)
	pl := newPipeline(t, kc, scenario{partitions: 1, window: 10 * time.Second, lateness: 5 * time.Second})
	prod := rawProducer(t, kc)
	start := func() *run {
		pk, err := packer.New(pl.cfg, slog.Default())
		if err != nil {
			t.Fatal(err)
		}
		return startRun(t, ctx, pk)
	}
	M := []byte("M")
	r := start()
	first := []*hostile.Record{
		{Name: "toy 1", Stream: record.Toys, Key: M, Value: hostile.ToyJSON("t1", "M", hostile.At(1))},
		{Name: "box 1", Stream: record.Boxes, Key: M, Value: hostile.BoxJSON("b1", "M", hostile.At(1))},
	}
	produceRaw(t, ctx, prod, pl, first)
	if err := outputs.WaitQuiet(ctx, pl.cfg, 100*time.Millisecond, r.done, slog.Default()); err != nil {
		t.Fatal(err)
	}

	alterMaxMessageBytes(t, ctx, kc, pl.cfg.Topics.Dead, "100")
	bad := &hostile.Record{Name: "malformed", Stream: record.Toys, Key: M, Value: []byte("not json, and a dead letter of more than 100 bytes")}
	later := []*hostile.Record{bad}
	for i := range 50 {
		later = append(later,
			&hostile.Record{Stream: record.Toys, Key: M, Value: hostile.ToyJSON(fmt.Sprintf("t%d", i+2), "M", hostile.At(2))},
			&hostile.Record{Stream: record.Boxes, Key: M, Value: hostile.BoxJSON(fmt.Sprintf("b%d", i+2), "M", hostile.At(2))})
	}
	produceRaw(t, ctx, prod, pl, later)
	select {
	case err := <-r.done:
		close(r.done)
		if err == nil || !strings.Contains(err.Error(), "MESSAGE_TOO_LARGE") {
			t.Fatalf("the packer stopped with %v, want the failed write's MESSAGE_TOO_LARGE", err)
		}
		t.Logf("the packer stopped: %v", err)
	case <-ctx.Done():
		t.Fatal("the packer went on after a write failed")
	}
	if c := committed(t, ctx, kc, pl.cfg.Group+"-clock", pl.cfg.Topics.Toys); c > bad.Offset {
		t.Fatalf("toys committed up to offset %d, past the record at %d whose dead letter failed", c, bad.Offset)
	}

	// Restarted with the limit still too small, it says so and stops.
	r = start()
	select {
	case err := <-r.done:
		close(r.done)
		if err == nil || !strings.Contains(err.Error(), "max.message.bytes") {
			t.Fatalf("started with a 100-byte topic limit: %v, want an error naming max.message.bytes", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the packer started although a topic it writes takes only 100 bytes")
	}

	alterMaxMessageBytes(t, ctx, kc, pl.cfg.Topics.Dead, "")
	r = start()
	produceRaw(t, ctx, prod, pl, hostile.FinalHeartbeats())
	if err := outputs.WaitQuiet(ctx, pl.cfg, 100*time.Millisecond, r.done, slog.Default()); err != nil {
		t.Fatal(err)
	}
	got := pl.checkAgainstReference(t, ctx)
	if o := outcome(got, record.Toys, bad.Partition, bad.Offset, "", "", ""); o != "dead: malformed json" {
		t.Fatalf("the record whose write failed: %s after the restart, want its dead letter", o)
	}
}

// committed is the offset group has committed on partition 0 of topic.
func committed(t *testing.T, ctx context.Context, kc kafkaconf.Config, group, topic string) int64 {
	t.Helper()
	resps, err := readerAdmin(t, ctx, kc).FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := resps.Lookup(topic, 0); ok {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		return o.At
	}
	return -1
}

// sampledProvider samples every span and exports none: the trace middleware
// then propagates context on every hop, as in production.
func sampledProvider(t *testing.T) *sdktrace.TracerProvider {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp
}

// TestHallPerRecord: a producer that invents a new hall for every record, a
// new line each time in one partition (toys, and boxes half on their toy's
// line, half on lines of their own), then every line's final heartbeats.
// The packer keeps going, whatever the lines of its partition, and equals
// the reference.
func TestHallPerRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	kc := testkafka.Config(t)
	pl := newPipeline(t, kc, scenario{partitions: 1, window: 10 * time.Second, lateness: 5 * time.Second})
	pk, err := packer.New(pl.cfg, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	run := startRun(t, ctx, pk)

	const n = 2000
	var krs []*kgo.Record
	lines := map[string]string{} // line: size
	add := func(x record.Stream, line string, value []byte) {
		topic := pl.cfg.Topics.Toys
		if x == record.Boxes {
			topic = pl.cfg.Topics.Boxes
		}
		krs = append(krs, &kgo.Record{Topic: topic, Key: []byte(line), Value: value})
	}
	for i := range n {
		size := record.Sizes[i%len(record.Sizes)]
		made := hostile.At(float64(i) / 50) // 40 s of event time
		toyLine := record.JoinLine(size, fmt.Sprint("t", i))
		boxLine := toyLine
		if i%2 == 1 {
			boxLine = record.JoinLine(size, fmt.Sprint("b", i))
		}
		lines[toyLine], lines[boxLine] = size, size
		add(record.Toys, toyLine, hostile.ToyJSON(fmt.Sprint("toy-", i), size, made))
		add(record.Boxes, boxLine, hostile.BoxJSON(fmt.Sprint("box-", i), size, made))
	}
	for _, x := range []record.Stream{record.Toys, record.Boxes} {
		for line, size := range lines {
			add(x, line, fmt.Appendf(nil, `{"heartbeat":true,"size":%q,"elf":"e","made_at":%q}`, size, hostile.At(3600)))
		}
	}
	if err := rawProducer(t, kc).ProduceSync(ctx, krs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := outputs.WaitQuiet(ctx, pl.cfg, 200*time.Millisecond, run.done, slog.Default()); err != nil {
		t.Fatal(err)
	}
	if run.stopped() {
		t.Fatal("the packer stopped")
	}
	got := pl.checkAgainstReference(t, ctx)
	if c := got.Counts(); c.Packed != n/2 || c.Unpacked != n/2 || c.Spare != n/2 {
		t.Errorf("%d lines: %+v, want %d pairs, %d unpacked toys and %d spare boxes", len(lines), c, n/2, n/2, n/2)
	}
}

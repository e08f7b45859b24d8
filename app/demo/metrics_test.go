package demo_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/app/demo"
	"github.com/northpole-workshop/northpole/app/harness"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/otel/backend/metricsink"
	"github.com/northpole-workshop/northpole/otel/telemetry"
	"github.com/northpole-workshop/northpole/processors/packer"
	"github.com/northpole-workshop/northpole/processors/packer/readback"
	"github.com/northpole-workshop/northpole/processors/sleigh"
	"github.com/northpole-workshop/northpole/producers"
)

// TestMetricsReachOTLP runs the demo's pipeline on kfake with its metrics
// exported over real OTLP/gRPC to a receiver on loopback, configured by the
// standard environment only, and finds in what arrived exactly the records
// the elves wrote (as read back from their topics, heartbeats included) and
// the pairs the sleigh loaded (as its manifest holds them).
func TestMetricsReachOTLP(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	rcv, err := metricsink.Listen("127.0.0.1:0", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+rcv.GRPCAddr())
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", telemetry.ProtocolGRPC)
	t.Setenv("OTEL_TRACES_EXPORTER", "none")
	t.Setenv("OTEL_METRIC_EXPORT_INTERVAL", "500")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dt, err := demo.NewTracing(ctx, false, nil, func(ctx context.Context, opts telemetry.Options) (*telemetry.Telemetry, func(), error) {
		tel, err := telemetry.New(ctx, opts)
		if err != nil {
			return nil, nil, err
		}
		return tel, tel.Close, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer dt.Close()
	c := harness.DefaultConfig()
	c.Toys.Count, c.Boxes.Count = 300, 300
	for _, e := range []*producers.Config{&c.Toys, &c.Boxes} {
		e.LateRate, e.DupRate, e.BadRate = 0.02, 0.02, 0.05
	}
	c.Tracing, c.Metrics = dt.Provider, dt.Meters
	d, err := demo.New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	r, err := d.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m, counts, err := d.FinishSleigh(ctx, len(r.Run.Goka.Packed))
	if err != nil {
		t.Fatal(err)
	}
	traces := dt.Finish(ctx) // every component stopped: flush
	if rcv.Requests() < 2 {
		t.Errorf("%d export requests: the periodic export did not run", rcv.Requests())
	}

	for svc, read := range map[string]int{telemetry.ServiceToyElves: len(r.Run.Toys), telemetry.ServiceBoxElves: len(r.Run.Boxes)} {
		if got := rcv.Sum(producers.MetricRecords, map[string]string{"service.name": svc}); got != float64(read) || read < 300 {
			t.Errorf("%s: %v records in the metrics, %d read back from the topic", svc, got, read)
		}
		if got := rcv.Sum("messaging.client.sent.messages", map[string]string{"service.name": svc, "messaging.system": "kafka"}); got != float64(read) {
			t.Errorf("%s: %v messages sent in the metrics, %d read back", svc, got, read)
		}
	}
	in := r.Summary.Inputs["toys"]
	if got := rcv.Sum(producers.MetricRecords, map[string]string{"service.name": telemetry.ServiceToyElves, "northpole.record.kind": producers.KindHeartbeat}); got != float64(in.Heartbeats) {
		t.Errorf("toy heartbeats: %v in the metrics, %d read back", got, in.Heartbeats)
	}
	loaded := rcv.Sum(sleigh.MetricPairs, map[string]string{"service.name": telemetry.ServiceSleigh, "northpole.outcome": sleigh.OutcomeLoaded})
	if loaded != float64(m.Pairs) || m.Pairs != len(r.Run.Goka.Packed) || m.Pairs < 10 {
		t.Errorf("sleigh: %v pairs loaded in the metrics, %d on the manifest, %d packed", loaded, m.Pairs, len(r.Run.Goka.Packed))
	}
	consumed := rcv.Sum("messaging.client.consumed.messages", map[string]string{"service.name": telemetry.ServiceSleigh})
	if want := counts.Loaded + counts.Repeats + counts.Conflicts + counts.Malformed; consumed != float64(want) {
		t.Errorf("sleigh: %v messages consumed in the metrics, %d counted by the sleigh (%+v)", consumed, want, counts)
	}
	checkPackerMetrics(t, rcv, c.Packer, r.Run.Run)
	checkDemoMetrics(t, rcv, c.Packer, r, traces.Metrics)
	if len(rcv.Find("go.goroutine.count", map[string]string{"service.name": telemetry.ServicePacker})) != 1 {
		t.Errorf("no Go runtime metrics under the packer's name: %v", rcv.Names())
	}
}

// checkDemoMetrics finds that the demo's own readers saw what OTLP
// received, every count of its check, and that it says they equal the
// records read back.
func checkDemoMetrics(t *testing.T, rcv *metricsink.Receiver, pc packer.Config, r demo.Result, m *demo.MetricCounts) {
	t.Helper()
	if m == nil {
		t.Fatal("the demo read no metrics of its own")
	}
	check := r.CheckMetrics(*m)
	if !check.Equal() || check.Unchecked != "" || r.Summary.Metrics == nil || len(check.Counts) < 12 {
		t.Errorf("the demo's metrics check: %s: %s", check, check.Verdict())
	}
	topic := map[string]string{"toys": pc.Topics.Toys, "boxes": pc.Topics.Boxes}
	for _, mc := range check.Counts {
		match := map[string]string{"service.name": mc.Service}
		var name string
		switch mc.What {
		case "sent":
			name, match["messaging.destination.name"] = producers.MetricRecords, topic[mc.Of]
		case "consumed":
			name, match["messaging.destination.name"] = "messaging.client.consumed.messages", topic[mc.Of]
		case "rows":
			name, match["northpole.row.kind"] = packer.MetricRows, mc.Of
		case "dead letters":
			name, match[record.ReasonAttribute] = packer.MetricDeadLetters, mc.Of
		case "loaded":
			name, match["northpole.outcome"] = sleigh.MetricPairs, sleigh.OutcomeLoaded
		default:
			t.Fatalf("a count of %q", mc.What)
		}
		if got := rcv.Sum(name, match); got != float64(mc.Count) {
			t.Errorf("%s %s %s: %d in the demo's summary, %v over OTLP", mc.Service, mc.What, mc.Of, mc.Count, got)
		}
	}
}

// checkPackerMetrics finds in what the packer's metrics said the records
// read back: what it consumed of toys and boxes equals what the topics
// hold; its rows of each kind, and its dead letters of each reason, equal
// the rows of the result topics. Those are deduplicated by key, and the
// packer's counts count every write, so they are equal only when no row
// was written twice: on kfake with no crash, none is (Raw.Duplicates).
func checkPackerMetrics(t *testing.T, rcv *metricsink.Receiver, pc packer.Config, run readback.Run) {
	t.Helper()
	svc := map[string]string{"service.name": telemetry.ServicePacker}
	with := func(kv ...string) map[string]string {
		m := maps.Clone(svc)
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	clockGroup := pc.Groups()[0]
	for topic, read := range map[string]int{pc.Topics.Toys: len(run.Toys), pc.Topics.Boxes: len(run.Boxes)} {
		got := rcv.Sum("messaging.client.consumed.messages", with("messaging.destination.name", topic, "messaging.consumer.group.name", clockGroup))
		if got != float64(read) {
			t.Errorf("packer: %v records of %s consumed in the metrics, %d read back", got, topic, read)
		}
	}
	table := clockGroup + "-table"
	wrote := rcv.Sum("messaging.client.sent.messages", with("messaging.destination.name", table))
	if wrote == 0 || wrote > float64(len(run.Toys)+len(run.Boxes)) {
		t.Errorf("packer: %v decisions written to %s for %d input records", wrote, table, len(run.Toys)+len(run.Boxes))
	}
	if took := rcv.Sum("messaging.client.consumed.messages", with("messaging.destination.name", table)); took != 0 {
		t.Errorf("packer: %v records of %s consumed: the table is read only to recover", took, table)
	}
	if run.Raw.Duplicates != 0 {
		t.Fatalf("%d rows were written twice: the metrics count writes, the sets rows", run.Raw.Duplicates)
	}
	g := run.Goka
	for kind, rows := range map[string]int{packer.RowPacked: len(g.Packed), packer.RowUnpacked: len(g.Unpacked),
		packer.RowSpare: len(g.Spare), packer.RowLate: len(g.Late), packer.RowDead: len(g.Dead)} {
		if got := rcv.Sum(packer.MetricRows, with("northpole.row.kind", kind)); got != float64(rows) || rows == 0 {
			t.Errorf("packer: %v %s rows in the metrics, %d read back", got, kind, rows)
		}
	}
	topics := map[string]string{packer.RowPacked: pc.Topics.Packed, packer.RowUnpacked: pc.Topics.Unpacked,
		packer.RowSpare: pc.Topics.Spare, packer.RowLate: pc.Topics.Late, packer.RowDead: pc.Topics.Dead}
	for kind, topic := range topics {
		rows := rcv.Sum(packer.MetricRows, with("northpole.row.kind", kind))
		if sent := rcv.Sum("messaging.client.sent.messages", with("messaging.destination.name", topic)); sent != rows {
			t.Errorf("packer: %v records sent to %s, %v %s rows", sent, topic, rows, kind)
		}
	}
	for _, size := range record.Sizes {
		rows := rcv.Sum(packer.MetricRows, with("northpole.row.kind", packer.RowPacked, "northpole.size", size, "northpole.line", size))
		if n := rcv.Count(packer.MetricPackDuration, with("northpole.size", size)); float64(n) != rows {
			t.Errorf("packer: %d pack durations of size %s, %v packed rows", n, size, rows)
		}
	}
	reasons := map[string]int{}
	for _, dl := range run.DeadLetters {
		reasons[string(dl.Reason)]++
	}
	for reason, n := range reasons {
		if got := rcv.Sum(packer.MetricDeadLetters, with(record.ReasonAttribute, reason)); got != float64(n) {
			t.Errorf("packer: %v dead letters for %q in the metrics, %d read back", got, reason, n)
		}
	}
	if got := rcv.Sum(packer.MetricDeadLetters, svc); got != float64(len(run.DeadLetters)) || len(reasons) < 2 {
		t.Errorf("packer: %v dead letters in the metrics, %d read back (%v)", got, len(run.DeadLetters), reasons)
	}
	for _, name := range []string{packer.MetricWindowsOpen, packer.MetricDedupeEntries, packer.MetricSlots} {
		if n := len(rcv.Find(name, svc)); n != len(record.Sizes) {
			t.Errorf("packer: %d series of %s, want one per size", n, name)
		}
	}
	for _, name := range []string{packer.MetricRecordsKept, packer.MetricAlignLag, packer.MetricConsumerLag} {
		if len(rcv.Find(name, svc)) == 0 {
			t.Errorf("packer: no %s", name)
		}
	}
}

package demo_test

import (
	"context"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/app/demo"
	"github.com/northpole-workshop/northpole/app/harness"
	"github.com/northpole-workshop/northpole/otel/metricsink"
	"github.com/northpole-workshop/northpole/otel/telemetry"
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
	dt.Finish() // every component stopped: flush
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
	if len(rcv.Find("go.goroutine.count", map[string]string{"service.name": telemetry.ServicePacker})) != 1 {
		t.Errorf("no Go runtime metrics under the packer's name: %v", rcv.Names())
	}
}

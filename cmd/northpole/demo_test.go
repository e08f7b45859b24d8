package main

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/otel/backend/servicemap"
	"github.com/northpole-workshop/northpole/otel/telemetry"
)

// TestDemoDeliversEverySpan: the demo, with default settings and an OTLP
// server on loopback, sends it every span it ended, over gRPC and HTTP, says
// so, and its own map's edges equal the records it read back; with the
// metrics not exported, the demo still reads its own and finds them equal
// to the records read back.
func TestDemoDeliversEverySpan(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	for _, proto := range []string{telemetry.ProtocolGRPC, telemetry.ProtocolHTTPProtobuf} {
		t.Run(proto, func(t *testing.T) {
			rcv, err := servicemap.Listen(servicemap.NewBuilder(servicemap.Options{}), "127.0.0.1:0", "127.0.0.1:0", slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			defer rcv.Close()
			addr := rcv.HTTPAddr()
			if proto == telemetry.ProtocolGRPC {
				addr = rcv.GRPCAddr()
			}
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+addr)
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", proto)
			t.Setenv("OTEL_METRICS_EXPORTER", "none")
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			out, code := runCLI(t, ctx, "demo", "--toys", "1000", "--boxes", "1000")
			if code != 0 {
				t.Fatalf("demo: exit %d\n%s", code, out)
			}
			m := regexp.MustCompile(`spans: (\d+) ended`).FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("the demo did not count its spans:\n%s", out)
			}
			ended, _ := strconv.ParseInt(m[1], 10, 64)
			_, received := rcv.Received()
			t.Logf("%s: the demo ended %d spans, the receiver got %d", proto, ended, received)
			if received != ended || ended < 6_000 {
				t.Errorf("the demo ended %d spans, the receiver got %d", ended, received)
			}
			for _, want := range []string{
				fmt.Sprintf("otlp       %d exported, 0 dropped", ended),
				fmt.Sprintf("servicemap %d exported, 0 dropped", ended),
				"pairs packed: equal",
				"metrics: toy-elves sent toys 1", "\n  equal to the records read back\n",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("no %q in the output:\n%s", want, out)
				}
			}
			if strings.Contains(out, "parent was not received") {
				t.Errorf("the demo's map missed parents:\n%s", out)
			}
		})
	}
}

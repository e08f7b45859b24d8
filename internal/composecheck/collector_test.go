package composecheck

import (
	"context"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestCollectorRunsItsStaticConfig: the collector runs the config file it
// mounts, without SigNoz's OpAMP manager. signoz-otel-collector v0.144.5
// with a manager config starts its pipelines on `nop` receivers and opens
// OTLP only once SigNoz sends a config (opamp/server_client.go Start), which
// SigNoz v0.129.0 does only after someone has signed up; docker-compose.yml
// has the details. The flag can also come from the environment (the
// collector's viper reads SIGNOZ_OTEL_COLLECTOR_<FLAG>, cmd/signozotelcollector/main.go).
func TestCollectorRunsItsStaticConfig(t *testing.T) {
	_, col := theCollector(t, theProject(t))
	cmd := strings.Join(col.Command, " ")
	for _, flag := range []string{"--manager-config", "--copy-path"} {
		if strings.Contains(cmd, flag) {
			t.Errorf("the collector runs with %s: %q", flag, cmd)
		}
	}
	for _, name := range []string{"SIGNOZ_OTEL_COLLECTOR_MANAGER_CONFIG", "SIGNOZ_OTEL_COLLECTOR_COPY_PATH"} {
		if _, set := col.Environment[name]; set {
			t.Errorf("the collector's environment sets %s", name)
		}
	}
	if !strings.Contains(cmd, "exec /signoz-otel-collector --config=") {
		t.Errorf("the collector does not run with --config: %q", cmd)
	}
	readCollectorConfig(t, col) // the file is mounted and parses
}

// probePort finds the port a /dev/tcp probe connects to on 127.0.0.1.
var probePort = regexp.MustCompile(`/dev/tcp/127\.0\.0\.1/(\d+)\b`)

// collectorProbe returns the collector healthcheck's bash script and the
// port it connects to.
func collectorProbe(t *testing.T) (script, port string) {
	t.Helper()
	_, col := theCollector(t, theProject(t))
	hc := col.HealthCheck
	if hc == nil || hc.Disable || len(hc.Test) != 4 || hc.Test[0] != "CMD" || hc.Test[1] != "bash" || hc.Test[2] != "-c" {
		t.Fatalf("the collector's healthcheck is not [CMD bash -c <script>]: %+v", hc)
	}
	script = hc.Test[3]
	m := probePort.FindAllStringSubmatch(script, -1)
	if len(m) != 1 {
		t.Fatalf("the collector's healthcheck does not connect to one port on 127.0.0.1: %q", script)
	}
	return script, m[0][1]
}

// TestCollectorHealthcheckAsksOTLP: the collector's healthcheck is an OTLP
// export to its HTTP receiver, not a question to the health_check
// extension, which stays up while no receiver runs (SigNoz/signoz#11620,
// SigNoz/signoz-otel-collector#920); and its start period covers the time
// `migrate sync check` may wait for the schema on a first start.
func TestCollectorHealthcheckAsksOTLP(t *testing.T) {
	_, col := theCollector(t, theProject(t))
	cfg := readCollectorConfig(t, col)
	script, port := collectorProbe(t)

	recv, ok := cfg.Receivers.OTLP.Protocols["http"]
	if !ok || !strings.HasSuffix(recv.Endpoint, ":"+port) {
		t.Errorf("the healthcheck connects to port %s, but the OTLP HTTP receiver listens on %q", port, recv.Endpoint)
	}
	for name, ext := range cfg.Extensions {
		if strings.HasSuffix(ext.Endpoint, ":"+port) {
			t.Errorf("the healthcheck's port %s is extension %s's, not the receiver's", port, name)
		}
	}
	path := recv.TracesURLPath
	if path == "" {
		path = "/v1/traces" // otlpreceiver's default (factory.go defaultTracesURLPath)
	}
	for _, want := range []string{
		"POST " + path + " HTTP/1.0", // HTTP/1.0: the receiver closes the connection after answering
		"Content-Type: application/x-protobuf",
		"Content-Length: 0", // no spans: nothing enters the pipeline
		"grep -q ' 200 '",
	} {
		if !strings.Contains(script, want) {
			t.Errorf("the collector's healthcheck does not send/check %q: %q", want, script)
		}
	}

	hc := col.HealthCheck
	wait, err := time.ParseDuration(env(col, "SIGNOZ_OTEL_COLLECTOR_TIMEOUT"))
	if err != nil {
		t.Fatalf("SIGNOZ_OTEL_COLLECTOR_TIMEOUT (how long `migrate sync check` waits): %v", err)
	}
	if hc.StartPeriod == nil || time.Duration(*hc.StartPeriod) < wait {
		t.Errorf("the collector's healthcheck start_period %v is shorter than the %v `migrate sync check` may wait on a first start", hc.StartPeriod, wait)
	}
	if hc.Interval == nil || hc.Timeout == nil || hc.Retries == nil || *hc.Retries == 0 {
		t.Errorf("the collector's healthcheck needs interval, timeout and retries: %+v", hc)
	} else if *hc.Timeout >= *hc.Interval {
		t.Errorf("the collector's healthcheck timeout %v is not below its interval %v", hc.Timeout, hc.Interval)
	}
}

// otlpTracesHandler answers like the collector's OTLP HTTP receiver
// (go.opentelemetry.io/collector/receiver/otlpreceiver v0.144.0) for what the
// probe can send: POST only (otlphttp.go readContentType, 405 otherwise), a
// protobuf or JSON content type (415 otherwise), and an export request
// without spans answered 200 with an empty response (internal/trace/otlp.go
// Export returns before the pipeline). A request with spans would need the
// protobuf decoder; the probe sends none, so here it is a 400.
func otlpTracesHandler(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "405 method not allowed, supported: [POST]", http.StatusMethodNotAllowed)
		return
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct != "application/x-protobuf" && ct != "application/json" {
		http.Error(w, "415 unsupported media type", http.StatusUnsupportedMediaType)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil || len(body) > 0 {
		http.Error(w, "not an empty export request", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(http.StatusOK)
}

// TestCollectorProbeRuns runs the healthcheck's script with bash, as Docker
// does, against stand-ins for the collector: it passes when an OTLP HTTP
// receiver with a traces pipeline answers, and fails when nothing listens,
// when the receiver has no traces pipeline, and when it answers an error.
func TestCollectorProbeRuns(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but no bash to run the collector's healthcheck with:", err)
		}
		t.Skip("no bash here (env gate: CI=true makes this a failure):", err)
	}
	script, port := collectorProbe(t)
	run := func(addr string) error {
		_, p, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		local := strings.Replace(script, "/dev/tcp/127.0.0.1/"+port, "/dev/tcp/127.0.0.1/"+p, 1)
		out, err := exec.CommandContext(ctx, bash, "-c", local).CombinedOutput()
		if ctx.Err() != nil {
			t.Fatalf("the probe did not finish: %s", out)
		}
		return err
	}
	serve := func(mux *http.ServeMux) string {
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		return srv.Listener.Addr().String()
	}

	receiver := http.NewServeMux()
	receiver.HandleFunc("/v1/traces", otlpTracesHandler)
	receiver.HandleFunc("/v1/metrics", otlpTracesHandler)
	if err := run(serve(receiver)); err != nil {
		t.Errorf("the probe fails against an OTLP HTTP receiver: %v", err)
	}

	metricsOnly := http.NewServeMux()
	metricsOnly.HandleFunc("/v1/metrics", otlpTracesHandler)
	if err := run(serve(metricsOnly)); err == nil {
		t.Error("the probe passes against a receiver without a traces pipeline (404)")
	}

	refusing := http.NewServeMux()
	refusing.HandleFunc("/v1/traces", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
	})
	if err := run(serve(refusing)); err == nil {
		t.Error("the probe passes against a receiver answering 503")
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	if err := run(closed); err == nil {
		t.Error("the probe passes although nothing listens")
	}
}

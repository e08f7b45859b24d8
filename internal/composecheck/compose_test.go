package composecheck

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/types"
	"github.com/distribution/reference"
	"go.yaml.in/yaml/v4"

	"github.com/northpole-workshop/northpole/risingwave"
)

// The workshop's services, as docs/WORKSHOP.md describes them. A renamed or lost
// service must show up here, not in a user's `docker compose up`.
var wantServices = []string{
	"kafka", "kafka-topics",
	"risingwave", "risingwave-sql",
	"zookeeper", "clickhouse-init", "clickhouse", "signoz-migrator", "signoz-otel-collector", "signoz",
	"packer", "sleigh", "toy-elves", "box-elves",
}

// collectorImage is the repository of SigNoz's collector image.
const collectorImage = "docker.io/signoz/signoz-otel-collector"

func TestComposeFileLoadsAndValidates(t *testing.T) {
	p := theProject(t)
	if len(projectWarn) > 0 {
		t.Errorf("compose-go warned while loading (a variable without a default?): %q", projectWarn)
	}
	if p.Name != "northpole" {
		t.Errorf("project name %q, want northpole (it prefixes volume and container names)", p.Name)
	}
	var got []string
	for name := range p.AllServices() {
		got = append(got, name)
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(wantServices))
	if !slices.Equal(got, want) {
		t.Errorf("services %v, want %v", got, want)
	}
}

// TestElvesStartOnlyWhenAsked: a plain `docker compose up` (no profile) runs
// everything but the elves.
func TestElvesStartOnlyWhenAsked(t *testing.T) {
	p, _ := loadCompose(t, nil, "")
	for _, name := range []string{"toy-elves", "box-elves"} {
		if _, on := p.Services[name]; on {
			t.Errorf("%s starts with a plain `docker compose up`; it should need --profile elves", name)
		}
		if _, off := p.DisabledServices[name]; !off {
			t.Errorf("%s is not among the services a plain `up` leaves out", name)
		}
	}
	for _, name := range wantServices {
		if name == "toy-elves" || name == "box-elves" {
			continue
		}
		if _, on := p.Services[name]; !on {
			t.Errorf("%s does not start with a plain `docker compose up`", name)
		}
	}
}

// TestInterpolation: the ${VAR:-default} settings take the user's values.
func TestInterpolation(t *testing.T) {
	p, warn := loadCompose(t, []string{"ELVES_COUNT=123", "ELVES_RATE=7", "ELVES_SEED=42", "SIGNOZ_JWT_SECRET=s3"})
	if len(warn) > 0 {
		t.Errorf("warnings: %q", warn)
	}
	for _, name := range []string{"toy-elves", "box-elves"} {
		cmd := service(t, p, name).Command
		for flag, want := range map[string]string{"count": "123", "rate": "7", "seed": "42"} {
			if v, _ := flagValue(cmd, flag); v != want {
				t.Errorf("%s --%s = %q with the variable set, want %q", name, flag, v, want)
			}
		}
	}
	if v := env(service(t, p, "signoz"), "SIGNOZ_TOKENIZER_JWT_SECRET"); v != "s3" {
		t.Errorf("signoz JWT secret %q, want the variable's value", v)
	}
	// And without them, the defaults.
	if v, _ := flagValue(service(t, theProject(t), "toy-elves").Command, "count"); v != "6000" {
		t.Errorf("default --count %q, want 6000", v)
	}
}

// pinned says whether an image reference names one version: a digest, or a
// tag with a digit in it that is not "latest". Tags such as "edge",
// "stable" or "nonroot" move.
func pinned(ref string) error {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return err
	}
	if _, ok := named.(reference.Digested); ok {
		return nil
	}
	tagged, ok := named.(reference.Tagged)
	if !ok {
		return fmt.Errorf("%s has no tag (it means latest)", ref)
	}
	tag := tagged.Tag()
	if tag == "latest" || !strings.ContainsAny(tag, "0123456789") {
		return fmt.Errorf("%s: tag %q is not a version", ref, tag)
	}
	return nil
}

func TestPinnedRule(t *testing.T) {
	for ref, ok := range map[string]bool{
		"postgres":                                 false,
		"postgres:latest":                          false,
		"alpine:edge":                              false,
		"gcr.io/distroless/static:nonroot":         false,
		"postgres:17.6-alpine":                     true,
		"signoz/signoz:v0.129.0":                   true,
		"alpine@sha256:" + strings.Repeat("a", 64): true,
	} {
		if err := pinned(ref); (err == nil) != ok {
			t.Errorf("pinned(%q) = %v, want ok=%v", ref, err, ok)
		}
	}
}

// TestImagesArePinned: every image pulled is one version, so the workshop a
// user starts is the one described. The image built here is named with a
// fixed tag, and its Dockerfile's base images are pinned (dockerfile_test.go).
func TestImagesArePinned(t *testing.T) {
	for name, s := range theProject(t).AllServices() {
		if s.Image == "" {
			t.Errorf("%s: no image name", name)
			continue
		}
		if s.Build != nil {
			if strings.HasSuffix(s.Image, ":latest") || !strings.Contains(s.Image, ":") {
				t.Errorf("%s: built image %q needs a fixed tag", name, s.Image)
			}
			continue
		}
		if err := pinned(s.Image); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestPortsOnLoopback: nothing is reachable from other machines. Without a
// host address Docker publishes on every interface (and around the host's
// firewall).
func TestPortsOnLoopback(t *testing.T) {
	n := 0
	for name, s := range theProject(t).AllServices() {
		for _, port := range s.Ports {
			n++
			if port.HostIP != "127.0.0.1" {
				t.Errorf("%s: port %d is published on %q, want 127.0.0.1", name, port.Target, port.HostIP)
			}
			if port.Published == "" {
				t.Errorf("%s: port %d has no fixed host port", name, port.Target)
			}
		}
	}
	if n == 0 {
		t.Error("no published port at all: the check checked nothing")
	}
}

// TestDependencyConditions: `service_healthy` waits forever on a service
// without a healthcheck (compose fails it), and `service_completed_successfully`
// on a service that restarts always never completes.
func TestDependencyConditions(t *testing.T) {
	all := theProject(t).AllServices()
	conditions := map[string]int{}
	for name, s := range all {
		for dep, d := range s.DependsOn {
			target, ok := all[dep]
			if !ok {
				t.Errorf("%s depends on %s, which does not exist", name, dep)
				continue
			}
			conditions[d.Condition]++
			switch d.Condition {
			case types.ServiceConditionHealthy:
				hc := target.HealthCheck
				if hc == nil || hc.Disable || len(hc.Test) == 0 || hc.Test[0] == "NONE" {
					t.Errorf("%s waits for %s to be healthy, but %s has no healthcheck", name, dep, dep)
				}
			case types.ServiceConditionCompletedSuccessfully:
				if target.Restart == types.RestartPolicyAlways || target.Restart == types.RestartPolicyUnlessStopped {
					t.Errorf("%s waits for %s to complete, but %s restarts %s", name, dep, dep, target.Restart)
				}
			}
		}
	}
	if conditions[types.ServiceConditionHealthy] == 0 || conditions[types.ServiceConditionCompletedSuccessfully] == 0 {
		t.Errorf("conditions used: %v; expected both service_healthy and service_completed_successfully", conditions)
	}
}

// TestBindMountsExist: every file or folder mounted from the repository is
// there; Docker would otherwise create an empty directory in its place.
func TestBindMountsExist(t *testing.T) {
	root := repoRoot(t)
	for name, s := range theProject(t).AllServices() {
		for _, v := range s.Volumes {
			if v.Type != types.VolumeTypeBind {
				continue
			}
			if !strings.HasPrefix(v.Source, root+string(filepath.Separator)) {
				t.Errorf("%s mounts %s, outside the repository", name, v.Source)
			}
			if _, err := os.Stat(v.Source); err != nil {
				t.Errorf("%s mounts %s: %v", name, v.Source, err)
			}
			if !v.ReadOnly {
				t.Errorf("%s mounts %s writable; the containers have no business changing the repository", name, v.Source)
			}
		}
	}
}

// northpoleServices are the services that run northpole's image.
func northpoleServices(t *testing.T, p *types.Project) map[string]types.ServiceConfig {
	t.Helper()
	out := map[string]types.ServiceConfig{}
	for name, s := range p.AllServices() {
		if s.Build != nil {
			out[name] = s
		}
	}
	for name, s := range p.AllServices() {
		if s.Build == nil {
			for _, b := range out {
				if s.Image == b.Image {
					t.Errorf("%s runs %s without its build section: compose would try to pull it", name, s.Image)
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no service builds northpole's image")
	}
	return out
}

// The service.name each component must trace under: the names the demo and
// `northpole servicemap` use (cmd/northpole/tracing.go).
func wantServiceName(cmd []string) string {
	switch {
	case len(cmd) >= 2 && cmd[0] == "elves" && cmd[1] == "toys":
		return "toy-elves"
	case len(cmd) >= 2 && cmd[0] == "elves" && cmd[1] == "boxes":
		return "box-elves"
	case len(cmd) >= 2 && cmd[0] == "process":
		return cmd[1] // packer, sleigh
	}
	return ""
}

// theCollector returns SigNoz's collector service (its image, not the
// migrator, which runs the same image).
func theCollector(t *testing.T, p *types.Project) (string, types.ServiceConfig) {
	t.Helper()
	var names []string
	var col types.ServiceConfig
	for name, s := range p.AllServices() {
		if named, err := reference.ParseNormalizedNamed(s.Image); err == nil && named.Name() == collectorImage && !strings.Contains(strings.Join(s.Command, " "), "migrate bootstrap") {
			names = append(names, name)
			col = s
		}
	}
	if len(names) != 1 {
		t.Fatalf("want one SigNoz collector service (image %s, not the migrator), found %v", collectorImage, names)
	}
	return names[0], col
}

// TestTracingSettings: every service that runs northpole exports to SigNoz's
// collector under its component's service name, and the collector's config
// receives OTLP on that port. None of them lets a slow or failed SigNoz stop
// it: the long-running ones (started by a plain `up`) only need the
// collector started; the ones run on demand (the elves, profile "elves")
// wait until the collector is healthy, since they make the first span of
// every trace, but do not require it (a collector that never gets healthy
// gets a warning from compose, not a workshop that does not start).
func TestTracingSettings(t *testing.T) {
	p := theProject(t)
	colName, col := theCollector(t, p)
	cfg := readCollectorConfig(t, col)
	for name, s := range northpoleServices(t, p) {
		endpoint, svcName := env(s, "OTEL_EXPORTER_OTLP_ENDPOINT"), env(s, "OTEL_SERVICE_NAME")
		if want := wantServiceName(s.Command); want == "" || svcName != want {
			t.Errorf("%s: OTEL_SERVICE_NAME %q, want %q for command %q", name, svcName, want, s.Command)
		}
		// The SDK's default interval, 60 s, is as long as the elves' whole
		// run: the dashboard's rates would be a point or two.
		if ms, err := strconv.Atoi(env(s, "OTEL_METRIC_EXPORT_INTERVAL")); err != nil || ms <= 0 || ms > 15000 {
			t.Errorf("%s: OTEL_METRIC_EXPORT_INTERVAL %q, want at most 15000 ms", name, env(s, "OTEL_METRIC_EXPORT_INTERVAL"))
		}
		u, err := url.Parse(endpoint)
		if endpoint == "" || err != nil || u.Scheme != "http" {
			t.Errorf("%s: OTEL_EXPORTER_OTLP_ENDPOINT %q is not an http:// URL", name, endpoint)
			continue
		}
		if u.Hostname() != colName {
			t.Errorf("%s: exports to %s, which is not the SigNoz collector service %s", name, u.Host, colName)
			continue
		}
		wantPort := "4318" // otel/telemetry's default protocol, http/protobuf
		if proto := env(s, "OTEL_EXPORTER_OTLP_PROTOCOL"); proto == "grpc" {
			wantPort = "4317"
		} else if proto != "" && proto != "http/protobuf" {
			t.Errorf("%s: OTEL_EXPORTER_OTLP_PROTOCOL %q is not one otel/telemetry reads", name, proto)
		}
		if u.Port() != wantPort {
			t.Errorf("%s: exports to port %q, want %s for its protocol", name, u.Port(), wantPort)
		}
		cfg.checkReceives(t, wantPort)

		d, ok := s.DependsOn[colName]
		switch {
		case !ok:
			t.Errorf("%s: does not depend on %s: `docker compose up %s` would not start the collector", name, colName, name)
		case len(s.Profiles) == 0 && d.Condition != types.ServiceConditionStarted:
			t.Errorf("%s: depends on %s with %s; want %s, so that a slow SigNoz does not hold up the workshop", name, colName, d.Condition, types.ServiceConditionStarted)
		case len(s.Profiles) > 0 && (d.Condition != types.ServiceConditionHealthy || d.Required):
			t.Errorf("%s: depends on %s with %s, required %v; want %s, required false (wait for the receiver, run anyway if it fails)", name, colName, d.Condition, d.Required, types.ServiceConditionHealthy)
		}
	}
}

// collectorConfig is what the checks read of the collector's config file.
type collectorConfig struct {
	file      string
	Receivers struct {
		OTLP struct {
			Protocols map[string]struct {
				Endpoint      string `yaml:"endpoint"`
				TracesURLPath string `yaml:"traces_url_path"`
			} `yaml:"protocols"`
		} `yaml:"otlp"`
		KafkaMetrics *kafkaMetricsConfig `yaml:"kafkametrics"`
	} `yaml:"receivers"`
	Extensions map[string]struct {
		Endpoint string `yaml:"endpoint"`
	} `yaml:"extensions"`
	Service struct {
		Pipelines map[string]struct {
			Receivers []string `yaml:"receivers"`
			Exporters []string `yaml:"exporters"`
		} `yaml:"pipelines"`
	} `yaml:"service"`
}

// readCollectorConfig reads the --config file the collector service mounts
// from the repository.
func readCollectorConfig(t *testing.T, col types.ServiceConfig) collectorConfig {
	t.Helper()
	var file string
	for _, v := range col.Volumes {
		if v.Type == types.VolumeTypeBind && strings.Contains(strings.Join(col.Command, " "), "--config="+v.Target) {
			file = v.Source
		}
	}
	if file == "" {
		t.Fatal("the collector's --config file is not mounted from the repository")
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var cfg collectorConfig
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	cfg.file = file
	return cfg
}

// otlpProtocol is the OTLP receiver protocol served on a port.
var otlpProtocol = map[string]string{"4318": "http", "4317": "grpc"}

// checkReceives checks that OTLP arrives on port from other containers and
// goes through the traces pipeline into ClickHouse, and OTLP metrics (the
// components' own, otel/README.md "Metrics") through the metrics pipeline.
func (cfg collectorConfig) checkReceives(t *testing.T, port string) {
	t.Helper()
	protocol := otlpProtocol[port]
	if ep := cfg.Receivers.OTLP.Protocols[protocol].Endpoint; !strings.HasSuffix(ep, ":"+port) || !strings.HasPrefix(ep, "0.0.0.0:") {
		t.Errorf("%s: OTLP %s receiver on %q, want 0.0.0.0:%s (other containers send to it)", cfg.file, protocol, ep, port)
	}
	if tr := cfg.Service.Pipelines["traces"]; !slices.Contains(tr.Receivers, "otlp") || !slices.Contains(tr.Exporters, "clickhousetraces") {
		t.Errorf("%s: the traces pipeline does not take OTLP into clickhousetraces: %+v", cfg.file, tr)
	}
	if m := cfg.Service.Pipelines["metrics"]; !slices.Contains(m.Receivers, "otlp") || !slices.Contains(m.Exporters, "signozclickhousemetrics") {
		t.Errorf("%s: the metrics pipeline does not take OTLP into signozclickhousemetrics: %+v", cfg.file, m)
	}
}

// TestNorthpoleSettingsAgree: W, L, the brokers and the partition count are
// the same everywhere: in the packer, the elves, the topics job and the
// RisingWave script. A packer with another W than the script's would make
// the Goka/RisingWave comparison differ for no reason of either engine.
func TestNorthpoleSettingsAgree(t *testing.T) {
	p := theProject(t)
	script := risingwave.DefaultScriptOptions()
	topics := service(t, p, "kafka-topics")
	partitions := env(topics, "NP_PARTITIONS")
	if partitions == "" {
		t.Fatal("kafka-topics has no NP_PARTITIONS")
	}
	advertised := env(service(t, p, "kafka"), "KAFKA_ADVERTISED_LISTENERS")
	for name, s := range northpoleServices(t, p) {
		brokers, ok := flagValue(s.Command, "brokers")
		if !ok || !strings.Contains(advertised, "://"+brokers) {
			t.Errorf("%s: --brokers %q is not a listener Kafka advertises (%s)", name, brokers, advertised)
		}
		if v, _ := flagValue(s.Command, "partitions"); v != partitions {
			t.Errorf("%s: --partitions %q, the topics job creates %s", name, v, partitions)
		}
		if s.Command[0] == "process" && s.Command[1] == "sleigh" {
			continue // the sleigh has no windows
		}
		for flag, want := range map[string]time.Duration{"window": script.Window, "lateness": script.Lateness} {
			v, ok := flagValue(s.Command, flag)
			d, err := time.ParseDuration(v)
			if !ok || err != nil || d != want {
				t.Errorf("%s: --%s %q, the RisingWave script has %v", name, flag, v, want)
			}
		}
	}
	made := strings.Fields(env(topics, "NP_TOPICS"))
	for _, topic := range []string{script.ToysTopic, script.BoxesTopic} {
		if !slices.Contains(made, topic) {
			t.Errorf("the RisingWave script reads topic %q, which kafka-topics does not create (%v)", topic, made)
		}
	}
}

// The sed expression risingwave-sql runs (with $NP_BROKERS_IN_FILE and
// $NP_BROKERS expanded by its shell); rewriteBrokers is its Go twin. It
// replaces every occurrence, so the script's header comment names the Kafka
// that is used, as a script generated for it would.
const sedExpr = `s/$NP_BROKERS_IN_FILE/$NP_BROKERS/g`

func rewriteBrokers(script, from, to string) (string, int) {
	return strings.ReplaceAll(script, from, to), strings.Count(script, from)
}

// TestRisingWaveJobRunsTheTestedSQL: the one-shot job applies the SQL files
// the risingwave package checks (risingwave.sql must equal
// risingwave.Script(DefaultScriptOptions()), TestCheckedInScriptIsCurrent),
// changed in nothing but the Kafka address RisingWave uses in this network.
func TestRisingWaveJobRunsTheTestedSQL(t *testing.T) {
	root := repoRoot(t)
	p := theProject(t)
	job := service(t, p, "risingwave-sql")

	files, err := filepath.Glob(filepath.Join(root, "risingwave", "*.sql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no risingwave/*.sql (%v)", err)
	}
	mounted := map[string]string{} // source -> target
	for _, v := range job.Volumes {
		if v.Type == types.VolumeTypeBind {
			mounted[v.Source] = v.Target
		}
	}
	for _, f := range files {
		if _, ok := mounted[f]; !ok {
			t.Errorf("risingwave-sql does not mount %s", f)
		}
	}
	scriptFile := filepath.Join(root, "risingwave", "risingwave.sql")
	if target := mounted[scriptFile]; target == "" || env(job, "NP_SQL") != target {
		t.Fatalf("NP_SQL %q is not where risingwave.sql is mounted (%q)", env(job, "NP_SQL"), target)
	}

	raw, err := os.ReadFile(scriptFile)
	if err != nil {
		t.Fatal(err)
	}
	file := string(raw)
	opts := risingwave.DefaultScriptOptions()
	tested, err := risingwave.Script(opts)
	if err != nil {
		t.Fatal(err)
	}
	if file != tested {
		t.Fatal("risingwave/risingwave.sql differs from risingwave.Script(DefaultScriptOptions()); regenerate it (risingwave_test.go, -update)")
	}

	from, to := env(job, "NP_BROKERS_IN_FILE"), env(job, "NP_BROKERS")
	if from != opts.Brokers {
		t.Errorf("NP_BROKERS_IN_FILE %q, but the script names Kafka %q", from, opts.Brokers)
	}
	// sed reads the first as a regular expression and the second as a
	// replacement: neither may hold characters those treat specially.
	if regexp.QuoteMeta(from) != from || strings.ContainsAny(from, "/\n") {
		t.Errorf("NP_BROKERS_IN_FILE %q has characters special to sed", from)
	}
	if to == "" || strings.ContainsAny(to, `/&\`+"\n'") {
		t.Errorf("NP_BROKERS %q is empty or has characters special to sed", to)
	}
	if packer, _ := flagValue(service(t, p, "packer").Command, "brokers"); to != packer {
		t.Errorf("RisingWave would read Kafka at %q, the packer at %q", to, packer)
	}
	command := strings.Join(job.Command, "\n")
	if !strings.Contains(command, `sed "`+sedExpr+`" "$NP_SQL"`) {
		t.Errorf("risingwave-sql's command does not run sed %q on $NP_SQL; rewriteBrokers here must match what it runs", sedExpr)
	}
	if !strings.Contains(command, "ON_ERROR_STOP=1") {
		t.Error("risingwave-sql runs psql without ON_ERROR_STOP=1: a failing statement would not fail the job")
	}

	rewritten, n := rewriteBrokers(file, from, to)
	if n == 0 {
		t.Fatalf("the script does not name Kafka %q: nothing to rewrite", from)
	}
	opts.Brokers = to
	want, err := risingwave.Script(opts)
	if err != nil {
		t.Fatal(err)
	}
	if rewritten != want {
		t.Error("the rewritten script is not risingwave.Script with Brokers = NP_BROKERS: the rewrite changes more, or less, than the Kafka address")
	}

	views := regexp.MustCompile(`(?m)^CREATE MATERIALIZED VIEW (\w+) AS`).FindAllStringSubmatch(file, -1)
	if len(views) == 0 || env(job, "NP_LAST_VIEW") != views[len(views)-1][1] {
		t.Errorf("NP_LAST_VIEW %q is not the script's last materialized view", env(job, "NP_LAST_VIEW"))
	}

	for dep, cond := range map[string]string{"risingwave": types.ServiceConditionHealthy, "kafka-topics": types.ServiceConditionCompletedSuccessfully} {
		if d, ok := job.DependsOn[dep]; !ok || d.Condition != cond {
			t.Errorf("risingwave-sql does not wait for %s (%s)", dep, cond)
		}
	}
}

func TestRewriteBrokers(t *testing.T) {
	got, n := rewriteBrokers("-- Kafka localhost:9092\n  properties.bootstrap.server = 'localhost:9092',", "localhost:9092", "kafka:9092")
	want := "-- Kafka kafka:9092\n  properties.bootstrap.server = 'kafka:9092',"
	if got != want || n != 2 {
		t.Errorf("rewriteBrokers = %q (%d), want %q (2)", got, n, want)
	}
}

// TestHealthchecksProbeTheListenAddress: a northpole service with a
// healthcheck probes /healthz on the port its --listen serves, inside its
// container; one that listens on loopback only could not be published.
func TestHealthchecksProbeTheListenAddress(t *testing.T) {
	n := 0
	for name, s := range northpoleServices(t, theProject(t)) {
		hc := s.HealthCheck
		if hc == nil || len(hc.Test) == 0 {
			continue
		}
		n++
		listen, ok := flagValue(s.Command, "listen")
		if !ok {
			t.Errorf("%s has a healthcheck but no --listen", name)
			continue
		}
		host, port, err := net.SplitHostPort(listen)
		if err != nil || (host != "" && host != "0.0.0.0") {
			t.Errorf("%s: --listen %q, want 0.0.0.0:PORT so that the published port reaches it", name, listen)
			continue
		}
		if probe := "http://127.0.0.1:" + port + "/healthz"; !slices.Contains(hc.Test, probe) {
			t.Errorf("%s: healthcheck %q does not ask %s", name, hc.Test, probe)
		}
		published := false
		for _, p := range s.Ports {
			published = published || strconv.Itoa(int(p.Target)) == port
		}
		if !published {
			t.Errorf("%s: --listen %s, but port %s is not published", name, listen, port)
		}
	}
	if n < 2 {
		t.Errorf("%d northpole services with a healthcheck, want the packer and the sleigh", n)
	}
}

package composecheck

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/distribution/reference"
)

// kafkaMetricsConfig is what the checks read of the collector's kafkametrics
// receiver (opentelemetry-collector-contrib receiver/kafkametricsreceiver
// v0.144.0, the version signoz-otel-collector v0.144.5 builds in: config.go,
// and pkg/kafka/configkafka for brokers and protocol_version).
type kafkaMetricsConfig struct {
	Brokers            []string `yaml:"brokers"`
	ProtocolVersion    string   `yaml:"protocol_version"`
	Scrapers           []string `yaml:"scrapers"`
	CollectionInterval string   `yaml:"collection_interval"`
}

// signozChartStep is the step SigNoz v0.129.0's Kafka charts aggregate by
// (stepInterval: 60 in frontend/src/pages/MessagingQueues/MQDetails/
// MetricPage/MetricPageUtil.ts and in the consumer lag graph of
// MessagingQueuesUtils.ts).
const signozChartStep = 60 * time.Second

// kafka4Floor is the oldest protocol Apache Kafka 4 accepts (KIP-896: the
// request versions of Kafka 2.1 and later).
var kafka4Floor = [3]int{2, 1, 0}

// TestCollectorScrapesKafka: SigNoz's Kafka pages read consumer lag and
// friends from the collector's kafkametrics receiver, so the collector
// scrapes the workshop's Kafka with it: at the address the workshop's own
// services use, in a protocol the broker speaks, with the three scrapers
// whose metrics the pages chart, at an interval that divides the charts'
// step, into the metrics pipeline that writes to SigNoz's ClickHouse.
func TestCollectorScrapesKafka(t *testing.T) {
	p := theProject(t)
	_, col := theCollector(t, p)
	cfg := readCollectorConfig(t, col)
	km := cfg.Receivers.KafkaMetrics
	if km == nil {
		t.Fatalf("%s: no kafkametrics receiver", cfg.file)
	}

	brokers := map[string]bool{}
	for _, s := range northpoleServices(t, p) {
		if b, ok := flagValue(s.Command, "brokers"); ok {
			brokers[b] = true
		}
	}
	if len(km.Brokers) == 0 {
		t.Errorf("%s: kafkametrics has no brokers (its default, localhost:9092, is the collector's own container)", cfg.file)
	}
	for _, b := range km.Brokers {
		if !brokers[b] {
			t.Errorf("%s: kafkametrics scrapes %q, not the Kafka the workshop's services use (%v)", cfg.file, b, brokers)
		}
	}

	broker := kafkaImageVersion(t, service(t, p, "kafka").Image)
	if v, err := parseVersion(km.ProtocolVersion); err != nil {
		t.Errorf("%s: kafkametrics protocol_version %q: %v", cfg.file, km.ProtocolVersion, err)
	} else if compareVersions(v, kafka4Floor) < 0 || compareVersions(v, broker) > 0 {
		t.Errorf("%s: kafkametrics protocol_version %q, want between %v (Kafka 4's oldest) and the broker's %v", cfg.file, km.ProtocolVersion, kafka4Floor, broker)
	}

	// brokers: the broker count; topics: partitions, offsets and replicas
	// per topic; consumers: the consumer groups' offsets, members and lag.
	want := []string{"brokers", "consumers", "topics"}
	if got := slices.Sorted(slices.Values(km.Scrapers)); !slices.Equal(got, want) {
		t.Errorf("%s: kafkametrics scrapers %v, want %v (each feeds SigNoz's Kafka charts)", cfg.file, km.Scrapers, want)
	}

	if d, err := time.ParseDuration(km.CollectionInterval); err != nil || d <= 0 || signozChartStep%d != 0 {
		t.Errorf("%s: kafkametrics collection_interval %q does not divide SigNoz's %v chart step (parse error: %v)", cfg.file, km.CollectionInterval, signozChartStep, err)
	}

	m := cfg.Service.Pipelines["metrics"]
	if !slices.Contains(m.Receivers, "kafkametrics") || !slices.Contains(m.Exporters, "signozclickhousemetrics") {
		t.Errorf("%s: the metrics pipeline does not take kafkametrics into signozclickhousemetrics: %+v", cfg.file, m)
	}
}

// kafkaImageVersion is the Kafka version in an apache/kafka image's tag.
func kafkaImageVersion(t *testing.T, image string) [3]int {
	t.Helper()
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		t.Fatalf("kafka image %q: %v", image, err)
	}
	tagged, ok := named.(reference.Tagged)
	if !ok {
		t.Fatalf("kafka image %q has no tag", image)
	}
	v, err := parseVersion(tagged.Tag())
	if err != nil {
		t.Fatalf("kafka image %q: %v", image, err)
	}
	return v
}

// parseVersion reads major.minor.patch, the form of protocol_version.
func parseVersion(s string) ([3]int, error) {
	var v [3]int
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return v, fmt.Errorf("%q is not major.minor.patch", s)
	}
	for i, part := range parts {
		if _, err := fmt.Sscanf(part, "%d", &v[i]); err != nil || fmt.Sprint(v[i]) != part {
			return v, fmt.Errorf("%q is not major.minor.patch", s)
		}
	}
	return v, nil
}

func compareVersions(a, b [3]int) int { return slices.Compare(a[:], b[:]) }

func TestParseVersion(t *testing.T) {
	for _, c := range []struct {
		in   string
		want [3]int
		ok   bool
	}{
		{"4.1.0", [3]int{4, 1, 0}, true},
		{"2.1.0", [3]int{2, 1, 0}, true},
		{"4.1", [3]int{}, false},
		{"4.1.x", [3]int{}, false},
		{"4.01.0", [3]int{}, false},
		{"", [3]int{}, false},
	} {
		got, err := parseVersion(c.in)
		if (err == nil) != c.ok || (c.ok && got != c.want) {
			t.Errorf("parseVersion(%q) = %v, %v; want %v, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
	if compareVersions([3]int{4, 1, 0}, [3]int{4, 1, 1}) >= 0 || compareVersions([3]int{2, 1, 0}, kafka4Floor) != 0 {
		t.Error("compareVersions orders versions wrongly")
	}
}

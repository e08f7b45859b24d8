package bench

import (
	"net"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
)

// TestBrokerMeter: kfake is this process unless something else of the
// bench runs in it meanwhile; a real broker is the process listening on its
// bootstrap addresses (here: this test's own listeners, two of them, one
// process), the given process ids, or not measured when it is not on this
// host.
func TestBrokerMeter(t *testing.T) {
	needProc(t)
	var addrs []string
	for range 2 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		addrs = append(addrs, l.Addr().String())
	}
	kfake := Variant{Broker: "kfake", Tracing: "off"}
	real := Variant{Broker: "real", Tracing: "off"}
	for _, tc := range []struct {
		name    string
		v       Variant
		brokers []string
		pids    []int
		join    bool  // Config.JoinFirst
		want    []int // nil: not measured
		why     string
	}{
		{"kfake", kfake, nil, nil, false, []int{}, ""},
		{"kfake traced", Variant{Broker: "kfake", Tracing: "10%"}, nil, nil, false, nil, "span receiver"},
		{"kfake live", Variant{Broker: "kfake", Tracing: "off", Live: true}, nil, nil, false, nil, "elves"},
		{"kfake scale-out", Variant{Broker: "kfake", Tracing: "off", Instances: 2}, nil, nil, false, []int{}, ""},
		{"kfake scale-out, join first", Variant{Broker: "kfake", Tracing: "off", Instances: 2}, nil, nil, true, nil, "join-first"},
		{"local broker, two addresses", real, addrs, nil, false, []int{os.Getpid()}, ""},
		{"given pids", real, []string{"192.0.2.1:9092"}, []int{7, 3, 7}, false, []int{3, 7}, ""},
		{"remote broker", real, []string{addrs[0], "192.0.2.1:9092"}, nil, false, nil, NotLocal},
	} {
		c := validConfig()
		c.Real, c.BrokerPIDs, c.JoinFirst = kafkaconf.Config{Brokers: tc.brokers}, tc.pids, tc.join
		b := &Bench{cfg: c}
		m, why := b.brokerMeter(tc.v)
		switch {
		case tc.want == nil && (m != nil || !strings.Contains(why, tc.why)):
			t.Errorf("%s: meter %+v, %q; want none, saying %q", tc.name, m, why, tc.why)
		case tc.want != nil && (m == nil || !slices.Equal(m.pids, tc.want) && len(m.pids)+len(tc.want) > 0):
			t.Errorf("%s: meter %+v (%q), want processes %v", tc.name, m, why, tc.want)
		}
		if m != nil && tc.pids == nil { // given pids are made up: nothing to read
			if d, err := m.cpu(); err != nil || d <= 0 {
				t.Errorf("%s: CPU %v, %v", tc.name, d, err)
			}
		}
	}
}

func needProc(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but no /proc/net/tcp: the bench finds the broker there")
		}
		t.Skip("no /proc/net/tcp (env gate: CI=true makes this a failure)")
	}
}

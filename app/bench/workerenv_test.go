package bench

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/northpole-workshop/northpole/internal/contract"
	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/processors/packer"
)

// TestWorkerRoundTrip: a Worker with every setting made different from its
// zero value reaches the worker whole. A field added later to the packer's
// or Kafka's configuration fails the test until it is set here, so it cannot
// be dropped on the way unnoticed (as TLS, SASL, the retry window, the
// replication and the instance id once were).
func TestWorkerRoundTrip(t *testing.T) {
	sec, err := kafkaconf.Security{TLS: true, TLSServerName: "kafka.example", InsecureSkipVerify: true,
		SASLMechanism: "SCRAM-SHA-512", SASLUser: "elf", SASLPasswordFile: "/nonexistent", SASLPassword: "s3cret",
		TLSCAFile: "", TLSCertFile: "", TLSKeyFile: ""}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	w := Worker{Hop: true, HopGroup: "hop", CPUProfile: "/tmp/p.pprof", Listen: "127.0.0.1:8088", GCHeadroom: 64 << 20, Packer: packer.Config{
		Kafka: kafkaconf.Config{Brokers: []string{"a:9093", "b:9093"}, ClientID: "c", Version: sarama.V3_9_0_0,
			FlushFrequency: 7 * time.Millisecond, Compression: "zstd", CommitEvery: time.Second, FetchMin: 16 << 10, FetchWait: 20 * time.Millisecond, RetryFor: 3 * time.Minute, Security: sec},
		Topics: packer.Topics{Toys: "t", Boxes: "b", Packed: "p", Unpacked: "u", Spare: "s", Late: "l", Dead: "d"},
		Group:  "g", Partitions: 3, Replication: 2, Params: contract.Params{Window: 3 * time.Second, Lateness: time.Second},
		StorageDir: "/tmp/s", InstanceID: "i-1", CleanEvery: 5 * time.Second, FetchBudget: 3 << 20, AlignEvery: time.Second,
	}}
	// The files are not read when the password and the TLS settings are
	// given; only these may stay empty.
	unset := map[string]bool{"TLSCAFile": true, "TLSCertFile": true, "TLSKeyFile": true}
	checkSet(t, reflect.ValueOf(w), "Worker", unset)

	enc, err := w.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeWorker(enc)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, w) {
		t.Errorf("decoded\n%+v\nwant\n%+v", got, w)
	}
}

// checkSet fails for every exported field under v that holds its zero
// value, except those tagged json:"-": the packer's Tracer and Ready, a
// tracer provider and a function, which no process can hand another as
// JSON; the worker sets its own (northpole process packer: its telemetry
// and its ready line).
func checkSet(t *testing.T, v reflect.Value, path string, unset map[string]bool) {
	t.Helper()
	if v.Kind() != reflect.Struct {
		if v.IsZero() {
			t.Errorf("%s is not set: give it a value so that the round trip covers it", path)
		}
		return
	}
	if v.Type() == reflect.TypeOf(sarama.KafkaVersion{}) {
		checkSet(t, reflect.ValueOf(v.Interface().(sarama.KafkaVersion).String() != sarama.KafkaVersion{}.String()), path, unset)
		return
	}
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if !f.IsExported() || unset[f.Name] || f.Tag.Get("json") == "-" {
			continue
		}
		checkSet(t, v.Field(i), path+"."+f.Name, unset)
	}
}

// TestWorkerProfile: a worker writes the CPU profile its Worker names and
// its allocations beside it, and none without one; its hop configuration is the packer's Kafka and inputs.
func TestWorkerProfile(t *testing.T) {
	stop, err := Worker{}.Profile()
	if err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "p.pprof")
	stop, err = Worker{CPUProfile: path}.Profile()
	if err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, filepath.Join(filepath.Dir(path), "allocs-p.pprof")} {
		if fi, err := os.Stat(p); err != nil || fi.Size() == 0 {
			t.Errorf("profile %s: %v, %v", p, fi, err)
		}
	}
	w := Worker{HopGroup: "hop", Packer: packer.DefaultConfig()}
	w.Packer.Kafka.Brokers = []string{"k:9092"}
	if err := w.HopConfig().Validate(); err != nil {
		t.Errorf("HopConfig: %v", err)
	}
}

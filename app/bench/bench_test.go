package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/testsupport/testkafka"
	"github.com/northpole-workshop/northpole/internal/topicread"
)

func validConfig() Config {
	c := DefaultConfig()
	c.Executable, c.Args = "/bin/true", []string{"worker"}
	return c
}

func TestConfigValidate(t *testing.T) {
	if err := validConfig().Validate(); err != nil {
		t.Fatalf("the default config with a worker: %v", err)
	}
	for _, tc := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Records = 1 }, "records must be at least 2"},
		{func(c *Config) { c.Partitions = nil }, "no partition count"},
		{func(c *Config) { c.Partitions = []int32{4, 0} }, "partition counts must be at least 1"},
		{func(c *Config) { c.Variants = []string{"base", "fast"} }, `unknown variant "fast"`},
		{func(c *Config) { c.Rounds = 0 }, "rounds must be at least 1"},
		{func(c *Config) { c.GCHeadroom = -1 }, "headroom must be 0 or more bytes"},
		{func(c *Config) { c.LiveRate = 0 }, "live rate must be a positive number"},
		{func(c *Config) { c.LiveDuration = 0 }, "live duration must be positive"},
		{func(c *Config) { c.Elves = 0 }, "elves must be between"},
		{func(c *Config) { c.Halls = []int{-1} }, "halls must be between 0"},
		{func(c *Config) { c.Halls = []int{16, 10_001} }, "halls must be between 0"},
		{func(c *Config) { c.Halls = nil }, "halls: want at least one count"},
		{func(c *Config) { c.Instances = []int{1, 0} }, "instance counts must be at least 1"},
		{func(c *Config) { c.Variants, c.Instances = []string{"scale"}, nil }, "the scale variant needs at least one instance count"},
		{func(c *Config) { c.Timeout = -time.Second }, "timeout must be positive"},
		{func(c *Config) { c.Window = 0 }, "window must be positive"},
		{func(c *Config) { c.Real = kafkaconf.Config{Brokers: []string{"nohost"}} }, "nohost"},
		{func(c *Config) { c.BrokerPIDs = []int{12, 0} }, "broker process ids must be positive"},
		{func(c *Config) { c.Args = nil }, "no worker program"},
		{func(c *Config) { c.Progress = nil }, "no progress writer"},
	} {
		c := validConfig()
		tc.edit(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want it to say %q", err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "--") {
			t.Errorf("Validate() = %v: a library error names a flag", err)
		}
	}
}

// TestProfilePath: each variant's profile, and each run of one, has a file
// of its own.
func TestProfilePath(t *testing.T) {
	for _, tc := range []struct {
		path, id string
		run      int
		want     string
	}{
		{"/tmp/packer.pprof", "base", 1, "/tmp/packer-base.pprof"},
		{"/tmp/packer.pprof", "trace10", 1, "/tmp/packer-trace10.pprof"},
		{"/tmp/packer.pprof", "base", 2, "/tmp/packer-base-2.pprof"},
		{"cpu", "parts8", 1, "cpu-parts8"},
	} {
		if got := ProfilePath(tc.path, tc.id, tc.run); got != tc.want {
			t.Errorf("ProfilePath(%q, %q, %d) = %q, want %q", tc.path, tc.id, tc.run, got, tc.want)
		}
	}
}

// TestVariants: parts is one variant per further partition count, real is
// skipped without a real Kafka, every other name is one variant.
func TestVariants(t *testing.T) {
	c := validConfig()
	c.Variants = []string{"base", "parts", "real", "disk", "live", "hop", "trace10", "trace0"}
	c.Partitions = []int32{4, 1, 8}
	b, err := New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names, ids []string
	for _, v := range b.variants() {
		names, ids = append(names, v.Name), append(ids, v.ID)
		if v.Name == "storage on disk" && v.Storage != "disk" || v.Name == "one goka hop (floor)" && !v.Hop ||
			v.Name == "live 2000/s" && (!v.Live || v.LiveRate != 2000) || v.Name == "tracing 10%" && v.Tracing != "10%" ||
			v.Name == "tracing 0%" && v.Tracing != "0%" {
			t.Errorf("variant %+v", v)
		}
	}
	want := "baseline,1 partition,8 partitions,storage on disk,live 2000/s,one goka hop (floor),tracing 10%,tracing 0%"
	if got := strings.Join(names, ","); got != want {
		t.Errorf("variants %s, want %s", got, want)
	}
	if got, want := strings.Join(ids, ","), "base,parts1,parts8,disk,live,hop,trace10,trace0"; got != want {
		t.Errorf("variant ids %s, want %s", got, want)
	}
	c.Real = kafkaconf.Config{Brokers: []string{"k:9092"}}
	b, _ = New(c, nil)
	if vs := b.variants(); vs[3].Broker != "real" {
		t.Errorf("with a real Kafka the fourth variant is %+v, want the real broker", vs[3])
	}
}

// TestScaleVariants: scale is one run per instance count, on the first
// partition count, on the real broker when one is given.
func TestScaleVariants(t *testing.T) {
	c := validConfig()
	c.Variants, c.Partitions, c.Instances = []string{"scale"}, []int32{16, 4}, []int{1, 2, 4}
	b, err := New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range b.variants() {
		names = append(names, v.Name+"/"+v.ID)
		if v.Partitions != 16 || v.Broker != "kfake" || v.Instances == 0 {
			t.Errorf("variant %+v", v)
		}
	}
	if got, want := strings.Join(names, ","), "1 instance/scale1,2 instances/scale2,4 instances/scale4"; got != want {
		t.Errorf("variants %s, want %s", got, want)
	}
	c.Real = kafkaconf.Config{Brokers: []string{"k:9092"}}
	b, _ = New(c, nil)
	for _, v := range b.variants() {
		if v.Broker != "real" {
			t.Errorf("with a real Kafka, variant %+v", v)
		}
	}
}

// TestParseInstances: counts apart by commas; FormatInstances is read back.
func TestParseInstances(t *testing.T) {
	got, err := ParseInstances("1, 2,4")
	if err != nil || FormatInstances(got) != "1,2,4" {
		t.Errorf("ParseInstances = %v, %v; want 1,2,4", got, err)
	}
	for _, bad := range []string{"", "0", "1,,2", "two"} {
		if _, err := ParseInstances(bad); err == nil {
			t.Errorf("ParseInstances(%q): no error", bad)
		}
	}
}

// TestLatencies: a packed pair's latency is from the later of its toy and
// box; a re-sent packed key counts once, a pair whose items are unknown not
// at all.
func TestLatencies(t *testing.T) {
	t0 := time.Date(2026, 12, 24, 10, 0, 0, 0, time.UTC)
	written := map[string]time.Time{"toys|t1": t0, "boxes|b1": t0.Add(30 * time.Millisecond), "toys|t2": t0.Add(50 * time.Millisecond), "boxes|b2": t0}
	pk := func(key, toy, box string, at time.Duration) topicread.Message {
		return topicread.Message{Key: []byte(key), Value: []byte(`{"toy_id":"` + toy + `","box_id":"` + box + `","size":"M","window_start":"x"}`), Timestamp: t0.Add(at)}
	}
	lat := latencies(written, []topicread.Message{
		pk("M|t1", "t1", "b1", 100*time.Millisecond),
		pk("M|t1", "t1", "b1", time.Second), // re-sent
		pk("M|t2", "t2", "b2", 60*time.Millisecond),
		pk("M|t3", "t3", "b3", 70*time.Millisecond), // unknown items
		{Key: []byte("M|bad"), Value: []byte("not json")},
	})
	if len(lat) != 2 || lat[0] != 10*time.Millisecond || lat[1] != 70*time.Millisecond {
		t.Errorf("latencies %v, want [10ms 70ms]", lat)
	}
}

// TestLivePackedTakesAppendTime: the live variant's packed topic stamps
// each record with the broker's append time, so a row's latency counts its
// wait in the packer's client; other variants keep the writer's time. kfake
// keeps the topic's setting but stamps as the writer asks, so the stamp
// itself is checked on a real Kafka ($NORTHPOLE_TEST_BROKERS).
func TestLivePackedTakesAppendTime(t *testing.T) {
	kc := testkafka.Config(t)
	kc.ClientID = "bench-test"
	b, err := New(validConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(kc.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	written := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, live := range []bool{true, false} {
		_, p, err := b.freshPipeline(ctx, kc, Variant{Partitions: 1, Live: live, LiveRate: 1})
		if err != nil {
			t.Fatal(err)
		}
		topic := p.Config().Packer.Topics.Packed
		want := map[bool]string{true: "LogAppendTime", false: "CreateTime"}[live]
		rcs, err := kadm.NewClient(cl).DescribeTopicConfigs(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		rc, err := rcs.On(topic, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, c := range rc.Configs {
			if c.Key == "message.timestamp.type" {
				got = c.MaybeValue()
			}
		}
		if got != want {
			t.Errorf("live %v: %s has message.timestamp.type %q, want %q", live, topic, got, want)
		}
		if !testkafka.External() {
			continue
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("row"), Timestamp: written}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		msgs, err := topicread.All(ctx, kc, topic)
		if err != nil || len(msgs) != 1 {
			t.Fatalf("read %q: %d records, %v", topic, len(msgs), err)
		}
		if appended := time.Since(msgs[0].Timestamp) < time.Hour; appended != live {
			t.Errorf("live %v: the packed record's timestamp is %v (written with %v)", live, msgs[0].Timestamp, written)
		}
	}
}

// TestDropRun: a run's topics and consumer groups are deleted, and
// another run's, whose name begins with the first's, are left alone.
func TestDropRun(t *testing.T) {
	kc := testkafka.Config(t)
	b, err := New(validConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The names of runs' topics and groups on the broker, each listed by
	// a client of its own: kgo answers a client's metadata requests from
	// its cache for a moment.
	listed := func(runs ...string) (topics, groups []string) {
		adm, err := admin(ctx, kc)
		if err != nil {
			t.Fatal(err)
		}
		defer adm.Close()
		details, err := adm.ListTopics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		gs, err := adm.ListGroups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, run := range runs {
			for _, n := range details.Names() {
				if strings.HasPrefix(n, run+"-") {
					topics = append(topics, n)
				}
			}
			for _, g := range gs.Groups() {
				if strings.HasPrefix(g, run+"-") {
					groups = append(groups, g)
				}
			}
		}
		slices.Sort(topics)
		return topics, groups
	}
	gone := testkafka.Unique("drop")
	kept := gone + "0" // its names start with gone's name, not with gone's name and a dash
	made := map[string][]string{}
	for _, name := range []string{gone, kept} {
		p, err := b.pipeline(kc, name, Variant{Partitions: 1})
		if err == nil {
			err = p.EnsureTopics(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		adm, err := admin(ctx, kc)
		if err != nil {
			t.Fatal(err)
		}
		offsets := kadm.Offsets{}
		offsets.Add(kadm.Offset{Topic: p.Config().Packer.Topics.Toys, Partition: 0, At: 0, LeaderEpoch: -1})
		_, err = adm.CommitOffsets(ctx, p.Config().Packer.Groups()[0], offsets)
		adm.Close()
		if err != nil {
			t.Fatal(err)
		}
		made[name], _ = listed(name)
	}
	if len(made[gone]) < 8 || len(made[kept]) != len(made[gone]) {
		t.Fatalf("topics made: %v", made)
	}
	if err := dropRun(ctx, kc, gone); err != nil {
		t.Fatal(err)
	}
	// A real Kafka takes a moment to forget a deleted topic.
	var topics, groups []string
	for range 50 {
		if topics, groups = listed(gone, kept); slices.Equal(topics, made[kept]) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !slices.Equal(topics, made[kept]) {
		t.Errorf("topics left %v, want %v", topics, made[kept])
	}
	if want := []string{kept + "-packer-clock"}; !slices.Equal(groups, want) {
		t.Errorf("groups left %v, want %v", groups, want)
	}
}

// TestSpansLine: at 100 % the receiver's count is held against one span per
// input record and one per output record, and a shortfall is called a loss.
func TestSpansLine(t *testing.T) {
	for _, c := range []struct {
		tracing      string
		received     int64
		want         string
		wantExpected int64
	}{
		{"100%", 150, "the receiver got all 150 spans (100 input and 50 output records)", 150},
		{"100%", 140, "the receiver got 140 spans, 10 fewer than the 100 input and 50 output records: spans were lost", 150},
		{"10%", 15, "the receiver got 15 spans", 0},
	} {
		r := Result{Variant: Variant{Tracing: c.tracing}, InputEvents: 100, OutputRecords: 50, SpansReceived: c.received}
		if got := r.spansLine(); got != c.want || r.SpansExpected != c.wantExpected {
			t.Errorf("%s, %d received: %q (expected %d), want %q (%d)", c.tracing, c.received, got, r.SpansExpected, c.want, c.wantExpected)
		}
	}
}

// TestParsePartitions: counts apart by commas, spaces allowed; anything
// else, or a count below 1, is refused; FormatPartitions is read back.
func TestParsePartitions(t *testing.T) {
	got, err := ParsePartitions(" 4, 1,8")
	if err != nil || FormatPartitions(got) != "4,1,8" {
		t.Errorf("ParsePartitions = %v, %v; want 4,1,8", got, err)
	}
	for _, bad := range []string{"", "4,,8", "0", "-1", "x", "99999999999"} {
		if _, err := ParsePartitions(bad); err == nil {
			t.Errorf("ParsePartitions(%q): no error", bad)
		}
	}
}

// TestHopConfigValidate: the hop's Validate names every problem.
func TestHopConfigValidate(t *testing.T) {
	err := HopConfig{}.Validate()
	for _, want := range []string{"needs a group and both input topics", "no brokers"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to say %q", err, want)
		}
	}
	if err := (HopConfig{Kafka: kafkaconf.Config{Brokers: []string{"k:9092"}}, Group: "g", Toys: "t", Boxes: "b"}).Validate(); err != nil {
		t.Errorf("a good hop: %v", err)
	}
}

// TestLinesVariant: the first --halls count is every other variant's, the
// lines variant one run per count, each named by its lines, on the real
// broker when there is one.
func TestLinesVariant(t *testing.T) {
	c := validConfig()
	c.Variants, c.Halls = []string{"base", "lines", "disk"}, []int{16, 0, 10000}
	b, err := New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range b.variants() {
		got = append(got, fmt.Sprintf("%s/%s/%d", v.Name, v.ID, v.Halls))
		if v.Broker != "kfake" {
			t.Errorf("%s on %s without --brokers", v.Name, v.Broker)
		}
	}
	if want := "baseline/base/16,64 lines/lines64/16,4 lines/lines4/0,40000 lines/lines40000/10000,storage on disk/disk/16"; strings.Join(got, ",") != want {
		t.Errorf("variants %s, want %s", strings.Join(got, ","), want)
	}
}

package packer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lovoo/goka"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/results"
	"github.com/northpole-workshop/northpole/internal/testsupport/testkafka"
	"github.com/northpole-workshop/northpole/internal/topicread"
	"github.com/northpole-workshop/northpole/processors/packer"
	"github.com/northpole-workshop/northpole/processors/packer/outputs"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// northpoleBinary builds cmd/northpole once per test process.
func northpoleBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "northpole-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "northpole")
		out, err := exec.Command("go", "build", "-o", binPath, "../../cmd/northpole").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// packerProcess is `northpole process packer` as its own OS process.
type packerProcess struct {
	cmd *exec.Cmd
	log *os.File
}

func (pl pipeline) packerArgs(instance string) []string {
	c := pl.cfg
	return []string{"process", "packer", "--log-level", "warn",
		"--brokers", strings.Join(pl.kc.Brokers, ","), "--group", c.Group, "--instance-id", instance,
		"--partitions", fmt.Sprint(c.Partitions), "--window", c.Window.String(), "--lateness", c.Lateness.String(),
		"--toys-topic", c.Topics.Toys, "--boxes-topic", c.Topics.Boxes, "--packed-topic", c.Topics.Packed,
		"--unpacked-topic", c.Topics.Unpacked, "--spare-topic", c.Topics.Spare, "--late-topic", c.Topics.Late,
		"--dead-topic", c.Topics.Dead}
}

func startPackerProcess(t *testing.T, bin string, args []string, logPath string) *packerProcess {
	t.Helper()
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return &packerProcess{cmd: cmd, log: f}
}

func (p *packerProcess) kill() {
	_ = p.cmd.Process.Kill() // SIGKILL: no shutdown, no final commit
	_ = p.cmd.Wait()
	p.log.Close()
}

// checkRawPacked reads the raw packed topic (before deduplication) and fails
// if any toy went into two different boxes or any box held two toys in one
// window (an id may be an item again in another window).
func (pl pipeline) checkRawPacked(t *testing.T, ctx context.Context) {
	t.Helper()
	msgs, err := topicread.All(ctx, pl.kc, pl.cfg.Topics.Packed)
	if err != nil {
		t.Fatal(err)
	}
	boxOf, toyOf := map[string]string{}, map[string]string{}
	for _, m := range msgs {
		var p results.Packed
		if err := json.Unmarshal(m.Value, &p); err != nil {
			t.Fatal(err)
		}
		toy, box := p.Line+"|"+p.WindowStart+"|"+p.ToyID, p.Line+"|"+p.WindowStart+"|"+p.BoxID
		if b, ok := boxOf[toy]; ok && b != box {
			t.Errorf("toy %s packed into two boxes: %s and %s", toy, b, box)
		}
		if x, ok := toyOf[box]; ok && x != toy {
			t.Errorf("box %s holds two toys: %s and %s", box, x, toy)
		}
		boxOf[toy], toyOf[box] = box, toy
	}
}

// TestCrashSIGKILL runs the packer as its own OS process and kills it with
// SIGKILL at random moments while the elves write, at least 20 times. The
// deduplicated results must equal the reference, and the raw output must not
// put a toy in two boxes or two toys in a box. It runs with the tables in
// memory and with the tables on disk (--storage-dir), which survive the kills.
func TestCrashSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	bin := northpoleBinary(t)
	t.Run("memory", func(t *testing.T) { crashSIGKILL(t, bin, false) })
	t.Run("disk", func(t *testing.T) { crashSIGKILL(t, bin, true) })
}

func crashSIGKILL(t *testing.T, bin string, disk bool) {
	kc := testkafka.Config(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	s := scenario{seed: 201, toys: 3000, boxes: 3000, elves: 3, partitions: 4,
		window: 2 * time.Second, lateness: time.Second, spacing: 5 * time.Millisecond, disorder: 1500 * time.Millisecond,
		lateRate: 0.05, dupRate: 0.05, bad: 0.05}
	pl := newPipeline(t, kc, s)
	pk, err := packer.New(pl.cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := pk.EnsureTopics(ctx); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "packer.log")
	args := pl.packerArgs("crash-test")
	if disk {
		args = append(args, "--storage-dir", t.TempDir())
	}

	produced := make(chan error, 1)
	go func() { produced <- pl.produceAt(ctx, s, 250) }()

	rng := rand.New(rand.NewPCG(201, 7))
	const minKills = 20
	kills, beforeReady := 0, 0
	proc := startPackerProcess(t, bin, args, logPath)
	readyBefore := readyCount(t, logPath)
	elvesDone := false
	for kills < minKills || !elvesDone {
		// Most kills come at a random moment; every fourth comes at once,
		// while the packer joins its groups and recovers its tables, and
		// every fourth after the packer has run long enough to delete
		// records from the clock table (it cleans every 2 s, once ready).
		wait := time.Duration(300+rng.IntN(900)) * time.Millisecond
		switch kills % 4 {
		case 1:
			wait = time.Duration(20+rng.IntN(200)) * time.Millisecond
		case 3:
			wait = 5 * time.Second
		}
		select {
		case err := <-produced:
			if err != nil {
				t.Fatalf("elves: %v", err)
			}
			elvesDone = true
		case <-time.After(wait):
		}
		if elvesDone && kills >= minKills {
			break
		}
		proc.kill()
		kills++
		if n := readyCount(t, logPath); n == readyBefore {
			beforeReady++
		} else {
			readyBefore = n
		}
		proc = startPackerProcess(t, bin, args, logPath)
	}
	t.Logf("killed the packer %d times with SIGKILL, %d of them before it was ready", kills, beforeReady)
	if beforeReady == 0 {
		t.Errorf("no kill came before the packer was ready: the test did not kill a recovering packer")
	}
	began := time.Now()
	if err := outputs.WaitQuiet(ctx, pl.cfg, 250*time.Millisecond, nil, slog.Default()); err != nil {
		b, _ := os.ReadFile(logPath)
		t.Fatalf("%v\npacker log tail:\n%s", err, tail(string(b), 3000))
	}
	t.Logf("after the last restart the packer caught up in %v", time.Since(began).Round(100*time.Millisecond))
	proc.kill()
	if _, deleted := clockTableKept(t, ctx, kc, pl.cfg.Group+"-clock-table"); deleted == 0 {
		t.Errorf("the clock table was never cleaned: no restart recovered from a cleaned table")
	}
	_, raw := pl.check(t, ctx, s)
	pl.checkRawPacked(t, ctx)
	t.Logf("crashes caused %d raw duplicate output records (of %d); none conflicting", raw.Duplicates, raw.Records)
}

// readyCount is how often the packers logging to logPath said they were
// ready.
func readyCount(t *testing.T, logPath string) int {
	t.Helper()
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), packer.ReadyPrefix)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// TestRebalanceTwoInstances runs two packer instances in one group; one is
// stopped and restarted mid-run, then the other.
func TestRebalanceTwoInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	kc := testkafka.Config(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	s := scenario{seed: 301, toys: 2500, boxes: 2500, elves: 2, partitions: 8,
		window: 2 * time.Second, lateness: time.Second, spacing: 5 * time.Millisecond, disorder: time.Second,
		lateRate: 0.03, dupRate: 0.03, bad: 0.03}
	pl := newPipeline(t, kc, s)
	stopA := pl.startPacker(t, ctx)
	stopB := pl.startPacker(t, ctx)
	produced := make(chan error, 1)
	go func() { produced <- pl.produceAt(ctx, s, 400) }()

	for i, stop := range []*func() error{&stopA, &stopB} {
		time.Sleep(2 * time.Second)
		if err := (*stop)(); err != nil {
			t.Fatalf("stop instance %d: %v", i, err)
		}
		t.Logf("instance %d stopped; the other takes over its partitions", i)
		time.Sleep(1500 * time.Millisecond)
		*stop = pl.startPacker(t, ctx)
	}
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	if err := outputs.WaitQuiet(ctx, pl.cfg, 250*time.Millisecond, nil, slog.Default()); err != nil {
		t.Fatal(err)
	}
	for _, stop := range []func() error{stopA, stopB} {
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	}
	pl.check(t, ctx, s)
	pl.checkRawPacked(t, ctx)
}

// TestBrokerRestart stops and restarts the (real) broker mid-run; elves and
// packer must recover on their own. It needs scripts/kafka
// ($NORTHPOLE_TEST_KAFKA_CTL) to restart the broker.
func TestBrokerRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	ctl := os.Getenv("NORTHPOLE_TEST_KAFKA_CTL")
	if !testkafka.External() || ctl == "" {
		if os.Getenv("CI") == "true" && testkafka.External() {
			t.Fatal("CI=true with a real broker but NORTHPOLE_TEST_KAFKA_CTL is not set (see scripts/kafka env)")
		}
		t.Skip("needs a real broker and NORTHPOLE_TEST_KAFKA_CTL (env gate; see scripts/kafka env)")
	}
	kc := testkafka.Config(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	s := scenario{seed: 401, toys: 2500, boxes: 2500, elves: 2, partitions: 4,
		window: 2 * time.Second, lateness: time.Second, spacing: 5 * time.Millisecond, disorder: time.Second,
		lateRate: 0.03, dupRate: 0.03, bad: 0.03}
	pl := newPipeline(t, kc, s)
	stop := pl.startPacker(t, ctx)
	produced := make(chan error, 1)
	go func() { produced <- pl.produceAt(ctx, s, 300) }()
	time.Sleep(3 * time.Second)
	began := time.Now()
	out, err := exec.CommandContext(ctx, ctl, "restart-node", "1").CombinedOutput()
	if err != nil {
		t.Fatalf("restart broker: %v\n%s", err, out)
	}
	t.Logf("broker restarted in %v %s", time.Since(began).Round(100*time.Millisecond), out)
	if err := <-produced; err != nil {
		t.Fatalf("elves did not survive the broker restart: %v", err)
	}
	if err := outputs.WaitQuiet(ctx, pl.cfg, 250*time.Millisecond, nil, slog.Default()); err != nil {
		t.Fatal(err)
	}
	t.Logf("packer caught up %v after the restart began", time.Since(began).Round(100*time.Millisecond))
	if err := stop(); err != nil {
		t.Fatalf("packer did not survive the broker restart: %v", err)
	}
	pl.check(t, ctx, s)
	pl.checkRawPacked(t, ctx)
}

// TestReplicatedClusterNodeLoss runs on a 3-broker cluster with every topic
// replicated 3 times: one broker is stopped mid-run and started again later.
// Nothing is lost and nothing is packed twice. It needs
// $NORTHPOLE_TEST_CLUSTER_BROKERS and $NORTHPOLE_TEST_CLUSTER_STATE
// (NORTHPOLE_KAFKA_STATE=... scripts/kafka start --cluster; scripts/kafka env).
func TestReplicatedClusterNodeLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	if !testkafka.External() {
		t.Skip("runs in the real-broker pass only (env gate: NORTHPOLE_TEST_BROKERS)")
	}
	brokers, state, ctl := os.Getenv("NORTHPOLE_TEST_CLUSTER_BROKERS"), os.Getenv("NORTHPOLE_TEST_CLUSTER_STATE"), os.Getenv("NORTHPOLE_TEST_KAFKA_CTL")
	if brokers == "" || state == "" || ctl == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but the 3-broker cluster is not configured (NORTHPOLE_TEST_CLUSTER_BROKERS, NORTHPOLE_TEST_CLUSTER_STATE, NORTHPOLE_TEST_KAFKA_CTL)")
		}
		t.Skip("needs a 3-broker cluster (env gate; see scripts/kafka env)")
	}
	node := func(verb string) {
		cmd := exec.Command(ctl, verb, "2")
		cmd.Env = append(os.Environ(), "NORTHPOLE_KAFKA_STATE="+state)
		began := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s node 2: %v\n%s", verb, err, out)
		}
		t.Logf("%s node 2 took %v", verb, time.Since(began).Round(100*time.Millisecond))
	}
	kc := kafkaconf.Config{Brokers: kafkaconf.SplitBrokers(brokers)}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	s := scenario{seed: 501, toys: 2500, boxes: 2500, elves: 2, partitions: 4,
		window: 2 * time.Second, lateness: time.Second, spacing: 5 * time.Millisecond, disorder: time.Second,
		lateRate: 0.03, dupRate: 0.03, bad: 0.03}
	pl := newPipeline(t, kc, s)
	pl.cfg.Replication = 3
	stop := pl.startPacker(t, ctx)
	produced := make(chan error, 1)
	go func() { produced <- pl.produceAt(ctx, s, 300) }()
	time.Sleep(3 * time.Second)
	node("stop-node")
	time.Sleep(3 * time.Second)
	node("start-node")
	if err := <-produced; err != nil {
		t.Fatalf("elves did not survive losing a broker: %v", err)
	}
	if err := outputs.WaitQuiet(ctx, pl.cfg, 250*time.Millisecond, nil, slog.Default()); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatalf("packer did not survive losing a broker: %v", err)
	}
	pl.check(t, ctx, s)
	pl.checkRawPacked(t, ctx)
}

// controlledCluster is a one-broker kfake cluster, whose requests a test
// may answer or count itself (kfake's ControlKey), and the configuration
// that reaches it.
func controlledCluster(t *testing.T) (*kfake.Cluster, kafkaconf.Config) {
	t.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	return cluster, kafkaconf.Config{Brokers: cluster.ListenAddrs()}
}

// smallScenario is 600 toys and 600 boxes on 4 partitions in short
// windows, with some of every kind of trouble: quick enough for a test that
// is about the packer's dealings with the broker.
func smallScenario(seed int64) scenario {
	return scenario{seed: seed, toys: 600, boxes: 600, elves: 2, partitions: 4,
		window: 2 * time.Second, lateness: time.Second, spacing: 5 * time.Millisecond, disorder: time.Second,
		lateRate: 0.03, dupRate: 0.03, bad: 0.03}
}

// TestStagesStartAgainAfterBrokerError: a partition leader that moves while
// a stage sets up its table (seen in CI when a cluster broker stopped) makes
// goka stop that processor. The packer starts its two groups again and
// loses nothing. kfake answers the first two offset requests for each
// partition of the clock table with NOT_LEADER_OR_FOLLOWER: sarama retries
// once, so every first setup of that table fails.
func TestStagesStartAgainAfterBrokerError(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	cluster, kc := controlledCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s := smallScenario(601)
	pl := newPipeline(t, kc, s)
	table := string(goka.GroupTable(goka.Group(pl.cfg.Groups()[0])))
	var mu sync.Mutex
	refused := map[int32]int{}
	cluster.ControlKey(int16(kmsg.ListOffsets), func(req kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		lo := req.(*kmsg.ListOffsetsRequest)
		resp := lo.ResponseKind().(*kmsg.ListOffsetsResponse)
		resp.Version = lo.Version
		mu.Lock()
		defer mu.Unlock()
		for _, rt := range lo.Topics {
			if rt.Topic != table {
				return nil, nil, false
			}
			st := kmsg.NewListOffsetsResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				if refused[rp.Partition] >= 2 {
					return nil, nil, false
				}
				refused[rp.Partition]++
				sp := kmsg.NewListOffsetsResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, kerr.NotLeaderForPartition.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, len(resp.Topics) > 0
	})

	r := pl.startRunning(t, ctx)
	if err := pl.produce(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := r.WaitQuiet(ctx, 250*time.Millisecond); err != nil {
		t.Fatalf("the packer did not come through the broker errors: %v", err)
	}
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if refused[0] < 2 {
		t.Errorf("the broker refused %v offset requests per partition of %s, want 2 for partition 0: the test did not make a setup fail", refused, table)
	}
	mu.Unlock()
	pl.check(t, ctx, s)
	pl.checkRawPacked(t, ctx)
}

// TestRevokedPartitionsLeaveMemory runs one packer instance, then a second
// in the same group, which takes half the partitions from the first: from
// then on the first keeps state (clocks, dedupe entries, slots, horizons)
// only for the partitions goka says it holds, and cleans the clock table
// only there. The results stay those of the reference.
func TestRevokedPartitionsLeaveMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	kc := testkafka.Config(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s := scenario{seed: 701, toys: 1500, boxes: 1500, elves: 2, partitions: 4,
		window: 2 * time.Second, lateness: time.Second, spacing: 5 * time.Millisecond, disorder: time.Second,
		lateRate: 0.03, dupRate: 0.03, bad: 0.03}
	pl := newPipeline(t, kc, s)
	start := func() (*packer.Packer, func()) { return startInstance(t, ctx, pl.cfg, "") }
	all := []int32{0, 1, 2, 3}
	a, stopA := start()
	// A holds every partition, and its state all of them.
	waitHeld(t, ctx, a, func(goka []int32) bool { return slices.Equal(goka, all) })

	produced := make(chan error, 1)
	go func() { produced <- pl.produceAt(ctx, s, 400) }()
	time.Sleep(time.Second)
	b, stopB := start()
	// The partitions split between A and B.
	split := func(goka []int32) bool { return len(goka) == 2 }
	heldA := waitHeld(t, ctx, a, split)
	heldB := waitHeld(t, ctx, b, split)
	if both := slices.Concat(heldA, heldB); len(slices.Compact(slices.Sorted(slices.Values(both)))) != len(all) {
		t.Errorf("A holds %v, B %v: not every partition once", heldA, heldB)
	}

	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	if err := outputs.WaitQuiet(ctx, pl.cfg, 250*time.Millisecond, nil, slog.Default()); err != nil {
		t.Fatal(err)
	}
	stopA()
	stopB()
	pl.check(t, ctx, s)
	pl.checkRawPacked(t, ctx)
}

// waitHeld waits until pk runs, the partitions goka says its group holds
// satisfy want, and its state is held, and the clock table cleaned, for
// exactly those: the partitions then. It fails the test when that does not
// come within a minute.
func waitHeld(t *testing.T, ctx context.Context, pk *packer.Packer, want func(goka []int32) bool) []int32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var last string
	for {
		h := pk.Health(ctx)
		held, cleaned := pk.HeldPartitions()
		if h.Running && len(h.Groups) == 1 {
			goka := h.Groups[0].Partitions
			if want(goka) && slices.Equal(held, goka) && slices.Equal(cleaned, goka) {
				return goka
			}
			last = fmt.Sprintf("goka holds %v; state is kept for %v, the clock table cleaned in %v", goka, held, cleaned)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the packer's state never matched the partitions it holds: %s", last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

package packer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/testsupport/testkafka"
	"github.com/northpole-workshop/northpole/processors/packer"
	"github.com/northpole-workshop/northpole/processors/packer/outputs"
)

// manyLines is the scenario of the rebalance tests with many lines: 64 lines
// (16 halls) on 16 partitions, shared by three instances.
func manyLines(seed int64) scenario {
	return scenario{seed: seed, toys: 4000, boxes: 4000, elves: 4, partitions: 16, halls: 16,
		window: 2 * time.Second, lateness: time.Second, spacing: 5 * time.Millisecond, disorder: time.Second,
		lateRate: 0.03, dupRate: 0.03, bad: 0.03}
}

// TestCrashRebalanceManyLines runs three packer processes, static members
// of one group, on 16 partitions carrying 64 lines and kills them with
// SIGKILL, in turn, every 0.05-2 s while the elves write. Most come back at
// once under their own instance id, and resume their partitions without a
// rebalance. One stays down until its session has timed out and the two
// others hold all its partitions (their /healthz says so); then it comes
// back and the test waits until it holds its share again. The deduplicated results must equal
// the reference, and the raw output must not put a toy in two boxes or two
// toys in a box.
func TestCrashRebalanceManyLines(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	bin := northpoleBinary(t)
	kc := testkafka.Config(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	s := manyLines(801)
	pl := newPipeline(t, kc, s)
	pk, err := packer.New(pl.cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := pk.EnsureTopics(ctx); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "packers.log")
	const instances = 3
	addrs := make([]string, instances)
	for i := range addrs {
		addrs[i] = freeAddr(t)
	}
	args := func(i int) []string {
		return append(pl.packerArgs(fmt.Sprintf("rb%d", i)), "--listen", addrs[i])
	}
	procs := make([]*packerProcess, instances)
	for i := range procs {
		procs[i] = startPackerProcess(t, bin, args(i), logPath)
	}
	defer func() {
		for _, p := range procs {
			p.kill()
		}
	}()

	produced := make(chan error, 1)
	go func() { produced <- pl.produceAt(ctx, s, 100) }()

	rng := rand.New(rand.NewPCG(801, 7))
	const minKills, downKill = 9, 5
	kills := 0
	elvesDone := false
	for kills < minKills || !elvesDone {
		wait := time.Duration(800+rng.IntN(1200)) * time.Millisecond
		if kills%4 == 1 {
			// while the instance killed last joins and recovers its tables
			wait = time.Duration(50+rng.IntN(250)) * time.Millisecond
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
		i := kills % instances
		procs[i].kill()
		kills++
		if kills != downKill {
			procs[i] = startPackerProcess(t, bin, args(i), logPath)
			continue
		}
		// Down until its session has timed out and the two others hold
		// every partition; then back until it holds its share again.
		began := time.Now()
		waitShares(t, ctx, slices.Delete(slices.Clone(addrs), i, i+1), int(s.partitions), int(s.partitions)/2, logPath)
		t.Logf("instance %d killed; the two others held every partition %v later", i, time.Since(began).Round(100*time.Millisecond))
		began = time.Now()
		procs[i] = startPackerProcess(t, bin, args(i), logPath)
		waitShares(t, ctx, addrs, int(s.partitions), int(s.partitions)/instances, logPath)
		t.Logf("instance %d restarted; it held its share %v later", i, time.Since(began).Round(100*time.Millisecond))
	}
	t.Logf("%v: killed a packer %d times with SIGKILL", s, kills)
	began := time.Now()
	if err := outputs.WaitQuiet(ctx, pl.cfg, 250*time.Millisecond, nil, slog.Default()); err != nil {
		b, _ := os.ReadFile(logPath)
		t.Fatalf("%v\npacker log tail:\n%s", err, tail(string(b), 3000))
	}
	t.Logf("after the last kill the packers caught up in %v", time.Since(began).Round(100*time.Millisecond))
	_, raw := pl.check(t, ctx, s)
	pl.checkRawPacked(t, ctx)
	t.Logf("kills and rebalances caused %d raw duplicate output records (of %d); none conflicting", raw.Duplicates, raw.Records)
}

// TestAddedInstanceTakesItsShare runs two packer instances on 16 partitions
// carrying 64 lines and adds a third while the elves write. It logs how long
// the third takes, from its start, to hold its share of each group's
// partitions (with its state kept for exactly those) and then to have
// consumed records on every one of them that carries a line: how long an
// operator waits for an added instance to work. It asserts only that this
// happens within two minutes (machines are noisy; docs/RELIABILITY.md has
// the figures), and that the results still equal the reference.
func TestAddedInstanceTakesItsShare(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; -short skips it")
	}
	kc := testkafka.Config(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	s := manyLines(901)
	pl := newPipeline(t, kc, s)
	n := int(s.partitions)
	spread := pl.elves(s, record.Toys).Spread(n)
	a, stopA := startInstance(t, ctx, pl.cfg, "a")
	b, stopB := startInstance(t, ctx, pl.cfg, "b")
	half := func(goka []int32) bool { return len(goka) == n/2 }
	waitHeld(t, ctx, a, half)
	waitHeld(t, ctx, b, half)

	produced := make(chan error, 1)
	go func() { produced <- pl.produceAt(ctx, s, 400) }()
	time.Sleep(2 * time.Second)

	share := func(goka []int32) bool { return len(goka) >= n/3 }
	began := time.Now()
	c, stopC := startInstance(t, ctx, pl.cfg, "c")
	heldC := waitHeld(t, ctx, c, share)
	tookShare := time.Since(began)
	working := waitConsumed(t, ctx, c, heldC, func(p int32) bool { return spread.Lines[p] > 0 })
	t.Logf("%v: the third instance held %v %v after it started, and had consumed records on each of them that carries a line %v after it started",
		s, heldC, tookShare.Round(10*time.Millisecond), (tookShare + working).Round(10*time.Millisecond))
	heldA, heldB := waitHeld(t, ctx, a, share), waitHeld(t, ctx, b, share)
	all := slices.Concat(heldA, heldB, heldC)
	slices.Sort(all)
	if len(slices.Compact(all)) != n || len(slices.Concat(heldA, heldB, heldC)) != n {
		t.Errorf("A holds %v, B %v, C %v: not every partition once", heldA, heldB, heldC)
	}

	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	if err := outputs.WaitQuiet(ctx, pl.cfg, 250*time.Millisecond, nil, slog.Default()); err != nil {
		t.Fatal(err)
	}
	stopA()
	stopB()
	stopC()
	pl.check(t, ctx, s)
	pl.checkRawPacked(t, ctx)
}

// startInstance runs a packer of cfg in this process, as the static member
// instance (none when empty), until the returned stop, which fails the test
// if Run failed.
func startInstance(t *testing.T, ctx context.Context, cfg packer.Config, instance string) (*packer.Packer, func()) {
	t.Helper()
	cfg.InstanceID = instance
	pk, err := packer.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- pk.Run(rctx) }()
	return pk, func() {
		stop()
		if err := <-ran; err != nil {
			t.Errorf("packer %s: %v", instance, err)
		}
	}
}

// waitConsumed waits until pk has consumed records on each partition of
// held that busy says carries work, and returns how long that took. It
// fails the test when that does not come within two minutes.
func waitConsumed(t *testing.T, ctx context.Context, pk *packer.Packer, held []int32, busy func(int32) bool) time.Duration {
	t.Helper()
	began := time.Now()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var idle []string
	for {
		consumed := pk.ConsumedByPartition(ctx)
		idle = idle[:0]
		for _, p := range held {
			if busy(p) && consumed[p] == 0 {
				idle = append(idle, fmt.Sprintf("partition %d", p))
			}
		}
		if len(idle) == 0 {
			return time.Since(began)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no records consumed on %v", idle)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// freeAddr is a loopback address with a port free now, below the kernel's
// ephemeral range: a restarted packer listens on it again, and a port in that
// range may meanwhile be the local end of some test's broker connection.
func freeAddr(t *testing.T) string {
	t.Helper()
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 12000 {
				low = n
			}
		}
	}
	for range 100 {
		lis, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", 10000+rand.IntN(low-10000)))
		if err != nil {
			continue
		}
		defer lis.Close()
		return lis.Addr().String()
	}
	t.Fatal("no free port below the ephemeral range")
	return ""
}

// waitShares waits until the packers serving /healthz on addrs run and
// between them hold each partition once, each at least share of them. It
// fails the test, with the tail of the packers' log, when that does not
// come within a minute.
func waitShares(t *testing.T, ctx context.Context, addrs []string, partitions, share int, logPath string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var last []string
	for {
		last = last[:0]
		var held []int32
		ok := true
		for _, addr := range addrs {
			h, err := healthOf(ctx, addr)
			ok = ok && err == nil && h.Running && len(h.Groups) == 1
			if !ok {
				last = append(last, fmt.Sprintf("%s: %+v %v", addr, h, err))
				break
			}
			ok = ok && len(h.Groups[0].Partitions) >= share
			held = append(held, h.Groups[0].Partitions...)
			last = append(last, fmt.Sprintf("%s holds %v", addr, h.Groups[0].Partitions))
		}
		all := slices.Sorted(slices.Values(held))
		ok = ok && len(slices.Compact(all)) == len(held) && len(held) == partitions
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			b, _ := os.ReadFile(logPath)
			t.Fatalf("the packers never shared the partitions, each at least %d: %v\npacker log tail:\n%s", share, last, tail(string(b), 3000))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// healthOf is the packer's Health as it serves it on addr.
func healthOf(ctx context.Context, addr string) (packer.Health, error) {
	var h packer.Health
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/healthz", nil)
	if err != nil {
		return h, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return h, err
	}
	defer resp.Body.Close()
	return h, json.NewDecoder(resp.Body).Decode(&h)
}

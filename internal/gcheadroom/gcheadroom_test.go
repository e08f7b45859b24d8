package gcheadroom

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name                  string
		headroom, live, roots uint64
		base, want            int
	}{
		{"a large heap keeps GOGC", 64 * mib, 200 * mib, mib, 100, 100},
		{"a small heap gets the headroom", 64 * mib, 31 * mib, mib, 100, 200},
		{"rounded up, never under the headroom", 64 * mib, 30 * mib, 0, 100, 214},
		{"a higher GOGC wins", 64 * mib, 31 * mib, mib, 300, 300},
		{"an empty heap counts the runtime's minimum", 64 * mib, 0, 0, 100, 1600},
		{"less than GOGC's headroom changes nothing", mib, 8 * mib, 0, 100, 100},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := percent(c.headroom, c.live, c.roots, c.base); got != c.want {
				t.Fatalf("percent(%d, %d, %d, %d) = %d, want %d", c.headroom, c.live, c.roots, c.base, got, c.want)
			}
		})
	}
}

func TestHeadroom(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name              string
		allocated         uint64
		elapsed, interval time.Duration
		most, want        uint64
	}{
		{"an interval's allocation", 400 * mib, time.Second, 250 * time.Millisecond, 256 * mib, 100 * mib},
		{"at most most", 4000 * mib, time.Second, 250 * time.Millisecond, 256 * mib, 256 * mib},
		{"a quiet process", 4 * mib, time.Second, 250 * time.Millisecond, 256 * mib, 1 * mib},
		{"no time: most", mib, 0, 250 * time.Millisecond, 256 * mib, 256 * mib},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := headroom(c.allocated, c.elapsed, c.interval, c.most); got != c.want {
				t.Fatalf("headroom(%d, %v, %v, %d) = %d, want %d", c.allocated, c.elapsed, c.interval, c.most, got, c.want)
			}
		})
	}
}

// sink keeps the test's garbage from being optimized away.
var sink []byte

// TestKeep: while the process allocates fast, the heap's goal is above
// what GOGC alone would set, by about most at most; once it is quiet, GOGC's
// again, without waiting for a collection; stop gives GOGC back for good.
func TestKeep(t *testing.T) {
	old := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(old) })
	const most = 48 << 20
	const every = 50 * time.Millisecond
	live := make([][]byte, 0, 64)
	for range 64 {
		live = append(live, make([]byte, 256<<10)) // 16 MiB kept
	}
	stop := keep(every, most)
	s := []metrics.Sample{{Name: gogcMetric}, {Name: "/gc/heap/goal:bytes"}, {Name: liveMetric}}
	deadline := time.Now().Add(20 * time.Second)
	for {
		for range 10000 { // 40 MiB as fast as it goes
			sink = make([]byte, 4<<10)
		}
		metrics.Read(s)
		gogc, goal, lv := s[0].Value.Uint64(), s[1].Value.Uint64(), s[2].Value.Uint64()
		// At least the 16 MiB kept is live, so the most headroom is at
		// most GOGC 300; an allocation rate of some GB/s, uncapped, would
		// set thousands.
		if gogc > most*100/(16<<20)+1 {
			t.Fatalf("GOGC %d, goal %d MiB, live %d MiB: more than %d MiB over the 16 MiB kept", gogc, goal>>20, lv>>20, most>>20)
		}
		if gogc > 100 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("allocating fast, GOGC still %d, goal %d MiB, live %d MiB", gogc, goal>>20, lv>>20)
		}
	}
	// Quiet: the next intervals allocate almost nothing.
	deadline = time.Now().Add(10 * time.Second)
	for metrics.Read(s); s[0].Value.Uint64() != 100; metrics.Read(s) {
		if time.Now().After(deadline) {
			t.Fatalf("quiet, GOGC still %d", s[0].Value.Uint64())
		}
		time.Sleep(10 * time.Millisecond)
	}
	runtime.KeepAlive(live)
	stop()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("after stop, GOGC %d, want 100 again", got)
	}
	// Allocating fast after stop, over several intervals, sets nothing.
	for end := time.Now().Add(5 * every); time.Now().Before(end); {
		sink = make([]byte, 4<<10)
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("after stop and fast allocation, GOGC %d, want 100", got)
	}
}

// TestKeepOff: with the collector off, or no most, Keep changes nothing.
func TestKeepOff(t *testing.T) {
	old := debug.SetGCPercent(-1)
	t.Cleanup(func() { debug.SetGCPercent(old) })
	Keep(64 << 20)()
	if got := debug.SetGCPercent(100); got != -1 {
		t.Fatalf("GOGC=off: Keep set %d", got)
	}
	Keep(0)()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("most 0: Keep set %d", got)
	}
}

// Package gcheadroom spaces the Go collector's cycles in time while a
// process allocates fast: every interval it sets the collector's percentage
// (GOGC) so that the heap may grow over what the last collection left live
// by what the process allocated in the interval just past, up to a most,
// and by GOGC's percentage of the live heap when that is more.
//
// GOGC alone makes the headroom proportional to the live heap, so a process
// with a small live heap that allocates fast collects very often, each time
// marking the whole live heap: the packer on a backlog keeps some 25 to 70
// MB live and allocates about 400 MB a second, some ten collections a
// second at GOGC=100. A higher GOGC would collect less often but multiply
// the heap at every load, an idle packer's too. Headroom for an interval of
// allocation grows only with the rate, up to the most: a busy process
// collects a few times a second for at most that much more memory, and a
// quiet one is left to GOGC. Measuring the rate on a clock rather than
// from one collection to the next also ends a burst's headroom within an
// interval of the burst (a packer's start, say), where a quiet process
// would otherwise take many seconds to reach the next collection. A memory
// limit (GOMEMLIMIT) still bounds it all, as the runtime enforces the limit
// whatever the percentage.
package gcheadroom

import (
	"math"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// DefaultMost is the packer's default most headroom (process packer
// --gc-headroom-mib): on a backlog, some 7 % of its CPU for 20 to 80 MiB
// more at its peak (docs/PERFORMANCE.md, "The collector's pace").
const DefaultMost = 128 << 20

// interval is how often Keep sizes the headroom, for the allocation of the
// interval just past: while a process allocates fast, some two collections
// a second, or more once the most is reached.
const interval = 500 * time.Millisecond

// keeper adjusts the percentage every interval.
type keeper struct {
	most     uint64 // bytes of headroom at most
	interval time.Duration
	base     int // the percentage in force when Keep started: GOGC's
	done     chan struct{}

	mu      sync.Mutex
	stopped bool
	set     int // the percentage last set
	at      time.Time
	allocs  uint64 // bytes allocated since the process started, at at
	samples []metrics.Sample
}

// The metrics the goal is made of (since Go 1.18 the heap's goal is
// live + (live + stacks + globals) × GOGC/100), and the allocation.
const (
	liveMetric    = "/gc/heap/live:bytes"
	stackMetric   = "/gc/scan/stack:bytes"
	globalsMetric = "/gc/scan/globals:bytes"
	allocsMetric  = "/gc/heap/allocs:bytes"
	gogcMetric    = "/gc/gogc:percent"
)

// Keep sizes the headroom every half second for the allocation of the half
// second just past, at most most bytes, until stop. The percentage holds
// until the next time, so a collection meanwhile that finds more live than
// the last scales the headroom in proportion, for the rest of the half
// second. stop sets the percentage back to what it was. Keep does nothing
// when most is 0 or the collector is off (GOGC=off).
func Keep(most uint64) (stop func()) { return keep(interval, most) }

// keep is Keep every interval.
func keep(interval time.Duration, most uint64) (stop func()) {
	s := []metrics.Sample{{Name: gogcMetric}}
	metrics.Read(s)
	if most == 0 || interval <= 0 || s[0].Value.Kind() != metrics.KindUint64 {
		return func() {}
	}
	base := int(s[0].Value.Uint64())
	if base <= 0 {
		return func() {}
	}
	k := &keeper{most: most, interval: interval, base: base, set: base, done: make(chan struct{}), samples: []metrics.Sample{
		{Name: liveMetric}, {Name: stackMetric}, {Name: globalsMetric}, {Name: allocsMetric},
	}}
	k.adjust(time.Now())
	go k.run()
	return k.stop
}

// heapMinimum is the runtime's least heap goal at GOGC=100, which it
// scales by GOGC/100 like the rest of the goal (runtime/mgcpacer.go).
const heapMinimum = 4 << 20

// percent is the percentage whose goal leaves at least headroom over live,
// given the bytes the collector scans besides the heap, and never less
// than base. It counts at least heapMinimum as scanned: the runtime's least
// goal grows with the percentage too, and with a live heap of almost
// nothing it would otherwise reach far beyond the headroom.
func percent(headroom, live, roots uint64, base int) int {
	scanned := max(live+roots, heapMinimum)
	p := (headroom*100 + scanned - 1) / scanned
	if p > math.MaxInt32 {
		p = math.MaxInt32
	}
	return max(base, int(p))
}

// headroom is what a process that allocated allocated bytes in elapsed
// allocates in interval, at most most.
func headroom(allocated uint64, elapsed, interval time.Duration, most uint64) uint64 {
	if elapsed <= 0 {
		return most
	}
	h := float64(allocated) * float64(interval) / float64(elapsed)
	return uint64(min(h, float64(most)))
}

// adjust sets the percentage for what the last collection left live and
// the rate of allocation since the last adjust. A goal that falls below
// the heap as it is starts a collection at once: the burst is over.
func (k *keeper) adjust(now time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return
	}
	metrics.Read(k.samples)
	live, stacks, globals, allocs := k.samples[0].Value.Uint64(), k.samples[1].Value.Uint64(), k.samples[2].Value.Uint64(), k.samples[3].Value.Uint64()
	p := k.base
	if !k.at.IsZero() {
		p = percent(headroom(allocs-k.allocs, now.Sub(k.at), k.interval, k.most), live, stacks+globals, k.base)
	}
	k.at, k.allocs = now, allocs
	if p != k.set {
		debug.SetGCPercent(p)
		k.set = p
	}
}

func (k *keeper) run() {
	t := time.NewTicker(k.interval)
	defer t.Stop()
	for {
		select {
		case <-k.done:
			return
		case now := <-t.C:
			k.adjust(now)
		}
	}
}

func (k *keeper) stop() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.stopped {
		k.stopped = true
		close(k.done)
		debug.SetGCPercent(k.base)
	}
}

package packer

import (
	"context"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
	"github.com/lovoo/goka"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/northpole-workshop/northpole/internal/record"
)

// goka consumes toys and boxes as two independent streams, each as fast as
// its fetches go. On a backlog one input runs ahead of the other in event
// time (their records differ in size, so equal fetches in bytes are unequal
// in records), and every window between the two streams' clocks stays open
// with its items: state that grows with the backlog, not with the open
// windows of the data. The aligner keeps the clock group's two inputs
// together in event time, as Kafka Streams picks the record with the lowest
// timestamp among a task's inputs and Flink aligns watermarks: it pauses a
// partition of the input that is ahead by more than W + L while the same
// partition of the other input has records waiting, and resumes it once it
// is less than half that ahead, or the other has nothing to give. The
// results do not depend on it: only the order in which the two inputs
// interleave changes, and the contract does not depend on that.

// aligner follows the clock group's two inputs, partition by partition.
type aligner struct {
	// made is the greatest made_at (µs) of the valid records processed,
	// per stream (streamIndex) and input partition; math.MinInt64 before one.
	made [2][]atomic.Int64
	// next is the offset after the last record processed, per stream and
	// input partition.
	next [2][]atomic.Int64
	// group is the clock group's sarama consumer group, once goka built it.
	group atomic.Pointer[sarama.ConsumerGroup]
	// idle is set while the aligner sleeps because nothing was processed;
	// the next record processed clears it and wakes the aligner. Each
	// record reads it, and it is written only when the inputs go idle or
	// wake: a line of memory the cores share without passing it back and
	// forth.
	idle atomic.Bool
	wake chan struct{}
}

func newAligner(partitions int32) *aligner {
	a := &aligner{wake: make(chan struct{}, 1)}
	for x := range a.made {
		a.made[x] = make([]atomic.Int64, partitions)
		a.next[x] = make([]atomic.Int64, partitions)
		for p := range a.made[x] {
			a.made[x][p].Store(math.MinInt64)
		}
	}
	return a
}

// processed records that the clock group processed the record of stream x
// at (partition, offset), valid with made_at madeUS or not (valid false).
func (a *aligner) processed(x record.Stream, partition int32, offset int64, madeUS int64, valid bool) {
	if int(partition) >= len(a.next[0]) {
		return // a partition the topic got after the packer started
	}
	i := streamIndex(x)
	a.next[i][partition].Store(offset + 1)
	if a.idle.Load() && a.idle.CompareAndSwap(true, false) {
		select {
		case a.wake <- struct{}{}:
		default:
		}
	}
	if valid {
		m := &a.made[i][partition]
		for old := m.Load(); madeUS > old && !m.CompareAndSwap(old, madeUS); old = m.Load() {
		}
	}
}

// capture wraps the clock group's consumer group builder, to pause and
// resume its partitions.
func (a *aligner) capture(b goka.ConsumerGroupBuilder) goka.ConsumerGroupBuilder {
	return func(brokers []string, group, clientID string) (sarama.ConsumerGroup, error) {
		cg, err := b(brokers, group, clientID)
		if err == nil {
			a.group.Store(&cg)
		}
		return cg, err
	}
}

// advanced says whether the group processed a record of any input
// partition since seen (the offsets after the records processed, per
// stream and partition), and makes seen the offsets now.
func (a *aligner) advanced(seen *[2][]int64) bool {
	moved := false
	for x := range a.next {
		if seen[x] == nil {
			seen[x] = make([]int64, len(a.next[x]))
		}
		for p := range a.next[x] {
			if n := a.next[x][p].Load(); n != seen[x][p] {
				seen[x][p], moved = n, true
			}
		}
	}
	return moved
}

// sleep marks the aligner idle, so that the next record processed wakes it,
// and says whether one was processed before the mark took hold (then it
// stays awake; seen, as advanced, moves to the offsets now).
func (a *aligner) sleep(seen *[2][]int64) (woke bool) {
	a.idle.Store(true)
	if a.advanced(seen) {
		a.idle.Store(false)
		return true
	}
	return false
}

// idleLookEvery is how often the aligner looks at the inputs' end offsets
// while they are idle: nothing processed since its last look and nothing
// paused. Then there is nothing to pause or resume (an input runs ahead
// only by being processed, and a pause ends only when the other input is
// processed or has nothing left), so it sleeps until a record is processed
// and looks only to keep the lag metric fresh. Looking every --align-every
// (100 ms) cost an idle packer about three times the CPU.
const idleLookEvery = time.Second

// alignment is what the aligner knows of one input partition.
type alignment struct {
	made    [2]int64 // greatest made_at processed, µs (math.MinInt64: none)
	waiting [2]bool  // records at the end offset beyond those processed
	paused  [2]bool  // paused now
}

// pause says which stream of a partition to pause now: the one ahead in
// event time by more than bound while the other has records waiting, and
// one already paused as long as it is more than half of bound ahead and the
// other still has records waiting.
func (al alignment) pause(bound int64) [2]bool {
	var out [2]bool
	if al.made[0] == math.MinInt64 || al.made[1] == math.MinInt64 {
		return out
	}
	for x := range 2 {
		y := 1 - x
		lead := al.made[x] - al.made[y]
		limit := bound
		if al.paused[x] {
			limit = bound / 2
		}
		out[x] = lead > limit && al.waiting[y]
	}
	return out
}

// align pauses and resumes the clock group's input partitions every
// Config.AlignEvery while records are processed or a partition is paused,
// until ctx ends; while the inputs are idle it looks every idleLookEvery,
// and again at the first record processed. An error leaves every partition
// resumed: the aligner only saves memory, never holds records back for
// long.
func (p *Packer) align(ctx context.Context) {
	a := p.aligner
	cl, err := p.client()
	if err != nil {
		p.log.Warn("input aligner: no Kafka client; the inputs are not aligned", "err", err)
		return
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	topics := [2]string{p.cfg.Topics.Toys, p.cfg.Topics.Boxes}
	listed := p.metrics.listed(topics[:])
	bound := p.params.WindowUS + p.params.LatenessUS
	paused := make([][2]bool, len(a.next[0]))
	var (
		seen     [2][]int64 // the offsets processed at the last wake
		lookedAt time.Time
	)
	every := p.cfg.alignEvery()
	idleEvery := max(idleLookEvery, every)
	t := time.NewTimer(every)
	defer t.Stop()
	defer func() { // a processor of the next run starts with everything resumed
		if g := a.group.Load(); g != nil {
			(*g).ResumeAll()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-a.wake:
		}
		t.Reset(every)
		g := a.group.Load()
		if g == nil {
			continue
		}
		anyPaused := slices.ContainsFunc(paused, func(pp [2]bool) bool { return pp[0] || pp[1] })
		if !a.advanced(&seen) && !anyPaused && !a.sleep(&seen) {
			if wait := idleEvery - time.Since(lookedAt); wait > 0 {
				t.Reset(wait)
				continue
			}
		}
		lookedAt = time.Now()
		ends, err := adm.ListEndOffsets(ctx, listed...)
		if err != nil {
			(*g).ResumeAll()
			clear(paused)
			continue
		}
		p.metrics.endOffsets(ends)
		pause, resume := a.pauses(ends, topics, bound, paused)
		if len(resume) > 0 {
			(*g).Resume(resume)
		}
		if len(pause) > 0 {
			(*g).Pause(pause)
		}
	}
}

// pauses is what to pause and resume of the input topics, by topic, given
// their end offsets: paused says what is paused now, and is updated.
func (a *aligner) pauses(ends kadm.ListedOffsets, topics [2]string, bound int64, paused [][2]bool) (pause, resume map[string][]int32) {
	pause, resume = map[string][]int32{}, map[string][]int32{}
	for part := range paused {
		al := alignment{paused: paused[part]}
		for x := range 2 {
			al.made[x] = a.made[x][part].Load()
			e, ok := ends.Lookup(topics[x], int32(part))
			al.waiting[x] = ok && e.Err == nil && e.Offset > a.next[x][part].Load()
		}
		want := al.pause(bound)
		for x := range 2 {
			switch {
			case want[x] && !paused[part][x]:
				pause[topics[x]] = append(pause[topics[x]], int32(part))
			case !want[x] && paused[part][x]:
				resume[topics[x]] = append(resume[topics[x]], int32(part))
			}
		}
		paused[part] = want
	}
	return pause, resume
}

package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/procfs"
	"github.com/northpole-workshop/northpole/processors/packer"
)

// What the packer keeps and what a restart of it costs (Config.Restart).
// The packer deletes the records of its clock table that no restart needs
// every packer.Config.CleanEvery (processors/packer/horizon.go), so its state
// on the broker is bounded by the open windows rather than by the records it
// ever read. Once the packer's lag is zero the bench lets it run on
// (cleanWait) so that its cleaner catches up, stops it, reads what its
// internal topics keep (internalState), and starts it again to time how long
// it takes to be ready (restart).

// TopicState is what one of the packer's internal topics holds once the
// packer has stopped.
type TopicState struct {
	Topic string `json:"topic"`
	Kind  string `json:"kind"` // KindLoops, KindEvents or KindTables
	// Written is the records ever written: the end offsets, summed over the
	// partitions (the bench's topics are new).
	Written int64 `json:"records_written"`
	// Kept is the records the broker still holds: end offset less start
	// (log start) offset, summed over the partitions.
	Kept int64 `json:"records_kept"`
	// Bytes is the size of the topic's logs on the brokers (DescribeLogDirs,
	// every replica), -1 when the broker did not say.
	Bytes int64 `json:"bytes"`
}

// cleanWait is how long the packer runs on after zero lag before it is
// stopped: two cleaning intervals and a second, so that at least one whole
// round of its cleaner runs after every record was committed.
func cleanWait(c packer.Config) time.Duration { return 2*c.CleanEvery + time.Second }

// measuresState says whether variant v gets the state measurements: the
// packer's variants but live (the elves write while it runs: no settled
// state) when Config.Restart is on.
func (b *Bench) measuresState(v Variant) bool { return b.cfg.Restart && !v.Live && !v.Hop }

// internalTopics are the topics of uses that the worker's groups both write
// and read, or write as a table: the packer's loop and tables.
func internalTopics(uses []topicUse) []topicUse {
	return slices.DeleteFunc(slices.Clone(uses), func(u topicUse) bool {
		return u.kind == KindInputs || u.kind == KindOutputs
	})
}

// stopQuiet stops the packer proc, which is at zero lag, and sets its CPU
// and peak RSS in r. A variant whose state is measured keeps it running for
// the cleaner first (cleanTail); the CPU of that tail is left out of
// r.CPUSeconds, which is then, as without it, the CPU to zero lag and the
// exit.
func (b *Bench) stopQuiet(ctx context.Context, proc *process, span *brokerSpan, v Variant, c packer.Config, r *Result) error {
	var tailCPU time.Duration
	if b.measuresState(v) {
		var err error
		if tailCPU, err = b.cleanTail(ctx, proc, span, c, r); err != nil {
			_ = proc.stop(r)
			return err
		}
	}
	if err := proc.stop(r); err != nil {
		return fmt.Errorf("packer process: %w", err)
	}
	r.CPUSeconds -= tailCPU.Seconds()
	return nil
}

// cleanTail keeps the packer proc running for cleanWait(c) after zero lag,
// leaving that time out of the broker's span, and returns the packer's CPU
// time over it (/proc), which is not the processing's.
func (b *Bench) cleanTail(ctx context.Context, proc *process, span *brokerSpan, c packer.Config, r *Result) (time.Duration, error) {
	d := cleanWait(c)
	b.progress("  zero lag: the packer runs on for %s (2 × its cleaning interval %s + 1 s) so that it deletes what no restart needs", d, c.CleanEvery)
	cpu0, err := proc.cpu()
	if err != nil {
		return 0, fmt.Errorf("packer CPU at zero lag: %w", err)
	}
	resume, err := span.skip()
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-proc.exited:
		return 0, fmt.Errorf("packer process ended early: %w", exitErr(proc.err))
	case <-time.After(d):
	}
	cpu1, err := proc.cpu()
	if err != nil {
		return 0, fmt.Errorf("packer CPU after the cleaning wait: %w", err)
	}
	if err := resume(); err != nil {
		return 0, err
	}
	r.CleanWaitSeconds, r.CleanWaitCPUSeconds = time.Since(t0).Seconds(), (cpu1 - cpu0).Seconds()
	return cpu1 - cpu0, nil
}

// state, once the packer has stopped, measures what its internal topics
// keep and how long a restarted packer (worker w again) takes to be ready;
// for a variant v with Handover, also a rebalance that moves the state.
func (b *Bench) state(ctx context.Context, kc kafkaconf.Config, v Variant, w Worker, env []string, uses []topicUse, r *Result) error {
	ts, bytesErr, err := internalState(ctx, kc, internalTopics(uses))
	if err != nil {
		return fmt.Errorf("internal topics: %w", err)
	}
	r.InternalTopics = ts
	for _, t := range ts {
		r.InternalRecordsWritten += t.Written
		r.InternalRecordsKept += t.Kept
		r.InternalBytes += t.Bytes
	}
	size := fmt.Sprintf("%d bytes", r.InternalBytes)
	if bytesErr != nil {
		r.InternalBytes, r.InternalBytesError = -1, bytesErr.Error()
		size = "bytes not measured: " + r.InternalBytesError
	}
	b.progress("  internal topics keep %d of the %d records written (%s); restarting the packer", r.InternalRecordsKept, r.InternalRecordsWritten, size)
	if err := b.restart(ctx, w, env, r); err != nil {
		return err
	}
	b.progress("  the restarted packer was ready in %.2f s (max RSS %.0f MiB then)", r.RestartReadySeconds, r.RestartMaxRSSMiB)
	if !v.Handover {
		return nil
	}
	b.progress("  handover: two packers share the group, then the one holding the clock table leaves")
	if err := b.handover(ctx, w, env, r); err != nil {
		return err
	}
	b.progress("  the other packer ran with every partition %.2f s after the leaver's SIGTERM (the leaver had exited after %.2f s)", r.HandoverSeconds, r.HandoverExitSeconds)
	return nil
}

// internalState is what each of topics holds: records written and kept
// (start and end offsets) and bytes (DescribeAllLogDirs). bytesErr says why
// the bytes are not known (then every Bytes is -1); err is any other
// failure.
func internalState(ctx context.Context, kc kafkaconf.Config, topics []topicUse) (ts []TopicState, bytesErr, err error) {
	adm, err := admin(ctx, kc)
	if err != nil {
		return nil, nil, err
	}
	defer adm.Close()
	var names []string
	for _, u := range topics {
		names = append(names, u.topic)
	}
	starts, err := adm.ListStartOffsets(ctx, names...)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("start offsets of %v: %w", names, err)
	}
	ends, err := adm.ListEndOffsets(ctx, names...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("end offsets of %v: %w", names, err)
	}
	sizes, bytesErr := logSizes(ctx, adm, ends)
	for _, u := range topics {
		t := TopicState{Topic: u.topic, Kind: u.kind, Bytes: -1}
		for p, end := range ends[u.topic] {
			t.Written += end.Offset
			t.Kept += end.Offset - starts[u.topic][p].Offset
		}
		if bytesErr == nil {
			t.Bytes = sizes[u.topic]
		}
		ts = append(ts, t)
	}
	return ts, bytesErr, nil
}

// logSizes is the size of each topic's logs on every broker
// (DescribeAllLogDirs, replicas summed), for the partitions of offsets.
// A partition no broker reports is an error: the size is not known.
func logSizes(ctx context.Context, adm *kadm.Client, offsets kadm.ListedOffsets) (map[string]int64, error) {
	set := kadm.TopicsSet{}
	offsets.Each(func(o kadm.ListedOffset) { set.Add(o.Topic, o.Partition) })
	dirs, err := adm.DescribeAllLogDirs(ctx, set)
	if err != nil {
		return nil, fmt.Errorf("describe log dirs: %w", err)
	}
	sizes := map[string]int64{}
	reported := kadm.TopicsSet{}
	var errs []error
	dirs.Each(func(d kadm.DescribedLogDir) {
		if d.Err != nil {
			errs = append(errs, fmt.Errorf("log dir %s of broker %d: %w", d.Dir, d.Broker, d.Err))
			return
		}
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			if _, ok := set[p.Topic][p.Partition]; ok {
				sizes[p.Topic] += p.Size
				reported.Add(p.Topic, p.Partition)
			}
		})
	})
	for t, ps := range set {
		for p := range ps {
			if _, ok := reported[t][p]; !ok {
				errs = append(errs, fmt.Errorf("no broker reports the log of %s/%d", t, p))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return sizes, nil
}

// restart starts worker w again (its CPU profile, if any, is the first
// run's and stays) and measures the wall time from its start until it
// prints packer.ReadyLine, and its peak RSS then; then stops it.
func (b *Bench) restart(ctx context.Context, w Worker, env []string, r *Result) error {
	w.CPUProfile = ""
	proc, err := b.start(ctx, w, env, true)
	if err != nil {
		return fmt.Errorf("restart the packer: %w", err)
	}
	select {
	case <-proc.ready.seen:
		r.RestartReadySeconds = proc.ready.when().Sub(proc.started).Seconds()
		r.RestartMaxRSSMiB = procfs.PeakRSSMiB(proc.cmd.Process.Pid)
	case <-proc.exited:
		return fmt.Errorf("the restarted packer ended before it printed %q: %w", packer.ReadyPrefix, exitErr(proc.err))
	case <-ctx.Done():
		_, _ = proc.halt()
		return fmt.Errorf("waiting for the restarted packer to be ready: %w", ctx.Err())
	}
	if _, err := proc.halt(); err != nil {
		return fmt.Errorf("restarted packer: %w", err)
	}
	return nil
}

// exitErr is what a process that exited with err (nil: status 0) did.
func exitErr(err error) error {
	if err == nil {
		return errors.New("exit status 0")
	}
	return err
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/IBM/sarama"
	"github.com/spf13/cobra"

	"github.com/northpole-workshop/northpole/internal/contract"
	"github.com/northpole-workshop/northpole/internal/kafkaconf"
	"github.com/northpole-workshop/northpole/internal/kfakebroker"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
	"github.com/northpole-workshop/northpole/otel/servicemap"
	"github.com/northpole-workshop/northpole/processors/packer"
	"github.com/northpole-workshop/northpole/producers"
)

// benchVariant is one configuration of the packer measured by `northpole bench`.
type benchVariant struct {
	Name       string `json:"name"`
	Partitions int32  `json:"partitions"`
	Tracing    string `json:"tracing"` // off | 100% | 10%
	Broker     string `json:"broker"`  // kfake | real
	Storage    string `json:"storage"` // memory | disk
	Live       bool   `json:"live,omitempty"`
	// Hop: not the packer but one bare goka hop (bench-hop), the floor.
	Hop      bool    `json:"hop,omitempty"`
	LiveRate float64 `json:"live_rate,omitempty"`
}

// benchResult is what one variant measured.
type benchResult struct {
	benchVariant
	InputEvents    int64   `json:"input_events"`
	OutputRecords  int64   `json:"output_records"`
	Seconds        float64 `json:"seconds"`
	EventsPerSec   float64 `json:"input_events_per_s"`
	OutputsPerSec  float64 `json:"output_records_per_s"`
	CPUSeconds     float64 `json:"packer_cpu_s"`
	CPUPerEventUS  float64 `json:"packer_cpu_us_per_event"`
	MaxRSSMiB      float64 `json:"packer_max_rss_mib"`
	LatencyP50MS   float64 `json:"latency_p50_ms,omitempty"`
	LatencyP99MS   float64 `json:"latency_p99_ms,omitempty"`
	LatencyP999MS  float64 `json:"latency_p999_ms,omitempty"`
	LatencySamples int     `json:"latency_samples,omitempty"`
	// Ratios to the baseline (the first variant) of CPU per event and events/s.
	CPURatio  float64 `json:"cpu_per_event_ratio,omitempty"`
	RateRatio float64 `json:"events_per_s_ratio,omitempty"`
	Error     string  `json:"error,omitempty"`
}

type benchOptions struct {
	records     int
	partitions  []int
	variants    string
	liveRate    float64
	liveSeconds time.Duration
	storageDir  string
	jsonOut     bool
	elves       int
	cpuprofile  string
	timeout     time.Duration
	window      time.Duration
	lateness    time.Duration
}

func newBenchCmd() *cobra.Command {
	var o benchOptions
	var ko kafkaOptions
	var parts string
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the packer: throughput, CPU per input event, memory, pack latency",
		Long: `bench pre-loads --records toys and boxes (half each, clean: no late, duplicate
or bad records) into Kafka, then starts the packer as its own OS process
(northpole process packer) from the start of the topics and measures until its
lag is zero: input events/s (toys, boxes and heartbeats), the packer process's
user+system CPU per input event (rusage) and its peak RSS (VmHWM), and output
records/s. The live variant writes at a fixed --live-rate instead and reports
pack latency (packed record's Kafka timestamp minus the later of its toy's and
box's) at p50/p99/p999.

Variants (--variants, comma-separated; the first is the baseline of the ratios):
  base        the default partitions (first of --partitions), tracing off, memory
  trace100    OTEL on in the packer, every trace sampled, OTLP/gRPC to a receiver
              in the bench process (which counts spans and throws them away)
  trace10     the same, 10 % sampled (parentbased_traceidratio 0.1)
              (OTEL_BSP_* in the bench's environment reach the packer: the
              batch span processor drops spans when its queue, 2048 by
              default, is full; the receiver's count shows it)
  parts       one run per other --partitions value
  disk        --storage-dir (LevelDB) instead of memory
  real        the real broker of --brokers (skipped without --brokers)
  live        fixed input rate, latency percentiles
  hop         not the packer: one goka group that consumes toys and boxes and
              writes each record into its group table (one consume and one
              write per event, no packing logic), the floor of one stage

Without --brokers the bench uses an in-process kfake broker (in this process,
so its CPU is not the packer's). Quick run: --records 100000.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, p := range strings.Split(parts, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(p))
				if err != nil || n < 1 {
					return usageErr("--partitions %q: want a list of counts such as 1,4,8", parts)
				}
				o.partitions = append(o.partitions, n)
			}
			if o.records < 2 {
				return usageErr("--records must be at least 2")
			}
			if err := o.validate(); err != nil {
				return err
			}
			return runBench(cmd.Context(), o, ko)
		},
	}
	ko.inProcessDefault = true
	ko.bind(cmd.Flags(), "a real Kafka for the \"real\" variant, host:port[,host:port] (default: none; all other variants use an in-process kfake)")
	fs := cmd.Flags()
	fs.IntVar(&o.records, "records", 1_000_000, "input records per run (toys + boxes, half each)")
	fs.StringVar(&parts, "partitions", "4,1,8", "partition counts: the first is the baseline's, the others the \"parts\" variant's")
	fs.StringVar(&o.variants, "variants", "base,trace100,trace10,parts,disk,real,live", "variants to run, in order")
	fs.Float64Var(&o.liveRate, "live-rate", 2000, "live variant: input records per second (toys + boxes)")
	fs.DurationVar(&o.liveSeconds, "live-duration", 30*time.Second, "live variant: how long the elves write")
	fs.StringVar(&o.storageDir, "storage-dir", "", "directory for the disk variant's LevelDB (default: a temporary one, removed after)")
	fs.BoolVar(&o.jsonOut, "json", false, "print the results as JSON on stdout instead of a table")
	fs.IntVar(&o.elves, "elves", 2, "elves (goroutines) per stream when pre-loading")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write the baseline packer's CPU profile to this file")
	fs.DurationVar(&o.window, "window", packer.DefaultConfig().Window, "window width W of the packer and the elves")
	fs.DurationVar(&o.lateness, "lateness", packer.DefaultConfig().Lateness, "allowed lateness L of the packer and the elves")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Minute, "give up on one variant after this long")
	return cmd
}

// validate rejects flag values that make no sense, as usage errors.
func (o benchOptions) validate() error {
	switch {
	case o.timeout <= 0:
		return usageErr("--timeout must be positive, got %v", o.timeout)
	case o.liveSeconds <= 0:
		return usageErr("--live-duration must be positive, got %v", o.liveSeconds)
	case !(o.liveRate > 0) || math.IsInf(o.liveRate, 0):
		return usageErr("--live-rate must be a positive number of records per second, got %v", o.liveRate)
	case o.elves < 1 || o.elves > producers.MaxElves:
		return usageErr("--elves must be between 1 and %d, got %d", producers.MaxElves, o.elves)
	}
	p := contract.Params{Window: o.window, Lateness: o.lateness}
	if err := p.Validate(); err != nil {
		return usageErr("%w", err)
	}
	return nil
}

func runBench(ctx context.Context, o benchOptions, ko kafkaOptions) error {
	progress := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
	}
	real, err := ko.config("northpole-bench")
	if err != nil {
		return err
	}
	if len(real.Brokers) > 0 {
		if err := real.Validate(); err != nil {
			return usageErr("%w", err)
		}
	}
	kf, err := kfakebroker.Start()
	if err != nil {
		return err
	}
	defer kf.Close()
	fake := real
	fake.Brokers = kf.Addrs()
	fake.Security = kafkaconf.Security{}

	var variants []benchVariant
	base := benchVariant{Partitions: int32(o.partitions[0]), Tracing: "off", Broker: "kfake", Storage: "memory"}
	for _, name := range strings.Split(o.variants, ",") {
		v := base
		switch strings.TrimSpace(name) {
		case "base":
			v.Name = "baseline"
		case "trace100":
			v.Name, v.Tracing = "tracing 100%", "100%"
		case "trace10":
			v.Name, v.Tracing = "tracing 10%", "10%"
		case "parts":
			for _, p := range o.partitions[1:] {
				w := base
				w.Name, w.Partitions = fmt.Sprintf("%d partitions", p), int32(p)
				variants = append(variants, w)
			}
			continue
		case "disk":
			v.Name, v.Storage = "storage on disk", "disk"
		case "real":
			if len(real.Brokers) == 0 {
				progress("no --brokers: skipping the real-broker variant")
				continue
			}
			v.Name, v.Broker = "real broker", "real"
		case "hop":
			v.Name, v.Hop = "one goka hop (floor)", true
		case "live":
			v.Name, v.Live, v.LiveRate = fmt.Sprintf("live %.0f/s", o.liveRate), true, o.liveRate
		default:
			return usageErr("--variants: unknown %q", name)
		}
		variants = append(variants, v)
	}

	var out []benchResult
	for i, v := range variants {
		kc := fake
		if v.Broker == "real" {
			kc = real
		}
		progress("variant %d/%d: %s", i+1, len(variants), v.Name)
		vctx, cancel := context.WithTimeout(ctx, o.timeout)
		r, err := benchOne(vctx, o, kc, v, i == 0, progress)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			progress("variant %s failed: %v", v.Name, err)
			r.Error = err.Error()
		}
		out = append(out, r)
	}
	if len(out) > 0 && out[0].Error == "" && !out[0].Live {
		b := out[0]
		for i := range out {
			if out[i].Error != "" || out[i].Live {
				continue
			}
			out[i].CPURatio = out[i].CPUPerEventUS / b.CPUPerEventUS
			out[i].RateRatio = out[i].EventsPerSec / b.EventsPerSec
		}
	}
	if o.jsonOut {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"records": o.records, "window": o.window.String(), "lateness": o.lateness.String(), "results": out})
	}
	printBenchTable(os.Stdout, out)
	return nil
}

func printBenchTable(w io.Writer, rs []benchResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "variant\tparts\tevents\tevents/s\tCPU µs/event\tCPU ratio\trate ratio\tmax RSS MiB\toutputs/s\tp50 ms\tp99 ms\tp999 ms\t")
	for _, r := range rs {
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\t%d\tfailed: %s\t\t\t\t\t\t\t\t\t\t\n", r.Name, r.Partitions, r.Error)
			continue
		}
		ratio := func(x float64) string {
			if x == 0 {
				return "-"
			}
			return fmt.Sprintf("%.2f", x)
		}
		lat := func(x float64) string {
			if !r.Live {
				return "-"
			}
			return fmt.Sprintf("%.1f", x)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%.1f\t%s\t%s\t%.0f\t%.0f\t%s\t%s\t%s\t\n", r.Name, r.Partitions, r.InputEvents, r.EventsPerSec,
			r.CPUPerEventUS, ratio(r.CPURatio), ratio(r.RateRatio), r.MaxRSSMiB, r.OutputsPerSec, lat(r.LatencyP50MS), lat(r.LatencyP99MS), lat(r.LatencyP999MS))
	}
	tw.Flush()
}

func benchOne(ctx context.Context, o benchOptions, kc kafkaconf.Config, v benchVariant, first bool, progress func(string, ...any)) (benchResult, error) {
	r := benchResult{benchVariant: v}
	name := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	cfg := packer.DefaultConfig()
	cfg.Kafka, cfg.Group, cfg.Partitions = kc, name+"-packer", v.Partitions
	cfg.Window, cfg.Lateness = o.window, o.lateness
	cfg.Topics = packer.Topics{Toys: name + "-toys", Boxes: name + "-boxes", Packed: name + "-packed", Unpacked: name + "-unpacked",
		Spare: name + "-spare", Late: name + "-late", Dead: name + "-dead"}
	pk, err := packer.New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		return r, err
	}
	if err := pk.EnsureTopics(ctx); err != nil {
		return r, err
	}
	elfCfg := func(x record.Stream, count int) producers.Config {
		c := producers.DefaultConfig(x)
		c.Topic, c.Count, c.Elves, c.Seed = cfg.Topics.Toys, count, o.elves, 1
		if x == record.Boxes {
			c.Topic, c.Seed = cfg.Topics.Boxes, 2
		}
		c.Window, c.Lateness = cfg.Window, cfg.Lateness
		c.FinalHeartbeatAt = c.Start.Add(time.Duration(count+1)*c.Spacing + c.Window + c.Lateness)
		return c
	}
	produce := func(ctx context.Context, count int, rate float64) error {
		errs := make(chan error, 2)
		for _, x := range []record.Stream{record.Toys, record.Boxes} {
			c := elfCfg(x, count)
			c.Rate = rate
			go func() {
				last := time.Now()
				_, err := producers.Run(ctx, kc, c, func(s producers.Stats) {
					if time.Since(last) > 5*time.Second {
						last = time.Now()
						progress("  %s: %d written", x, s.Acked)
					}
				})
				errs <- err
			}()
		}
		return errors.Join(<-errs, <-errs)
	}

	// The packer's process.
	exe, err := os.Executable()
	if err != nil {
		return r, err
	}
	var pargs []string
	pargs = []string{"process", "packer", "--brokers", strings.Join(kc.Brokers, ","), "--group", cfg.Group,
		"--partitions", strconv.Itoa(int(v.Partitions)), "--window", o.window.String(), "--lateness", o.lateness.String(),
		"--toys-topic", cfg.Topics.Toys, "--boxes-topic", cfg.Topics.Boxes, "--packed-topic", cfg.Topics.Packed,
		"--unpacked-topic", cfg.Topics.Unpacked, "--spare-topic", cfg.Topics.Spare, "--late-topic", cfg.Topics.Late,
		"--dead-topic", cfg.Topics.Dead}
	if v.Storage == "disk" {
		dir := o.storageDir
		if dir == "" {
			dir, err = os.MkdirTemp("", "northpole-bench-")
			if err != nil {
				return r, err
			}
			defer os.RemoveAll(dir)
		}
		pargs = append(pargs, "--storage-dir", dir+"/"+name)
	}
	if v.Hop {
		pargs = []string{"bench-hop", "--brokers", strings.Join(kc.Brokers, ","), "--group", hopGroup(name),
			"--toys-topic", cfg.Topics.Toys, "--boxes-topic", cfg.Topics.Boxes}
	}
	if kc.FlushFrequency != 0 {
		pargs = append(pargs, "--kafka-flush", kc.FlushFrequency.String())
	}
	if first && o.cpuprofile != "" {
		pargs = append(pargs, "--cpuprofile", o.cpuprofile)
	}
	// The bench decides the packer's tracing; only the batch span
	// processor's sizes (OTEL_BSP_*) may come from the bench's environment.
	env := []string{}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "OTEL_") || strings.HasPrefix(e, "OTEL_BSP_") {
			env = append(env, e)
		}
	}
	if v.Tracing != "off" {
		rcv, err := servicemap.Listen(servicemap.NewBuilder(servicemap.Options{}), "127.0.0.1:0", "", slog.New(slog.DiscardHandler))
		if err != nil {
			return r, err
		}
		defer func() {
			_, spans := rcv.Received()
			progress("  the receiver got %d spans", spans)
			rcv.Close()
		}()
		env = append(env, "OTEL_EXPORTER_OTLP_ENDPOINT=http://"+rcv.GRPCAddr(), "OTEL_EXPORTER_OTLP_PROTOCOL=grpc", "OTEL_METRICS_EXPORTER=none")
		if v.Tracing == "10%" {
			env = append(env, "OTEL_TRACES_SAMPLER=parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG=0.1")
		} else {
			env = append(env, "OTEL_TRACES_SAMPLER=always_on")
		}
	}
	start := func() (*exec.Cmd, chan error, error) {
		c := exec.CommandContext(ctx, exe, pargs...)
		c.Env, c.Stdout, c.Stderr = env, os.Stderr, os.Stderr
		c.Cancel = func() error { return c.Process.Signal(syscall.SIGTERM) }
		c.WaitDelay = 30 * time.Second
		if err := c.Start(); err != nil {
			return nil, nil, err
		}
		done := make(chan error, 1)
		go func() { done <- c.Wait() }()
		return c, done, nil
	}
	stop := func(c *exec.Cmd, done chan error) error {
		// Peak RSS: VmHWM of the packer's own address space, read before it
		// exits. rusage's Maxrss is no good here: at exec Linux keeps the
		// high-water mark of the forking process, this one, whose RSS holds
		// the in-process broker's data.
		r.MaxRSSMiB = vmHWM(c.Process.Pid)
		_ = c.Process.Signal(syscall.SIGTERM)
		err := <-done
		if ru, ok := c.ProcessState.SysUsage().(*syscall.Rusage); ok {
			r.CPUSeconds = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
		}
		return err
	}

	var began time.Time
	if !v.Live {
		progress("  pre-loading %d records (%d partitions, %s)", o.records, v.Partitions, v.Broker)
		t0 := time.Now()
		if err := produce(ctx, o.records/2, 0); err != nil {
			return r, err
		}
		progress("  pre-loaded in %s; starting the packer", time.Since(t0).Round(time.Millisecond))
		began = time.Now()
		c, done, err := start()
		if err != nil {
			return r, err
		}
		wait := func() error { return waitQuietProgress(ctx, pk, done, progress) }
		if v.Hop {
			wait = func() error {
				return waitGroupQuiet(ctx, kc, hopGroup(name), []string{cfg.Topics.Toys, cfg.Topics.Boxes}, done, progress)
			}
		}
		if err := wait(); err != nil {
			_ = stop(c, done)
			return r, err
		}
		r.Seconds = time.Since(began).Seconds()
		if err := stop(c, done); err != nil {
			return r, fmt.Errorf("packer process: %w", err)
		}
	} else {
		c, done, err := start()
		if err != nil {
			return r, err
		}
		progress("  waiting for the packer's three groups to be stable")
		if err := waitStable(ctx, kc, cfg.Groups(), done); err != nil {
			_ = stop(c, done)
			return r, err
		}
		count := int(v.LiveRate * o.liveSeconds.Seconds() / 2)
		progress("  writing %d records at %.0f/s", 2*count, v.LiveRate)
		began = time.Now()
		if err := produce(ctx, count, v.LiveRate/2); err != nil {
			_ = stop(c, done)
			return r, err
		}
		if err := waitQuietProgress(ctx, pk, done, progress); err != nil {
			_ = stop(c, done)
			return r, err
		}
		r.Seconds = time.Since(began).Seconds()
		if err := stop(c, done); err != nil {
			return r, fmt.Errorf("packer process: %w", err)
		}
		lat, err := packLatencies(ctx, kc, cfg.Topics)
		if err != nil {
			return r, err
		}
		r.LatencySamples = len(lat)
		if len(lat) > 0 {
			q := func(p float64) float64 {
				i := int(p * float64(len(lat)-1))
				return float64(lat[i].Microseconds()) / 1000
			}
			r.LatencyP50MS, r.LatencyP99MS, r.LatencyP999MS = q(0.50), q(0.99), q(0.999)
		}
	}
	in, err := endOffsets(ctx, kc, cfg.Topics.Toys, cfg.Topics.Boxes)
	if err != nil {
		return r, err
	}
	outN, err := endOffsets(ctx, kc, cfg.Topics.Packed, cfg.Topics.Unpacked, cfg.Topics.Spare, cfg.Topics.Late, cfg.Topics.Dead)
	if err != nil {
		return r, err
	}
	r.InputEvents, r.OutputRecords = in, outN
	r.EventsPerSec = float64(in) / r.Seconds
	r.OutputsPerSec = float64(outN) / r.Seconds
	r.CPUPerEventUS = r.CPUSeconds * 1e6 / float64(in)
	progress("  %d events in %.1f s: %.0f events/s, %.1f µs CPU/event, max RSS %.0f MiB", in, r.Seconds, r.EventsPerSec, r.CPUPerEventUS, r.MaxRSSMiB)
	return r, nil
}

func waitQuietProgress(ctx context.Context, pk *packer.Packer, done chan error, progress func(string, ...any)) error {
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	quiet := make(chan error, 1)
	qctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// WaitQuiet reads from done; give it a copy so that stop can still wait.
	stopped := make(chan error, 1)
	go func() { quiet <- pk.WaitQuiet(qctx, 200*time.Millisecond, stopped) }()
	for {
		select {
		case err := <-quiet:
			return err
		case err := <-done:
			done <- err
			return fmt.Errorf("packer process ended early: %v", err)
		case <-tick.C:
			if lag, err := pk.Lag(ctx); err == nil {
				progress("  packer lag %d", lag)
			}
		}
	}
}

func waitStable(ctx context.Context, kc kafkaconf.Config, groups []string, done chan error) error {
	client, err := kc.NewReaderClient(ctx)
	if err != nil {
		return err
	}
	defer client.Close()
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		return err
	}
	for {
		ds, err := admin.DescribeConsumerGroups(groups)
		stable := 0
		if err == nil {
			for _, d := range ds {
				if d.State == "Stable" {
					stable++
				}
			}
		}
		if stable == len(groups) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-done:
			done <- err
			return fmt.Errorf("packer process ended early: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func endOffsets(ctx context.Context, kc kafkaconf.Config, topics ...string) (int64, error) {
	client, err := kc.NewReaderClient(ctx)
	if err != nil {
		return 0, err
	}
	defer client.Close()
	var n int64
	for _, t := range topics {
		ps, err := client.Partitions(t)
		if err != nil {
			return 0, err
		}
		for _, p := range ps {
			end, err := client.GetOffset(t, p, sarama.OffsetNewest)
			if err != nil {
				return 0, err
			}
			n += end
		}
	}
	return n, nil
}

// readAll calls f for every record of topic, oldest to the current end.
func readAll(ctx context.Context, kc kafkaconf.Config, topic string, f func(*sarama.ConsumerMessage)) error {
	client, err := kc.NewReaderClient(ctx)
	if err != nil {
		return err
	}
	defer client.Close()
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		return err
	}
	defer consumer.Close()
	ps, err := client.Partitions(topic)
	if err != nil {
		return err
	}
	for _, p := range ps {
		end, err := client.GetOffset(topic, p, sarama.OffsetNewest)
		if err != nil {
			return err
		}
		if end == 0 {
			continue
		}
		pc, err := consumer.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			return err
		}
		for done := false; !done; {
			select {
			case m := <-pc.Messages():
				f(m)
				done = m.Offset >= end-1
			case e := <-pc.Errors():
				pc.Close()
				return e
			case <-ctx.Done():
				pc.Close()
				return ctx.Err()
			}
		}
		pc.Close()
	}
	return nil
}

// packLatencies: for each packed record, its Kafka timestamp minus the later
// of its toy's and its box's Kafka timestamps, sorted.
func packLatencies(ctx context.Context, kc kafkaconf.Config, t packer.Topics) ([]time.Duration, error) {
	written := map[string]time.Time{} // stream|id -> timestamp
	for _, x := range []struct{ topic, stream string }{{t.Toys, "toys"}, {t.Boxes, "boxes"}} {
		err := readAll(ctx, kc, x.topic, func(m *sarama.ConsumerMessage) {
			var v struct {
				Toy string `json:"toy_id"`
				Box string `json:"box_id"`
			}
			if json.Unmarshal(m.Value, &v) == nil && v.Toy+v.Box != "" {
				if _, ok := written[x.stream+"|"+v.Toy+v.Box]; !ok {
					written[x.stream+"|"+v.Toy+v.Box] = m.Timestamp
				}
			}
		})
		if err != nil {
			return nil, err
		}
	}
	var lat []time.Duration
	seen := map[string]bool{}
	err := readAll(ctx, kc, t.Packed, func(m *sarama.ConsumerMessage) {
		if seen[string(m.Key)] {
			return
		}
		seen[string(m.Key)] = true
		var p results.Packed
		if json.Unmarshal(m.Value, &p) != nil {
			return
		}
		a, ok1 := written["toys|"+p.ToyID]
		b, ok2 := written["boxes|"+p.BoxID]
		if !ok1 || !ok2 {
			return
		}
		if b.After(a) {
			a = b
		}
		lat = append(lat, m.Timestamp.Sub(a))
	})
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat, err
}

// vmHWM is the peak resident set of process pid in MiB (Linux), 0 if unknown.
func vmHWM(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				return 0
			}
			return kib / 1024
		}
	}
	return 0
}

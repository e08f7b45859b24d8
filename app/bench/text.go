package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Legend says what the columns of WriteText's tables are, and how the state
// after a run is measured: the bench command's help includes it, so that
// the help and the tables cannot drift apart.
const Legend = `Columns:
  round             with --rounds: the round of the run; its ratios are to
                    that round's baseline
  variant, parts    the variant and its partition count
  events            input events: records in toys and boxes (heartbeats too)
  events/s          input events over the wall time from the packer's start
                    to zero lag (start-up included)
  packer µs/ev      the packer process's user+system CPU (rusage, its whole
                    life; with --restart less what it used in the tail after
                    zero lag, read from /proc) per input event
  broker µs/ev      the broker's user+system CPU over the packer process's
                    life, less the bench's lag polls (calibrated after the
                    packer exits: 10 polls), per input event. kfake: the
                    bench process's own CPU (getrusage); it does nothing else
                    meanwhile, and its garbage collection counts as the
                    broker's. Not measured with tracing (the span receiver
                    runs in the bench process) nor live (the elves do). Real
                    broker: /proc/<pid>/stat of --broker-pid, or of the
                    processes of this host listening on the --brokers
                    addresses (summed); a remote broker is not measured.
                    On a shared broker, other clients' work counts too.
  net µs/ev         broker µs/ev less the broker's idle rate (its CPU per
                    second over 2 s before the packer starts and 2 s after
                    it exits, the mean) times the packer's life: on a shared
                    broker, an estimate of what the packer alone cost it
  sum µs/ev         packer + net
  CPU ratio, rate ratio   packer CPU per event and events/s over the first
                    variant's
  max RSS MiB       the packer's peak resident set (VmHWM) before it is
                    stopped
  RSS B/rec         that peak in bytes per input event
  outputs/s         records in the five result topics per second
  inputs, loops, events, tables, outputs (w/r)
                    Kafka records written / read per input event by kind of
                    topic, from end offsets before and after (written), and
                    written times the number of the worker's goka groups that
                    consume the topic in normal running (read): inputs are
                    the elves' topics, loops the groups' loopbacks, events a
                    group's output another consumes, tables the group
                    tables (a table no group reads as a stream or joins is
                    read only on recovery: 0 read), outputs the result topics
                    (their consumers are not counted)
  p50, p99, p999 ms pack latency, live variant only
After the table, a line per variant says how the broker's CPU was measured.

State (--restart, on by default; not the live and hop variants): once the
packer's lag is zero it runs on for two of its cleaning intervals and a
second (2 × 2 s + 1 s), so that its cleaner deletes the records of its clock
table that no restart needs; then it is stopped, the bench reads its internal
topics (<group>-clock-loop, <group>-clock-table) and
starts the same packer again. That tail is left out of events/s, packer
µs/ev and the broker's figures (they stop at zero lag, plus the packer's
exit, as without --restart); max RSS MiB is the peak over the whole life,
tail included. A second table, per variant:
  written           records ever written to the internal topics (their end
                    offsets, summed over partitions)
  kept              records they still hold (end less start offsets): what
                    a restart reads
  kept %            kept over written
  KiB               the internal topics' log size on the brokers
                    (DescribeLogDirs, every replica), "-" when the broker
                    does not say (a note says why). A real Kafka frees a
                    deleted record's bytes only with its whole segment (32
                    MiB for the tables) and after its retention check, so
                    there bytes fall later than kept records; kfake frees
                    them at once
  restart s         wall time from starting the packer again (same group,
                    topics and storage: the disk variant keeps its LevelDB)
                    to its "packer ready" line: the group has recovered
                    its table and consumes
  restart RSS MiB   the restarted packer's peak RSS (VmHWM) at that moment
  handover s        the lines variant only ("-" otherwise): two packers
                    join the group; once they hold every partition, the one
                    holding the clock table is stopped (SIGTERM), and this is
                    the wall time until the other runs with every
                    partition, its table recovered: a rebalance that moves
                    the state
--restart=false stops the packer at zero lag and measures none of this
(about 5 s and a restart less per variant).

--verify: once the packer has stopped, the bench reads the inputs and the
outputs back and computes the batch reference (contract.Compute) on those
inputs, outside every measured figure; a line per run says whether the five
result sets equal it, and a run that differs fails (the hop has no results;
the scale variant always checks).

Scale-out (the scale variant; --instances 1,2,4 --partitions 16 --halls 16):
for each count N the bench pre-loads the backlog, starts N packers at once
(separate processes, one consumer group, same topics; each serves its
health on the loopback), measures until the group's lag is zero, reads each
instance's Health once they hold every partition (the group may still be
rebalancing at zero lag; at most 30 s), stops them all at once, then reads the inputs and outputs back
and computes the batch reference (contract.Compute) on those inputs: every
run must equal it. In the main table the row's packer µs/ev is the
instances' CPU summed over all input events, max RSS MiB the largest
instance's. Then a table per run:
  events/s          as above: the backlog's input events over the wall time
                    from the packers' start to zero lag (joins and
                    rebalances included)
  rate ratio        events/s over its round's first run's (the first
                    --instances count)
  sum µs/ev         all instances' CPU over all input events: the cost of
                    the work, which should not grow with N
  broker µs/ev      as above (net of its idle rate when measured)
  counted %         the input events the instances say they consumed, over
                    the events: below 100 when partitions
                    changed hands after consuming began (then the shares
                    below are the last assignment's)
  reference         "equal" when the five result sets equal the batch
                    reference and no key was written twice with two values
And a line per instance (the packer is one goka group, whose partitions
its instances share):
  partitions        those it held at zero lag (its Health)
  parts %           their number over the topic's partitions
  inputs            input records it consumed (Health: since it last got
                    its partitions; when the inputs of all instances sum
                    below the events, partitions changed hands after
                    consuming began, a line says so, and the counts are the
                    last owners')
  work %            its inputs over all instances'
  lines %           the share of the work the lines on its partitions
                    should carry (producers.Spread: FNV-1a puts lines on
                    partitions unevenly, so an even split of partitions is
                    not an even split of work)
  µs/ev             its own CPU (rusage, whole life) over its share of the
                    input events (work % × events): the figure that carries
                    to a larger cluster, flat when adding instances costs
                    nothing`

// WriteText prints the results as a table (Legend), a line per variant on
// how its broker's CPU was measured (or why the variant failed), and, for
// the variants whose state was measured, the state table.
//
// With several rounds (Config.Rounds) each row starts with its round, the
// broker notes are the first round's (and any failure), and a last table
// sums the rounds up by variant (Summarize).
func WriteText(w io.Writer, rs []Result) {
	writeTable(w, rs)
	writeBrokerNotes(w, rs)
	writeChecks(w, rs)
	writeStateTable(w, rs)
	writeScaleTable(w, rs)
	writeRoundsTable(w, Summarize(rs))
}

// rounds is the leading cell of a row when rs ran in several rounds: its
// round, or nothing.
func rounds(rs []Result) func(Result) string {
	if len(rs) == 0 || rs[len(rs)-1].Round < 2 {
		return func(Result) string { return "" }
	}
	return func(r Result) string { return fmt.Sprintf("%d\t", r.Round) }
}

func writeTable(w io.Writer, rs []Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	round := rounds(rs)
	if len(rs) > 0 && round(rs[0]) != "" {
		fmt.Fprint(tw, "round\t")
	}
	head := "variant\tparts\tevents\tevents/s\tpacker µs/ev\tbroker µs/ev\tnet µs/ev\tsum µs/ev\tCPU ratio\trate ratio\tmax RSS MiB\tRSS B/rec\toutputs/s\t"
	for _, k := range Kinds {
		head += k + " w/r\t"
	}
	fmt.Fprintln(tw, head+"p50 ms\tp99 ms\tp999 ms\t")
	for _, r := range rs {
		if r.Error != "" {
			fmt.Fprintf(tw, "%s%s\t%d\tfailed%s\n", round(r), r.Name, r.Partitions, strings.Repeat("\t", 19))
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
		broker, net, sum := "-", "-", "-"
		if r.BrokerSeconds != 0 {
			broker, net, sum = fmt.Sprintf("%.1f", r.BrokerCPUPerEventUS), fmt.Sprintf("%.1f", r.BrokerNetCPUPerEventUS), fmt.Sprintf("%.1f", r.TotalCPUPerEventUS)
		}
		kinds := ""
		for _, k := range r.Records {
			kinds += fmt.Sprintf("%.2f/%.2f\t", k.WrittenPerEvent, k.ReadPerEvent)
		}
		fmt.Fprintf(tw, "%s%s\t%d\t%d\t%.0f\t%.1f\t%s\t%s\t%s\t%s\t%s\t%.0f\t%.0f\t%.0f\t%s%s\t%s\t%s\t\n", round(r), r.Name, r.Partitions, r.InputEvents, r.EventsPerSec,
			r.CPUPerEventUS, broker, net, sum, ratio(r.CPURatio), ratio(r.RateRatio), r.MaxRSSMiB, r.RSSBytesPerRecord, r.OutputsPerSec, kinds,
			lat(r.LatencyP50MS), lat(r.LatencyP99MS), lat(r.LatencyP999MS))
	}
	tw.Flush()
}

// writeBrokerNotes says, per variant, how its broker CPU was measured, or
// why it failed.
func writeBrokerNotes(w io.Writer, rs []Result) {
	round := rounds(rs)
	for _, r := range rs {
		if r.Error != "" {
			if round(r) != "" {
				fmt.Fprintf(w, "round %d: ", r.Round)
			}
			fmt.Fprintf(w, "%s failed: %s\n", r.Name, r.Error)
			continue
		}
		if r.Round > 1 {
			continue // the same as the first round's
		}
		how := r.BrokerCPU
		if strings.HasPrefix(how, NotLocal) {
			how = NotLocal + "; use --broker-pid)"
		}
		fmt.Fprintf(w, "broker CPU of %s: %s\n", r.Name, how)
	}
}

// writeStateTable prints, for the variants whose state was measured
// (--restart), what the packer's internal topics kept and how long a
// restart took, then a note per variant whose bytes were not measured.
func writeStateTable(w io.Writer, rs []Result) {
	var measured []Result
	for _, r := range rs {
		if r.Error == "" && r.RestartReadySeconds > 0 {
			measured = append(measured, r)
		}
	}
	if len(measured) == 0 {
		return
	}
	fmt.Fprintln(w, "\nstate after the run: the packer's internal topics, and a restart")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	round := rounds(rs)
	if round(rs[0]) != "" {
		fmt.Fprint(tw, "round\t")
	}
	fmt.Fprintln(tw, "variant\tparts\twritten\tkept\tkept %\tKiB\trestart s\trestart RSS MiB\thandover s\t")
	for _, r := range measured {
		kept, size := "-", "-"
		if r.InternalRecordsWritten > 0 {
			kept = fmt.Sprintf("%.1f", 100*float64(r.InternalRecordsKept)/float64(r.InternalRecordsWritten))
		}
		if r.InternalBytes >= 0 {
			size = fmt.Sprintf("%.0f", float64(r.InternalBytes)/1024)
		}
		handover := "-"
		if r.HandoverSeconds > 0 {
			handover = fmt.Sprintf("%.2f", r.HandoverSeconds)
		}
		fmt.Fprintf(tw, "%s%s\t%d\t%d\t%d\t%s\t%s\t%.2f\t%.0f\t%s\t\n", round(r), r.Name, r.Partitions, r.InternalRecordsWritten, r.InternalRecordsKept,
			kept, size, r.RestartReadySeconds, r.RestartMaxRSSMiB, handover)
	}
	tw.Flush()
	for _, r := range measured {
		if r.InternalBytes < 0 {
			fmt.Fprintf(w, "internal bytes of %s: not measured (%s)\n", r.Name, r.InternalBytesError)
		}
	}
}

// writeRoundsTable prints the rounds' summary by variant, if any.
func writeRoundsTable(w io.Writer, ss []RoundSummary) {
	if len(ss) == 0 {
		return
	}
	fmt.Fprintln(w, "\nover the rounds: per round, a variant's mean of its runs, and its ratio to that round's baseline; median [min-max] of the rounds")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "variant\tparts\trounds\tpacker µs/ev\tCPU ratio\t")
	for _, s := range ss {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f [%.1f-%.1f]\t%.2f [%.2f-%.2f]\t\n", s.Name, s.Partitions, s.Rounds,
			s.CPUPerEventUS.Median, s.CPUPerEventUS.Min, s.CPUPerEventUS.Max, s.CPURatio.Median, s.CPURatio.Min, s.CPURatio.Max)
	}
	tw.Flush()
}

// writeScaleTable prints the scale variant's runs, if any: a row per run,
// then a row per instance.
func writeScaleTable(w io.Writer, rs []Result) {
	var runs []Result
	for _, r := range rs {
		if r.Scale != nil {
			runs = append(runs, r)
		}
	}
	if len(runs) == 0 {
		return
	}
	fmt.Fprintf(w, "\nscale-out: %s\n", runs[0].Scale.Spread)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "round\tinstances\tparts\tevents\tevents/s\trate ratio\tsum µs/ev\tbroker µs/ev\tmax RSS MiB\tcounted %\treference\t")
	base := map[int]float64{} // the first run's events/s, by round
	for _, r := range runs {
		if _, ok := base[r.Round]; !ok {
			base[r.Round] = r.EventsPerSec
		}
		broker := "-"
		if r.BrokerSeconds != 0 {
			broker = fmt.Sprintf("%.1f (net %.1f)", r.BrokerCPUPerEventUS, r.BrokerNetCPUPerEventUS)
		}
		ref := r.Scale.verdict()
		if r.Scale.Rows == 0 && r.Scale.VerifyMS == 0 {
			ref = "not checked"
		}
		counted := "-"
		if r.InputEvents > 0 {
			counted = fmt.Sprintf("%.0f", 100*float64(r.Scale.Consumed)/float64(r.InputEvents))
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%.0f\t%.2f\t%.1f\t%s\t%.0f\t%s\t%s\t\n", r.Round, r.Instances, r.Partitions, r.InputEvents, r.EventsPerSec,
			r.EventsPerSec/base[r.Round], r.CPUPerEventUS, broker, r.MaxRSSMiB, counted, ref)
	}
	tw.Flush()
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "round\tinstances\tinstance\tpartitions\tparts %\tinputs\twork %\tlines %\tµs/ev\tCPU s\tmax RSS MiB\t")
	for _, r := range runs {
		for _, in := range r.Scale.Instances {
			if in.HealthError != "" {
				fmt.Fprintf(tw, "%d\t%d\t%d\thealth not read: %s\t\t\t\t\t\t%.1f\t%.0f\t\n", r.Round, r.Instances, in.Instance, in.HealthError, in.CPUSeconds, in.MaxRSSMiB)
				continue
			}
			fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%.0f\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.0f\t\n", r.Round, r.Instances, in.Instance, formatParts(in.Partitions),
				100*in.PartitionShare, in.Consumed, 100*in.WorkShare, 100*in.ExpectedShare, in.CPUPerEventUS, in.CPUSeconds, in.MaxRSSMiB)
		}
	}
	tw.Flush()
}

// Help is northpole bench's help: what it measures, its variants and
// columns (VariantsHelp, Legend), and how to run it for the figures in
// docs/PERFORMANCE.md.
var Help = `bench pre-loads --records toys and boxes (half each, clean: no late, duplicate
or bad records) into Kafka, then starts the packer as its own OS process (the
hidden bench-worker, which runs what process packer runs) from the start of the
topics and measures until its lag is zero: input events/s (toys, boxes and
heartbeats), the packer process's user+system CPU per input event (rusage) and
its peak RSS (VmHWM), the broker's CPU per input event over the packer
process's life, the Kafka records written and read per input event by kind of
topic, and output records/s. The live variant writes at a fixed --live-rate
instead and reports pack latency at p50/p99/p999: the time a packed record was
appended to its topic (the live variant creates the packed topic with
message.timestamp.type=LogAppendTime) minus the later of the times its toy's
and box's elves wrote them. kfake keeps the writer's time instead, so there
it leaves out the packer's own linger.

` + VariantsHelp + `

` + Legend + `

Without --brokers the bench uses an in-process kfake broker (in this process,
so its CPU is not the packer's). Quick run: --records 100000.

Scale-out on a real Kafka, 1, 2 and 4 packers on 16 partitions and 64 lines
(16 halls × 4 sizes) from a backlog of 2,000,000 records, each run checked
against the batch reference:
  northpole bench --brokers 127.0.0.1:19092 --variants scale --instances 1,2,4 \
    --partitions 16 --halls 16 --records 2000000
On a machine with fewer cores than packers the rate cannot grow; read each
instance's µs/ev (flat: adding instances costs nothing) and its share of
the work.

On a shared machine one run of a variant moves by up to a third from the
next. To compare variants, run them in rounds, in mirrored order so that each
is as often early as late, and read the summary's ratios, e.g.:
  northpole bench --records 200000 --rounds 5 \
    --variants base,trace0,trace10,trace100,trace100,trace10,trace0,base`

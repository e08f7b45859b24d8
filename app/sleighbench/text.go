package sleighbench

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// Legend says what WriteText's columns are; the bench-sleigh command's help
// includes it, so that the help and the table cannot drift apart.
const Legend = `It reports, per run:
  empty MiB, idle MiB    the sleigh's resident set (VmRSS) running with no pair,
                         and idle --idle (30 s) after loading them all
  B/pair                 (idle - empty) / pairs
  load s, load peak MiB  from the first pair written to the last one counted,
                         and the peak resident set (VmHWM) until then
  paging peak MiB        the peak resident set while the clients paged (VmHWM,
                         reset before they start), and its ratio to idle
  req/s, pages/s         answers (200 and 503) and pages (200) per second
  p50, p99, max ms       latency of the pages of --limit pairs, request sent to
                         body read (the wait for a place included)
  503s, busy p99 ms      answers that said come back later, and their latency
  failed, done           other failures; clients that saw every pair`

// WriteText prints the load tests' results as a table (Legend says what
// each column is), then the first failure of each run that had one.
func WriteText(w io.Writer, rs []Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "storage\tpairs\tempty MiB\tidle MiB\tB/pair\tload s\tload peak MiB\tpaging peak MiB\tpeak/idle\treq/s\tpages/s\tp50 ms\tp99 ms\tmax ms\t503s\tbusy p99 ms\tfailed\tdone\t")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t%.0f\t%.1f\t%.0f\t%.0f\t%.2f\t%.0f\t%.0f\t%.1f\t%.1f\t%.1f\t%d\t%.1f\t%d\t%d/%d\t\n",
			r.Storage, r.Pairs, r.EmptyRSSMiB, r.IdleRSSMiB, r.BytesPerPair, r.LoadSeconds, r.LoadingPeakMiB, r.PagingPeakMiB, r.PagingPeakMiB/r.IdleRSSMiB,
			r.RequestsPerSecond(), r.PagesPerSecond(), r.P50ms, r.P99ms, r.MaxMs, r.Busy, r.BusyP99ms, r.Failed, r.ClientsDone, r.Clients)
	}
	_ = tw.Flush()
	for _, r := range rs {
		if r.FirstFailure != "" {
			fmt.Fprintf(w, "%s run: first failure: %s\n", r.Storage, r.FirstFailure)
		}
	}
}

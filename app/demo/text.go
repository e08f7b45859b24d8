package demo

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/northpole-workshop/northpole/internal/english"
	"github.com/northpole-workshop/northpole/internal/record"
)

// WriteText prints the summary for people: what was read back from Kafka
// (where names it), a table of the five sets per size class, the dead
// letters by reason, redeliveries, and the reference's and the embedded
// SQL's verdicts.
func (s Summary) WriteText(w io.Writer, where string) {
	toys, boxes := s.Inputs["toys"], s.Inputs["boxes"]
	fmt.Fprintf(w, "\nPacked on %s in %.1fs: %s + %s and %s + %s read back from Kafka",
		where, s.Seconds, english.Count(toys.Records, "toy"), english.Count(toys.Heartbeats, "heartbeat"), english.Count(boxes.Records, "box"), english.Count(boxes.Heartbeats, "heartbeat"))
	if bad, dup := toys.Bad+boxes.Bad, toys.Duplicates+boxes.Duplicates; bad+dup > 0 {
		fmt.Fprintf(w, "; among the toys and boxes %s and %s (dead letters)", english.Count(bad, "bad record"), english.Count(dup, "duplicate"))
	}
	fmt.Fprint(w, ".\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "size\tpacked\tunpacked\tspare\tlate\tdead\t")
	for _, size := range record.Sizes {
		c := s.BySize[size]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t\n", size, c.Packed, c.Unpacked, c.Spare, c.Late, c.Dead)
	}
	if s.DeadWithoutSize > 0 {
		fmt.Fprintf(tw, "no size\t\t\t\t\t%d\t\n", s.DeadWithoutSize)
	}
	all := s.Results
	fmt.Fprintf(tw, "all\t%d\t%d\t%d\t%d\t%d\t\n", all.Packed, all.Unpacked, all.Spare, all.Late, all.Dead)
	tw.Flush()
	var reasons []string
	for _, r := range slices.Sorted(maps.Keys(s.DeadBy)) {
		reasons = append(reasons, fmt.Sprintf("%s %d", r, s.DeadBy[r]))
	}
	fmt.Fprintf(w, "\ndead letters: %d", s.Results.Dead)
	if len(reasons) > 0 {
		fmt.Fprintf(w, " (%s)", strings.Join(reasons, ", "))
	}
	fmt.Fprintln(w)
	if s.RawOutput.Duplicates > 0 {
		fmt.Fprintf(w, "output records: %d, of which %d repeated an earlier key (redeliveries; consumers deduplicate by key)\n",
			s.RawOutput.Records, s.RawOutput.Duplicates)
	}
	if s.Reference == "equal" {
		fmt.Fprintln(w, "reference check: the Goka results equal the batch reference implementation, row for row, on all five sets")
	} else {
		fmt.Fprintln(w, "reference check: the Goka results DIFFER from the batch reference implementation")
	}
	if s.SQLCheck == "equal" {
		fmt.Fprintln(w, "SQL check: the contract's SQL on the embedded SQLite gives the same rows as Goka on all five sets")
	} else {
		fmt.Fprintln(w, "SQL check: the contract's SQL on the embedded SQLite DIFFERS from Goka (details below)")
	}
}

// WriteDiffs prints, per set, the rows only Goka or only the reference has,
// as their JSON, at most maxRows per set and side; more says how to see the
// rest.
func (r Result) WriteDiffs(w io.Writer, maxRows int, more string) {
	for _, d := range r.Reference {
		fmt.Fprintf(w, "\n%s: %s only in Goka, %d only in the reference\n", d.Set, english.Count(len(d.OnlyA), "row"), len(d.OnlyB))
		for _, side := range []struct {
			name string
			rows []string
		}{{"goka", d.OnlyA}, {"reference", d.OnlyB}} {
			for i, row := range side.rows {
				if i == maxRows {
					fmt.Fprintf(w, "  ... %d more only in %s (%s)\n", len(side.rows)-maxRows, side.name, more)
					break
				}
				fmt.Fprintf(w, "  only in %-10s %s\n", side.name+":", row)
			}
		}
	}
}

package compare

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/northpole-workshop/northpole/internal/english"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
)

// printable shows bytes as text, or quoted with escapes when not UTF-8.
func printable(b []byte) string {
	if b == nil {
		return "(none)"
	}
	if utf8.Valid(b) {
		return string(b)
	}
	return strconv.Quote(string(b))
}

func abridge(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// WriteText writes the side-by-side table and the differences, at most
// maxRows rows per set and side; moreHint, when not empty, says (in
// parentheses) how to see the rows left out.
func WriteText(w io.Writer, c Comparison, maxRows int, moreHint string) {
	fmt.Fprintf(w, "%s\n  vs %s\n  W=%s L=%s, %s\n\n", c.Goka, c.SQL, c.Window, c.Lateness, english.Count(c.Inputs, "input record"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "size\tset\tgoka\tsql\tequal\tonly goka\tonly sql\t")
	for _, size := range append(slices.Clone(record.Sizes), "all") {
		for _, set := range results.SetNames {
			sc, ok := c.Counts[size][set]
			if (size == "all") != (set == "dead") {
				continue
			}
			if !ok && size == "all" {
				sc = SetCounts{}
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t\n", size, set, sc.Goka, sc.SQL, sc.Equal, sc.OnlyGoka, sc.OnlySQL)
		}
	}
	tw.Flush()
	if c.GokaConflicts > 0 {
		fmt.Fprintf(w, "\nGoka wrote %s with two different values (the first of each is compared)\n", english.Count(c.GokaConflicts, "output key"))
	}
	if c.Equal {
		fmt.Fprintln(w, "\nequal: Goka and the SQL engine have the same rows in all five sets")
		writeSpreads(w, c.PartitionSpread)
		return
	}
	if n := len(c.Differences); n == 1 {
		fmt.Fprintln(w, "\nDIFFERENT: 1 row is on one side only")
	} else {
		fmt.Fprintf(w, "\nDIFFERENT: %d rows are on one side only\n", n)
	}
	writeSpreads(w, c.PartitionSpread)
	shown := map[string]int{}
	for _, d := range c.Differences {
		k := d.Set + "|" + d.OnlyIn
		shown[k]++
		if shown[k] > maxRows {
			if shown[k] == maxRows+1 {
				hint := ""
				if moreHint != "" {
					hint = " (" + moreHint + ")"
				}
				fmt.Fprintf(w, "\n%s, only in %s: more rows not shown%s\n", d.Set, d.OnlyIn, hint)
			}
			continue
		}
		writeDifference(w, d)
	}
}

// writeDifference writes one differing row and the records behind it.
func writeDifference(w io.Writer, d Difference) {
	fmt.Fprintf(w, "\n%s, only in %s: %s\n", d.Set, d.OnlyIn, rowText(d.Row))
	if len(d.Records) == 0 {
		fmt.Fprintln(w, "  no input record carries this row's ids in its line and window, or is at its position")
	}
	for _, n := range d.Records {
		at := ""
		if n.MadeAt != "" {
			at = " made_at " + n.MadeAt
		}
		fmt.Fprintf(w, "  %s/%d@%d key %s%s\n    value: %s\n", n.Stream, n.Partition, n.Offset, n.Key, at, abridge(n.Value, 100))
		fmt.Fprintf(w, "    goka: %s\n    sql: %s\n    reference: %s\n", n.Goka, n.SQL, n.Reference)
	}
}

func rowText(row any) string {
	switch r := row.(type) {
	case results.Packed:
		return fmt.Sprintf("toy %q in box %q, line %s, window %s", r.ToyID, r.BoxID, r.Line, r.WindowStart)
	case results.Unpacked:
		return fmt.Sprintf("toy %q, line %s, window %s", r.ToyID, r.Line, r.WindowStart)
	case results.Spare:
		return fmt.Sprintf("box %q, line %s, window %s", r.BoxID, r.Line, r.WindowStart)
	case results.Late:
		return fmt.Sprintf("%s/%d@%d, id %q, line %s, made_at %s", r.Stream, r.Partition, r.Offset, r.ID, r.Line, r.MadeAt)
	case results.Dead:
		return fmt.Sprintf("%s/%d@%d (%s)", r.Stream, r.Partition, r.Offset, r.Reason)
	}
	return fmt.Sprintf("%+v", row)
}

package servicemap

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/northpole-workshop/northpole/internal/english"
)

// WriteText prints the map as a table of edges.
func (g Graph) WriteText(w io.Writer) error {
	services, topics, systems := 0, 0, 0
	for _, n := range g.Nodes {
		switch {
		case n.System:
			systems++
		case n.Topic != "":
			topics++
		default:
			services++
		}
	}
	fmt.Fprintf(w, "service map: %s, ", english.Count(services, "service"))
	if topics > 0 {
		fmt.Fprintf(w, "%s, ", english.Count(topics, "topic"))
	}
	fmt.Fprintf(w, "%s, %s from %s", english.Count(systems, "system"), english.Count(len(g.Edges), "edge"), english.Count(g.Spans, "span"))
	if g.Orphans > 0 {
		fmt.Fprintf(w, " (%s whose parent was not received)", english.Count(g.Orphans, "span"))
	}
	if g.SameBatch {
		fmt.Fprintf(w, " (joined per batch: %d batches, %d spans whose parent was in another)", g.Batches, g.CrossBatch)
	}
	if g.Dropped > 0 {
		fmt.Fprintf(w, " (%d spans dropped over the limit)", g.Dropped)
	}
	fmt.Fprintln(w)
	if len(g.Edges) == 0 {
		_, err := fmt.Fprintln(w, "  no edges: no span had a parent in another service, nor named a messaging or database system")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  from\t\tto\tkind\tcalls\terrors\tdead letters\tp50\tp99")
	for _, e := range g.Edges {
		fmt.Fprintf(tw, "  %s\t->\t%s\t%s\t%d\t%d\t%d\t%s\t%s\n", e.From, e.To, e.Kind, e.Calls, e.Errors, e.DeadLetters, short(e.P50), short(e.P99))
	}
	return tw.Flush()
}

// WriteNames prints the span counts per service and name.
func (g Graph) WriteNames(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  service\tspan\tcount")
	for _, n := range g.Names {
		fmt.Fprintf(tw, "  %s\t%s\t%d\n", n.Service, n.Name, n.Count)
	}
	return tw.Flush()
}

// short formats a latency with three significant digits.
func short(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.3gs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.3gms", float64(d)/float64(time.Millisecond))
	case d >= time.Microsecond:
		return fmt.Sprintf("%.3gµs", float64(d)/float64(time.Microsecond))
	}
	return d.String()
}

// label says what an edge counts: calls, or records into or out of a topic.
func label(e Edge) string {
	what := "call"
	if e.Kind == "produce" || e.Kind == "consume" {
		what = "record"
	}
	s := english.Count(e.Calls, what)
	if e.Errors > 0 {
		s += ", " + english.Count(e.Errors, "error")
	}
	if e.DeadLetters > 0 {
		s += ", " + english.Count(e.DeadLetters, "dead letter")
	}
	return s + ", p50 " + short(e.P50) + ", p99 " + short(e.P99)
}

// WriteMermaid writes the map as a Mermaid flowchart (systems as cylinders,
// topics as stadiums, arrows to systems dashed).
func (g Graph) WriteMermaid(w io.Writer) error {
	var b strings.Builder
	b.WriteString("graph LR\n")
	ids := map[string]string{}
	for i, n := range g.Nodes {
		id := fmt.Sprintf("n%d", i)
		ids[n.Name] = id
		name := strings.ReplaceAll(n.Label(), `"`, "'")
		switch {
		case n.System:
			fmt.Fprintf(&b, "  %s[(\"%s\")]\n", id, name)
		case n.Topic != "":
			fmt.Fprintf(&b, "  %s([\"%s\"])\n", id, name)
		default:
			fmt.Fprintf(&b, "  %s[\"%s\"]\n", id, name)
		}
	}
	for _, e := range g.Edges {
		arrow := "-->"
		if e.toSystem() {
			arrow = "-.->"
		}
		fmt.Fprintf(&b, "  %s %s|\"%s\"| %s\n", ids[e.From], arrow, label(e), ids[e.To])
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteFiles writes the map as a Mermaid flowchart to mermaid and as SVG to
// svg; an empty path is skipped.
func (g Graph) WriteFiles(mermaid, svg string) error {
	for _, out := range []struct {
		path  string
		write func(io.Writer) error
	}{{mermaid, g.WriteMermaid}, {svg, g.WriteSVG}} {
		if out.path == "" {
			continue
		}
		f, err := os.Create(out.path)
		if err != nil {
			return fmt.Errorf("servicemap: %w", err)
		}
		if err := out.write(f); err != nil {
			f.Close()
			return fmt.Errorf("servicemap: write %s: %w", out.path, err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("servicemap: write %s: %w", out.path, err)
		}
	}
	return nil
}

package servicemap

import (
	"fmt"
	"html"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteText prints the map as a table of edges.
func (g Graph) WriteText(w io.Writer) error {
	services, systems := 0, 0
	for _, n := range g.Nodes {
		if n.System {
			systems++
		} else {
			services++
		}
	}
	fmt.Fprintf(w, "service map: %d services, %d systems, %d edges from %d spans", services, systems, len(g.Edges), g.Spans)
	if g.Orphans > 0 {
		fmt.Fprintf(w, " (%d spans whose parent was not received)", g.Orphans)
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
	fmt.Fprintln(tw, "  from\t\tto\tkind\tcalls\terrors\tp50\tp99")
	for _, e := range g.Edges {
		fmt.Fprintf(tw, "  %s\t->\t%s\t%s\t%d\t%d\t%s\t%s\n", e.From, e.To, e.Kind, e.Calls, e.Errors, short(e.P50), short(e.P99))
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

func label(e Edge) string {
	s := fmt.Sprintf("%d calls", e.Calls)
	if e.Errors > 0 {
		s += fmt.Sprintf(", %d errors", e.Errors)
	}
	return s + ", p50 " + short(e.P50) + ", p99 " + short(e.P99)
}

// WriteMermaid writes the map as a Mermaid flowchart (systems as cylinders).
func (g Graph) WriteMermaid(w io.Writer) error {
	var b strings.Builder
	b.WriteString("graph LR\n")
	ids := map[string]string{}
	for i, n := range g.Nodes {
		id := fmt.Sprintf("n%d", i)
		ids[n.Name] = id
		name := strings.ReplaceAll(n.Name, `"`, "'")
		if n.System {
			fmt.Fprintf(&b, "  %s[(\"%s\")]\n", id, name)
		} else {
			fmt.Fprintf(&b, "  %s[\"%s\"]\n", id, name)
		}
	}
	for _, e := range g.Edges {
		arrow := "-->"
		if e.Kind != "service" {
			arrow = "-.->"
		}
		fmt.Fprintf(&b, "  %s %s|\"%s\"| %s\n", ids[e.From], arrow, label(e), ids[e.To])
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// layout places services in columns by their longest chain of service edges
// from a service nobody calls; systems (kafka, databases) go in a last column.
func (g Graph) layout() (cols [][]string) {
	layer := map[string]int{}
	for _, n := range g.Nodes {
		if !n.System {
			layer[n.Name] = 0
		}
	}
	// Longest path by relaxation; bounded so that a cycle cannot loop forever.
	for range len(layer) {
		changed := false
		for _, e := range g.Edges {
			if e.Kind != "service" {
				continue
			}
			if l := layer[e.From] + 1; l > layer[e.To] && l < len(layer) {
				layer[e.To] = l
				changed = true
			}
		}
		if !changed {
			break
		}
	}
	maxLayer := 0
	for _, l := range layer {
		maxLayer = max(maxLayer, l)
	}
	cols = make([][]string, maxLayer+1)
	var systems []string
	for _, n := range g.Nodes {
		if n.System {
			systems = append(systems, n.Name)
			continue
		}
		cols[layer[n.Name]] = append(cols[layer[n.Name]], n.Name)
	}
	if len(systems) > 0 {
		cols = append(cols, systems)
	}
	return cols
}

// WriteSVG draws the map: boxes for services, cylinders for systems, arrows
// labelled with calls, errors and latency (red when any call failed).
func (g Graph) WriteSVG(w io.Writer) error {
	const (
		boxW, boxH = 160, 44
		colGap     = 300
		rowGap     = 110
		margin     = 40
	)
	cols := g.layout()
	type pt struct{ x, y int }
	pos := map[string]pt{}
	rows := 1
	for _, c := range cols {
		rows = max(rows, len(c))
	}
	height := margin*2 + rows*rowGap
	for ci, c := range cols {
		top := margin + (rows-len(c))*rowGap/2
		for ri, name := range c {
			pos[name] = pt{margin + ci*colGap, top + ri*rowGap}
		}
	}
	width := margin*2 + max(len(cols), 1)*colGap - (colGap - boxW)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height+20, width, height+20)
	b.WriteString(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker>` +
		`<marker id="arrow-err" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#c0392b"/></marker></defs>` + "\n")
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	for i, e := range g.Edges {
		from, okf := pos[e.From]
		to, okt := pos[e.To]
		if !okf || !okt {
			continue
		}
		color, marker := "#555", "arrow"
		if e.Errors > 0 {
			color, marker = "#c0392b", "arrow-err"
		}
		dash := ""
		if e.Kind != "service" {
			dash = ` stroke-dasharray="5,4"`
		}
		x1, y1 := from.x+boxW, from.y+boxH/2
		x2, y2 := to.x, to.y+boxH/2
		// Bend each edge a little, differently, so that parallel edges and
		// their labels stay apart.
		bend := (i%3 - 1) * 18
		if x2 <= x1 {
			x1, x2 = from.x+boxW/2, to.x+boxW/2
			y1, y2 = from.y+boxH, to.y
			bend = 60
		}
		cx, cy := (x1+x2)/2, (y1+y2)/2+bend
		fmt.Fprintf(&b, `<path d="M%d,%d Q%d,%d %d,%d" fill="none" stroke="%s" stroke-width="1.5"%s marker-end="url(#%s)"/>`+"\n", x1, y1, cx, cy, x2, y2, color, dash, marker)
		lx, ly := (x1+2*cx+x2)/4, (y1+2*cy+y2)/4-6
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="%s" font-size="10">%s</text>`+"\n", lx, ly, color, html.EscapeString(label(e)))
	}
	for _, n := range g.Nodes {
		p := pos[n.Name]
		if n.System {
			fmt.Fprintf(&b, `<ellipse cx="%d" cy="%d" rx="%d" ry="8" fill="#eef5ff" stroke="#2c5aa0"/>`, p.x+boxW/2, p.y+8, boxW/2)
			fmt.Fprintf(&b, `<path d="M%d,%d v%d a%d,8 0 0,0 %d,0 v-%d" fill="#eef5ff" stroke="#2c5aa0"/>`+"\n", p.x, p.y+8, boxH-12, boxW/2, boxW, boxH-12)
		} else {
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" rx="8" fill="#f5f7fa" stroke="#333"/>`+"\n", p.x, p.y, boxW, boxH)
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" font-weight="bold">%s</text>`+"\n", p.x+boxW/2, p.y+boxH/2+5, html.EscapeString(n.Name))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#777" font-size="10">%d spans; edges as SigNoz draws them: parent span in one service, child in another; dashed: calls to a messaging or database system</text>`+"\n", margin, height+10, g.Spans)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

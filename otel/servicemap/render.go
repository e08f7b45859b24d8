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
// from a service nobody calls; systems (kafka, databases) form a bottom row.
func (g Graph) layout() (cols [][]string, systems []string) {
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
	for _, n := range g.Nodes {
		if n.System {
			systems = append(systems, n.Name)
			continue
		}
		cols[layer[n.Name]] = append(cols[layer[n.Name]], n.Name)
	}
	return cols, systems
}

// WriteSVG draws the map: services as boxes in columns (callers left of the
// services they call), messaging and database systems as cylinders below,
// arrows labelled with calls, errors and latency (red when a call failed,
// dashed to a system).
func (g Graph) WriteSVG(w io.Writer) error {
	const (
		boxW, boxH = 150, 44
		colGap     = 330
		rowGap     = 130
		margin     = 40
		sysGap     = 140 // between the last service row and the systems
	)
	cols, systems := g.layout()
	type pt struct{ x, y int }
	pos := map[string]pt{}
	rows := 1
	for _, c := range cols {
		rows = max(rows, len(c))
	}
	width := margin*2 + max(len(cols), 1)*colGap - (colGap - boxW)
	for ci, c := range cols {
		top := margin + (rows-len(c))*rowGap/2
		for ri, name := range c {
			pos[name] = pt{margin + ci*colGap, top + ri*rowGap}
		}
	}
	sysY := margin + (rows-1)*rowGap + boxH + sysGap
	for i, name := range systems {
		pos[name] = pt{margin + (i+1)*(width-2*margin)/(len(systems)+1) - boxW/2, sysY}
	}
	height := sysY + boxH + margin
	if len(systems) == 0 {
		height = margin*2 + rows*rowGap
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height+20, width, height+20)
	b.WriteString(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker>` +
		`<marker id="arrow-err" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#c0392b"/></marker></defs>` + "\n")
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	var labels strings.Builder // drawn last, over every line
	for _, e := range g.Edges {
		from, okf := pos[e.From]
		to, okt := pos[e.To]
		if !okf || !okt {
			continue
		}
		color, marker, dash := "#555", "arrow", ""
		if e.Errors > 0 {
			color, marker = "#c0392b", "arrow-err"
		}
		var x1, y1, x2, y2, cx, cy int
		t := 0.5 // where along the curve the label sits
		switch {
		case e.Kind != "service":
			// Down from the service to its system; the label near the
			// service, where the lines to one system have not yet met.
			dash = ` stroke-dasharray="5,4"`
			x1, y1 = from.x+boxW/2, from.y+boxH
			x2, y2 = to.x+boxW/2, to.y
			cx, cy = (x1+x2)/2, (y1+y2)/2
			t = 0.3
		case to.x > from.x:
			x1, y1 = from.x+boxW, from.y+boxH/2
			x2, y2 = to.x, to.y+boxH/2
			cx, cy = (x1+x2)/2, (y1+y2)/2
		default:
			// Same column or backwards: arc above.
			x1, y1 = from.x+boxW/2, from.y
			x2, y2 = to.x+boxW/2, to.y
			cx, cy = (x1+x2)/2, min(y1, y2)-80
		}
		fmt.Fprintf(&b, `<path d="M%d,%d Q%d,%d %d,%d" fill="none" stroke="%s" stroke-width="1.5"%s marker-end="url(#%s)"/>`+"\n", x1, y1, cx, cy, x2, y2, color, dash, marker)
		// A point of the quadratic Bézier at t.
		lx := int((1-t)*(1-t)*float64(x1) + 2*(1-t)*t*float64(cx) + t*t*float64(x2))
		ly := int((1-t)*(1-t)*float64(y1)+2*(1-t)*t*float64(cy)+t*t*float64(y2)) - 4
		text := label(e)
		tw := len(text) * 11 / 2
		fmt.Fprintf(&labels, `<rect x="%d" y="%d" width="%d" height="14" fill="white" fill-opacity="0.9"/>`, lx-tw/2, ly-11, tw)
		fmt.Fprintf(&labels, `<text x="%d" y="%d" text-anchor="middle" fill="%s" font-size="10">%s</text>`+"\n", lx, ly, color, html.EscapeString(text))
	}
	for _, n := range g.Nodes {
		p := pos[n.Name]
		if n.System {
			fmt.Fprintf(&b, `<path d="M%d,%d v%d a%d,8 0 0,0 %d,0 v-%d" fill="#eef5ff" stroke="#2c5aa0"/>`, p.x, p.y+8, boxH-12, boxW/2, boxW, boxH-12)
			fmt.Fprintf(&b, `<ellipse cx="%d" cy="%d" rx="%d" ry="8" fill="#eef5ff" stroke="#2c5aa0"/>`+"\n", p.x+boxW/2, p.y+8, boxW/2)
		} else {
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" rx="8" fill="#f5f7fa" stroke="#333"/>`+"\n", p.x, p.y, boxW, boxH)
		}
		ty := p.y + boxH/2 + 5
		if n.System {
			ty += 4 // below the cylinder's lid
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" font-weight="bold">%s</text>`+"\n", p.x+boxW/2, ty, html.EscapeString(n.Name))
	}
	b.WriteString(labels.String())
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#777" font-size="10">%d spans. An edge A -> B: a span of B whose parent is a span of A (as SigNoz draws it); dashed: spans of A naming a messaging or database system.</text>`+"\n", margin, height+10, g.Spans)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

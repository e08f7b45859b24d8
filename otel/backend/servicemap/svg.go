package servicemap

import (
	"cmp"
	"fmt"
	"html"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

// The SVG's geometry, in pixels.
const (
	boxW, boxH = 150, 44
	colGap     = 360
	rowGap     = 130
	margin     = 40
	sysGap     = 140 // between the last service row and the systems
	labelH     = 14
	// labelCharW is the width of an average glyph of the labels' 10 px
	// sans-serif; a label's box is its text's length times this, plus a pad.
	labelCharW = 5.2
	minWidth   = 820 // room for the legend's longest line
)

type point struct{ x, y float64 }

// box is an axis-aligned rectangle: a node, or a label's background.
type box struct{ x, y, w, h float64 }

func (r box) overlaps(o box) bool {
	return r.x < o.x+o.w && o.x < r.x+r.w && r.y < o.y+o.h && o.y < r.y+r.h
}

func (r box) grow(d float64) box { return box{r.x - d, r.y - d, r.w + 2*d, r.h + 2*d} }

// layout places services and topics in columns by their longest chain of
// edges along the flow from a node nothing flows into; systems (kafka,
// databases) form a bottom row.
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
			if e.toSystem() {
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

// drawing is the map's geometry: where each node and arrow goes and where
// each arrow's label sits, none on another or on a node.
type drawing struct {
	width, height float64 // without the legend
	nodes         map[string]point
	arrows        []arrow
}

type arrow struct {
	e               Edge
	from, ctrl, to  point // a quadratic Bézier
	label           box
	text            string
	textX, textBase float64
}

// side is where on a node an arrow starts or ends.
type side int

const (
	sideTop side = iota
	sideBottom
	sideLeft
	sideRight
)

// port is one arrow's end on one side of a node, ordered by the direction
// of the arrow's other end, so that spread ends do not cross.
type port struct {
	arrow int
	start bool    // the arrow's start (else its end)
	slope float64 // the other node's offset along the side per pixel away from it
}

// slopeTo orders the ports of side s of a node centred at c: the other
// node's offset along the side, per pixel of its distance from the side.
func slopeTo(s side, c, other point) float64 {
	dx, dy := other.x-c.x, other.y-c.y
	switch s {
	case sideTop:
		return dx / max(-dy, 1)
	case sideBottom:
		return dx / max(dy, 1)
	case sideLeft:
		return dy / max(-dx, 1)
	}
	return dy / max(dx, 1)
}

func (g Graph) draw() drawing {
	cols, systems := g.layout()
	d := drawing{nodes: map[string]point{}}
	rows := 1
	for _, c := range cols {
		rows = max(rows, len(c))
	}
	d.width = max(float64(margin*2+max(len(cols), 1)*colGap-(colGap-boxW)), minWidth)
	for ci, c := range cols {
		top := margin + (rows-len(c))*rowGap/2
		for ri, name := range c {
			d.nodes[name] = point{float64(margin + ci*colGap), float64(top + ri*rowGap)}
		}
	}
	sysY := float64(margin + (rows-1)*rowGap + boxH + sysGap)
	for i, name := range systems {
		d.nodes[name] = point{margin + float64(i+1)*(d.width-2*margin)/float64(len(systems)+1) - boxW/2, sysY}
	}
	d.height = sysY + boxH + margin
	if len(systems) == 0 {
		d.height = float64(margin*2 + rows*rowGap)
	}

	// Which side of which node each arrow leaves and enters.
	ports := map[string]map[side][]port{}
	addPort := func(node string, s side, p port) {
		if ports[node] == nil {
			ports[node] = map[side][]port{}
		}
		ports[node][s] = append(ports[node][s], p)
	}
	center := func(n string) point { p := d.nodes[n]; return point{p.x + boxW/2, p.y + boxH/2} }
	for _, e := range g.Edges {
		from, okf := d.nodes[e.From]
		to, okt := d.nodes[e.To]
		if !okf || !okt {
			continue
		}
		i := len(d.arrows)
		d.arrows = append(d.arrows, arrow{e: e, text: label(e)})
		cf, ct := center(e.From), center(e.To)
		switch {
		case e.toSystem(): // down from the service to its system
			addPort(e.From, sideBottom, port{i, true, slopeTo(sideBottom, cf, ct)})
			addPort(e.To, sideTop, port{i, false, slopeTo(sideTop, ct, cf)})
		case to.x > from.x:
			addPort(e.From, sideRight, port{i, true, slopeTo(sideRight, cf, ct)})
			addPort(e.To, sideLeft, port{i, false, slopeTo(sideLeft, ct, cf)})
		default: // same column or backwards: an arc above
			addPort(e.From, sideTop, port{i, true, ct.x - cf.x})
			addPort(e.To, sideTop, port{i, false, cf.x - ct.x})
		}
	}
	d.spread(ports)
	for i := range d.arrows {
		a := &d.arrows[i]
		a.ctrl = point{(a.from.x + a.to.x) / 2, (a.from.y + a.to.y) / 2}
		if !a.e.toSystem() && a.to.x <= a.from.x {
			a.ctrl.y = min(a.from.y, a.to.y) - 80
		}
	}
	d.placeLabels()
	return d
}

// spread puts the ends on each side of a node evenly apart, so that arrows
// into one node end apart.
func (d *drawing) spread(ports map[string]map[side][]port) {
	for node, sides := range ports {
		p := d.nodes[node]
		for s, ps := range sides {
			slices.SortStableFunc(ps, func(a, b port) int { return cmp.Compare(a.slope, b.slope) })
			for k, pt := range ps {
				f := float64(k+1) / float64(len(ps)+1)
				var at point
				switch s {
				case sideTop:
					at = point{p.x + f*boxW, p.y}
				case sideBottom:
					at = point{p.x + f*boxW, p.y + boxH}
				case sideLeft:
					at = point{p.x, p.y + f*boxH}
				case sideRight:
					at = point{p.x + boxW, p.y + f*boxH}
				}
				if pt.start {
					d.arrows[pt.arrow].from = at
				} else {
					d.arrows[pt.arrow].to = at
				}
			}
		}
	}
}

// placeLabels puts each arrow's label on its curve where it covers no node
// and no label placed before it: first on the curve itself at the preferred
// points, then ever further above or below them.
func (d *drawing) placeLabels() {
	var taken []box
	for _, p := range d.nodes {
		taken = append(taken, box{p.x, p.y, boxW, boxH}.grow(3))
	}
	for i := range d.arrows {
		a := &d.arrows[i]
		w := float64(utf8.RuneCountInString(a.text))*labelCharW + 8
		ts := []float64{0.5, 0.4, 0.6, 0.3, 0.7, 0.25, 0.75}
		if a.e.toSystem() {
			// Near the service, where the lines to one system are apart.
			ts = []float64{0.3, 0.4, 0.2, 0.5, 0.6}
		}
		at := func(t, dy float64) box {
			p := a.at(t)
			x := min(max(p.x-w/2, 2), d.width-w-2)
			return box{x, p.y - 4 - 11 + dy, w, labelH}
		}
		a.label = at(ts[0], 0)
	search:
		for step := range 40 {
			dy := float64((step+1)/2) * (labelH + 2)
			if step%2 == 1 {
				dy = -dy
			}
			for _, t := range ts {
				b := at(t, dy)
				if !slices.ContainsFunc(taken, b.grow(1).overlaps) {
					a.label = b
					break search
				}
			}
		}
		taken = append(taken, a.label)
		a.textX, a.textBase = a.label.x+w/2, a.label.y+11
	}
}

// at is the point of the arrow's curve at t in [0, 1].
func (a arrow) at(t float64) point {
	u := 1 - t
	return point{u*u*a.from.x + 2*u*t*a.ctrl.x + t*t*a.to.x, u*u*a.from.y + 2*u*t*a.ctrl.y + t*t*a.to.y}
}

// Colours: an edge with errors is red, one without grey.
const (
	colorOK  = "#555"
	colorErr = "#c0392b"
)

// WriteSVG draws the map: services as boxes and topics as stadiums in
// columns (callers left of the services they call, writers left of their
// topics, topics left of their readers), messaging and database systems as
// cylinders below, arrows labelled with calls or records, errors and latency
// (red when a span failed, dashed to a system), the ends of the arrows on
// one side of a node spread apart and no label over another or over a node;
// a legend below says what the map's lines and colours mean.
func (g Graph) WriteSVG(w io.Writer) error {
	d := g.draw()
	legend := g.legend()
	total := d.height + legendHeight(legend)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", d.width, total, d.width, total)
	b.WriteString(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="` + colorOK + `"/></marker>` +
		`<marker id="arrow-err" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="` + colorErr + `"/></marker></defs>` + "\n")
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	var labels strings.Builder // drawn last, over every line
	for _, a := range d.arrows {
		color, marker, dash := colorOK, "arrow", ""
		if a.e.Errors > 0 {
			color, marker = colorErr, "arrow-err"
		}
		if a.e.toSystem() {
			dash = ` stroke-dasharray="5,4"`
		}
		fmt.Fprintf(&b, `<path class="edge" d="M%.1f,%.1f Q%.1f,%.1f %.1f,%.1f" fill="none" stroke="%s" stroke-width="1.5"%s marker-end="url(#%s)"><title>%s</title></path>`+"\n",
			a.from.x, a.from.y, a.ctrl.x, a.ctrl.y, a.to.x, a.to.y, color, dash, marker, html.EscapeString(a.e.From+" -> "+a.e.To+": "+a.text))
		fmt.Fprintf(&labels, `<rect class="label" x="%.1f" y="%.1f" width="%.1f" height="%d" fill="white" fill-opacity="0.9"/>`, a.label.x, a.label.y, a.label.w, labelH)
		fmt.Fprintf(&labels, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="%s" font-size="10">%s</text>`+"\n", a.textX, a.textBase, color, html.EscapeString(a.text))
	}
	for _, n := range g.Nodes {
		p, ok := d.nodes[n.Name]
		if !ok {
			continue
		}
		ty := p.y + boxH/2 + 5
		switch {
		case n.System:
			fmt.Fprintf(&b, `<path d="M%.0f,%.0f v%d a%d,8 0 0,0 %d,0 v-%d" fill="#eef5ff" stroke="#2c5aa0"/>`, p.x, p.y+8, boxH-12, boxW/2, boxW, boxH-12)
			fmt.Fprintf(&b, `<ellipse cx="%.0f" cy="%.0f" rx="%d" ry="8" fill="#eef5ff" stroke="#2c5aa0"/>`+"\n", p.x+boxW/2, p.y+8, boxW/2)
			ty += 4 // below the cylinder's lid
		case n.Topic != "":
			// A stadium, as in the Mermaid chart, with its system under the name.
			fmt.Fprintf(&b, `<rect class="node topic" x="%.0f" y="%.0f" width="%d" height="%d" rx="%d" fill="#fff8e6" stroke="#a66f00"/>`+"\n", p.x, p.y, boxW, boxH, boxH/2)
			fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle" fill="#a66f00" font-size="10">%s topic</text>`+"\n", p.x+boxW/2, p.y+boxH-7, html.EscapeString(n.Messaging))
			ty -= 5
		default:
			fmt.Fprintf(&b, `<rect class="node" x="%.0f" y="%.0f" width="%d" height="%d" rx="8" fill="#f5f7fa" stroke="#333"/>`+"\n", p.x, p.y, boxW, boxH)
		}
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle" font-weight="bold">%s</text>`+"\n", p.x+boxW/2, ty, html.EscapeString(n.Label()))
	}
	b.WriteString(labels.String())
	writeLegend(&b, d.height, legend, g.Spans)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// legendItem is one line of the legend: a sample arrow and what it means.
type legendItem struct {
	color, marker, dash, text string
}

// legend says what the lines and colours of g mean, those g has.
func (g Graph) legend() []legendItem {
	has := func(f func(Edge) bool) bool { return slices.ContainsFunc(g.Edges, f) }
	var items []legendItem
	if has(func(e Edge) bool { return e.Kind == "service" }) {
		items = append(items, legendItem{colorOK, "arrow", "", "A → B: spans of service B whose parent span is in service A (as SigNoz draws it): calls, p50 and p99 of B's spans"})
	}
	if has(func(e Edge) bool { return e.Kind == "produce" || e.Kind == "consume" }) {
		items = append(items, legendItem{colorOK, "arrow", "", "A → topic → B: records A's PRODUCER spans sent to the topic (a stadium), records B's CONSUMER spans read"})
	}
	if has(Edge.toSystem) {
		items = append(items, legendItem{colorOK, "arrow", ` stroke-dasharray="5,4"`, "dashed, to a cylinder: spans of A that name a messaging or database system (writes to and reads from Kafka)"})
	}
	if has(func(e Edge) bool { return e.Errors > 0 }) {
		items = append(items, legendItem{colorErr, "arrow-err", "", "red: some of its spans have status ERROR: something failed (a write, a record the sleigh refused); dead letters are no error, each label counts them apart"})
	}
	return items
}

// legendHeight is the room the legend's items and its closing line take.
func legendHeight(items []legendItem) float64 { return float64(36 + 20*len(items)) }

// writeLegend writes the legend's items below the map at y.
func writeLegend(b *strings.Builder, y float64, items []legendItem, spans int) {
	fmt.Fprintf(b, `<g class="legend" font-size="11" fill="#333"><line x1="%d" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#ddd"/>`+"\n", margin, y, float64(margin)+minWidth-2*margin, y)
	for i, it := range items {
		ly := y + 20 + float64(i)*20
		fmt.Fprintf(b, `<line x1="%d" y1="%.0f" x2="%d" y2="%.0f" stroke="%s" stroke-width="1.5"%s marker-end="url(#%s)"/>`, margin, ly-4, margin+40, ly-4, it.color, it.dash, it.marker)
		fmt.Fprintf(b, `<text x="%d" y="%.0f">%s</text>`+"\n", margin+52, ly, html.EscapeString(it.text))
	}
	fmt.Fprintf(b, `<text x="%d" y="%.0f" fill="#777" font-size="10">%d spans in all.</text></g>`+"\n", margin, y+22+float64(len(items))*20, spans)
}

package report

// The charts are geometry computed here and drawn by the template, so that
// every text and attribute goes through html/template's escaping.

// series are the five sets in the order and colours the charts use.
var series = []struct{ Name, Color string }{
	{"packed", "#2e7d32"},
	{"unpacked", "#ef6c00"},
	{"spare", "#1565c0"},
	{"late", "#8e24aa"},
	{"dead", "#c62828"},
}

func (c SizeCounts) of(set string) int {
	switch set {
	case "packed":
		return c.Packed
	case "unpacked":
		return c.Unpacked
	case "spare":
		return c.Spare
	case "late":
		return c.Late
	}
	return c.Dead
}

// barChart is the grouped bar chart of the counts per size class.
type barChart struct {
	Width, Height, Base int // Base: the y of the bars' foot
	Groups              []barGroup
	Legend              []legendItem
}

type barGroup struct {
	Size   string
	X, Mid int
	Bars   []bar
}

type bar struct {
	Set, Color, Size string
	X, Y, W, H, N    int
	TextX, TextY     int
}

type legendItem struct {
	Name, Color string
	X           int
}

const (
	chartTop   = 24
	chartBarsH = 200
	barW       = 26
	barGap     = 4
	groupGap   = 36
)

func newBarChart(sizes []SizeCounts) barChart {
	most := 1
	for _, s := range sizes {
		for _, se := range series {
			most = max(most, s.of(se.Name))
		}
	}
	c := barChart{Base: chartTop + chartBarsH}
	x := 50
	groupW := len(series)*(barW+barGap) - barGap
	for _, s := range sizes {
		g := barGroup{Size: s.Size, X: x, Mid: x + groupW/2}
		for i, se := range series {
			n := s.of(se.Name)
			if s.Size == NoSize && se.Name != "dead" {
				continue // only dead letters can have no size
			}
			h := n * chartBarsH / most
			if n > 0 {
				h = max(h, 1) // a count is never drawn as nothing
			}
			bx := x + i*(barW+barGap)
			g.Bars = append(g.Bars, bar{Set: se.Name, Color: se.Color, Size: s.Size, N: n,
				X: bx, Y: c.Base - h, W: barW, H: h, TextX: bx + barW/2, TextY: c.Base - h - 4})
		}
		c.Groups = append(c.Groups, g)
		x += groupW + groupGap
	}
	c.Width = max(x-groupGap+30, 600)
	c.Height = c.Base + 56
	for i, se := range series {
		c.Legend = append(c.Legend, legendItem{Name: se.Name, Color: se.Color, X: 50 + i*100})
	}
	return c
}

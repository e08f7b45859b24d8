package report

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/northpole-workshop/northpole/internal/contract"
	"github.com/northpole-workshop/northpole/internal/record"
	"github.com/northpole-workshop/northpole/internal/results"
)

// timeline is the windows along event time, one strip per size class: a bar
// per window from its start to its end W later, as high as the pairs it
// held, with its unpacked toys and spare boxes on top. Windows a long way
// apart (more than maxGap windows) are drawn with a break between them; a
// run with more windows than maxBars draws a bar per PerBar windows.
type timeline struct {
	Width, Height int
	PlotX, PlotW  int
	Windows       int // distinct window starts with a row, over every size
	PerBar        int
	MostInBar     int
	Strips        []strip
	Ticks         []tick
	Breaks        []gapMark
	// Unreadable rows have a window_start that is not a time, or a size
	// that is not a size class.
	Unreadable int
}

type strip struct {
	Size           string
	Y, H, Base     int
	Windows, Pairs int
	MostPairs      int // in one window
	Bars           []timeBar
}

// timeBar is one bar: pairs from Y down to the strip's base, unmatched
// (unpacked and spare) from UY, UH high, above it.
type timeBar struct {
	X, W, Y, H, UY, UH int
	Title              string
	// Label, when the bar is wide enough, is its pairs, written at
	// LabelY (inside the bar when it is tall enough: Inside).
	Label          string
	LabelX, LabelY int
	Inside         bool
}

type tick struct {
	X     int
	Label string
}

type gapMark struct {
	X, Y1, Y2 int
	Title     string
}

const (
	maxBars   = 160
	maxGap    = 12 // windows: a longer gap is drawn as a break
	breakW    = 3  // windows of width a break takes
	plotX     = 80
	plotW     = 1020
	stripH    = 64
	stripGap  = 18
	axisSpace = 34
)

// windowRows are a window's rows of one size.
type windowRows struct{ pairs, unpacked, spare int }

func newTimeline(s results.Set, p contract.Params) timeline {
	tl := timeline{PlotX: plotX, PlotW: plotW, Width: plotX + plotW + 20}
	bySize, unreadable := windowsBySize(s)
	tl.Unreadable = unreadable
	var starts []int64
	for _, m := range bySize {
		for us := range m {
			starts = append(starts, us)
		}
	}
	slices.Sort(starts)
	starts = slices.Compact(starts)
	tl.Windows = len(starts)
	tl.Height = len(record.Sizes)*(stripH+stripGap) + axisSpace
	if len(starts) == 0 {
		return tl
	}
	w := max(p.Window.Microseconds(), 1)
	pl := placeWindows(starts, w)
	tl.PerBar = max(int(math.Ceil(pl.units/maxBars)), 1)
	cols := int(math.Ceil(pl.units / float64(tl.PerBar)))
	colPx := float64(plotW) / float64(cols)
	col := func(us int64) int { return min(int(pl.unit[us])/tl.PerBar, cols-1) }
	x := func(c int) int { return plotX + int(float64(c)*colPx) }

	cells := map[string][]column{}
	for _, size := range record.Sizes {
		cs := make([]column, cols)
		for us, r := range bySize[size] {
			cs[col(us)].add(us, *r)
		}
		for _, c := range cs {
			tl.MostInBar = max(tl.MostInBar, c.pairs+c.unpacked+c.spare)
		}
		cells[size] = cs
	}
	span := time.Duration(starts[len(starts)-1]-starts[0]) * time.Microsecond
	barPx := max(int(colPx*0.85), 1)
	for i, size := range record.Sizes {
		st := strip{Size: size, Y: i * (stripH + stripGap), H: stripH}
		st.Base = st.Y + stripH
		for c, cell := range cells[size] {
			if cell.windows > 0 {
				st.add(cell, x(c), barPx, tl.MostInBar, w, span)
			}
		}
		tl.Strips = append(tl.Strips, st)
	}
	axisY := len(record.Sizes) * (stripH + stripGap)
	for i, b := range pl.breakAt {
		bx := plotX + int(b/float64(tl.PerBar)*colPx)
		tl.Breaks = append(tl.Breaks, gapMark{X: bx, Y1: 0, Y2: axisY, Title: fmt.Sprintf("a gap of %v with no window", pl.breakGap[i])})
	}
	// About eight ticks, at windows that are there.
	every := max(len(starts)/8, 1)
	last := -1000
	for i := 0; i < len(starts); i += every {
		if tx := x(col(starts[i])); tx-last >= 110 {
			last = tx
			tl.Ticks = append(tl.Ticks, tick{X: tx, Label: timeLabel(starts[i], span)})
		}
	}
	return tl
}

// windowsBySize are the rows of each window (by its start, in
// microseconds) of each size class, and how many rows have a window_start
// that is not a time or a size that is not a size class.
func windowsBySize(s results.Set) (map[string]map[int64]*windowRows, int) {
	bySize := map[string]map[int64]*windowRows{}
	for _, size := range record.Sizes {
		bySize[size] = map[int64]*windowRows{}
	}
	unreadable := 0
	add := func(size, start string, f func(*windowRows)) {
		t, err := time.Parse(time.RFC3339Nano, start)
		m, ok := bySize[size]
		if err != nil || !ok {
			unreadable++
			return
		}
		us := t.UnixMicro()
		if m[us] == nil {
			m[us] = &windowRows{}
		}
		f(m[us])
	}
	for _, r := range s.Packed {
		add(r.Size, r.WindowStart, func(w *windowRows) { w.pairs++ })
	}
	for _, r := range s.Unpacked {
		add(r.Size, r.WindowStart, func(w *windowRows) { w.unpacked++ })
	}
	for _, r := range s.Spare {
		add(r.Size, r.WindowStart, func(w *windowRows) { w.spare++ })
	}
	return bySize, unreadable
}

// placement is where each window goes along the axis, in units of W: gaps
// of more than maxGap windows shortened to a break of breakW.
type placement struct {
	unit     map[int64]float64
	units    float64 // the axis's length
	breakAt  []float64
	breakGap []time.Duration
}

func placeWindows(starts []int64, w int64) placement {
	p := placement{unit: make(map[int64]float64, len(starts))}
	u := 0.0
	for i, us := range starts {
		if i > 0 {
			gap := float64(us-starts[i-1]) / float64(w)
			if gap > maxGap {
				p.breakAt = append(p.breakAt, u+1+(breakW-1)/2.0)
				p.breakGap = append(p.breakGap, time.Duration(us-starts[i-1]-w)*time.Microsecond)
				gap = breakW + 1
			}
			u += gap
		}
		p.unit[us] = u
	}
	p.units = u + 1
	return p
}

// column is the windows of one size that one bar shows.
type column struct {
	windowRows
	windows, most int // most: pairs in one window
	first, last   int64
}

func (c *column) add(us int64, r windowRows) {
	if c.windows == 0 || us < c.first {
		c.first = us
	}
	c.last = max(c.last, us)
	c.windows++
	c.pairs += r.pairs
	c.unpacked += r.unpacked
	c.spare += r.spare
	c.most = max(c.most, r.pairs)
}

// add draws the bar of cell at x, barPx wide, scaled so that most rows
// fill the strip.
func (st *strip) add(cell column, x, barPx, most int, w int64, span time.Duration) {
	st.Windows += cell.windows
	st.Pairs += cell.pairs
	st.MostPairs = max(st.MostPairs, cell.most)
	h := scale(cell.pairs, most)
	uh := scale(cell.unpacked+cell.spare, most)
	b := timeBar{X: x, W: barPx, Y: st.Base - h, H: h, UY: st.Base - h - uh, UH: uh,
		Title: barTitle(st.Size, cell, w, span)}
	if barPx >= 28 {
		b.Label, b.LabelX = fmt.Sprint(cell.pairs), b.X+barPx/2
		switch {
		case h >= 16: // in the pairs' bar
			b.Inside, b.LabelY = true, b.Y+12
		case b.UY-st.Y >= 14: // above the bar
			b.LabelY = b.UY - 3
		default: // in the leftovers' bar, which fills the strip
			b.LabelY = b.UY + 12
		}
	}
	st.Bars = append(st.Bars, b)
}

func scale(n, most int) int {
	if n == 0 || most == 0 {
		return 0
	}
	return max(n*(stripH-4)/most, 1)
}

// timeLabel shows a window start: the time of day when the run spans less
// than a day, else the date too (UTC).
func timeLabel(us int64, span time.Duration) string {
	t := time.UnixMicro(us).UTC()
	if span < 24*time.Hour {
		return t.Format("15:04:05")
	}
	return t.Format("2006-01-02 15:04")
}

func barTitle(size string, c column, w int64, span time.Duration) string {
	end := timeLabel(c.last+w, span)
	if c.windows == 1 {
		return fmt.Sprintf("%s, window %s to %s: %d pairs, %d unpacked toys, %d spare boxes", size, timeLabel(c.first, span), end, c.pairs, c.unpacked, c.spare)
	}
	return fmt.Sprintf("%s, %d windows from %s to %s: %d pairs (at most %d in one window), %d unpacked toys, %d spare boxes",
		size, c.windows, timeLabel(c.first, span), end, c.pairs, c.most, c.unpacked, c.spare)
}

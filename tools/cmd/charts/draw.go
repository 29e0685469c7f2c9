package main

import (
	"cmp"
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/seedaa7df82c/topic/tools/internal/benchread"
)

// palette gives each library drawn its colour, by position in libs(): this
// library's rows first (the compare module lists them first), in reds, then
// the others.
var palette = []color.Color{
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, // red
	color.RGBA{R: 0x8c, G: 0x1a, B: 0x1a, A: 0xff}, // dark red
	color.RGBA{R: 0xf0, G: 0x80, B: 0x80, A: 0xff}, // light red
	color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff}, // grey
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, // blue
	color.RGBA{R: 0x17, G: 0xbe, B: 0xcf, A: 0xff}, // cyan
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, // green
	color.RGBA{R: 0xbc, G: 0xbd, B: 0x22, A: 0xff}, // olive
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, // purple
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, // orange
	color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff}, // brown
	color.RGBA{R: 0xe3, G: 0x77, B: 0xc2, A: 0xff}, // pink
}

var glyphs = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.BoxGlyph{}, draw.TriangleGlyph{}, draw.PyramidGlyph{},
	draw.RingGlyph{}, draw.SquareGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{},
}

// libs returns the libraries that appear in rs (the lib= key of their
// benchmarks), in order of appearance: the compare module's benchmarks run
// them in the order of compare.Libs, this library first.
func libs(rs *benchread.Set) []string {
	var names []string
	for _, r := range rs.List {
		if l := r.Keys["lib"]; l != "" && !slices.Contains(names, l) {
			names = append(names, l)
		}
	}
	return names
}

// style returns the colour and glyph of the i-th library, named lib, and
// the width of its line: this library's rows (named topic…) thicker.
func style(i int, lib string) (color.Color, draw.GlyphDrawer, vg.Length) {
	width := vg.Points(1.5)
	if strings.HasPrefix(lib, "topic") {
		width = vg.Points(3)
	}
	return palette[i%len(palette)], glyphs[i%len(glyphs)], width
}

// stamp says where and when the run was made (-stamp), for subtitle.
var stamp string

// subtitle says where the figures come from.
func subtitle(rs *benchread.Set, unit string) string {
	runs := 0
	for _, r := range rs.List {
		runs = max(runs, r.Runs(unit))
	}
	s := fmt.Sprintf("median of %d runs", runs)
	if rs.CPU != "" {
		s += ", " + rs.CPU
	}
	if stamp != "" {
		s += ", " + stamp
	}
	return s
}

// A metric is what a sweep chart draws: a unit of the benchmarks, and how
// to title, label and tick it.
type metric struct {
	unit   string // as go test writes it: ns/op, delivered/s/sub
	title  string // the chart's, before " vs " and the x label
	ylabel string // the y axis's, before " (log scale)"
	ticks  plot.Ticker
}

var (
	timePerPublication = metric{"ns/op", "Time per publication, deliveries included", "time per publication", durationTicks}
	goodputPerSub      = metric{"delivered/s/sub", "Values delivered per second to each subscriber", "values delivered per second, per subscriber", rateTicks}
	goodputTotal       = metric{"delivered/s", "Values delivered per second, all subscribers", "values delivered per second, in all", rateTicks}
)

// sweepChart draws m against n for the benchmark base, one line per
// library, both axes logarithmic.
func sweepChart(rs *benchread.Set, base, xlabel, path string, m metric) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s, vs %s\n%s", m.title, xlabel, subtitle(rs, m.unit))
	p.X.Label.Text = xlabel + " (log scale)"
	p.Y.Label.Text = m.ylabel + " (log scale)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, m.ticks
	p.Add(plotter.NewGrid())
	legend := plot.NewLegend()
	for i, lib := range libs(rs) {
		xys := series(rs.Where(base, "lib", lib), m.unit)
		if len(xys) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return err
		}
		c, g, w := style(i, lib)
		line.Color, line.Width = c, w
		points.Color, points.Shape, points.Radius = c, g, vg.Points(3)
		p.Add(line, points)
		legend.Add(lib, line, points)
		lo, hi := yRange(xys)
		if p.Y.Min == 0 || lo < p.Y.Min {
			p.Y.Min = lo
		}
		p.Y.Max = max(p.Y.Max, hi)
	}
	if p.Y.Min <= 0 {
		return fmt.Errorf("no %s above zero for %s", m.unit, base)
	}
	p.Y.Min, p.Y.Max = decades(p.Y.Min, p.Y.Max)
	return saveBeside(p, legend, 9*vg.Inch, 6*vg.Inch, path)
}

// yRange returns the least and greatest Y of xys, which is not empty.
func yRange(xys plotter.XYs) (lo, hi float64) {
	lo = slices.MinFunc(xys, func(a, b plotter.XY) int { return cmp.Compare(a.Y, b.Y) }).Y
	hi = slices.MaxFunc(xys, func(a, b plotter.XY) int { return cmp.Compare(a.Y, b.Y) }).Y
	return lo, hi
}

// logTicks are the ticks of a logarithmic axis, labelled by the function:
// durationTicks with units (100 ns, 1.00 µs), rateTicks with prefixes
// (100 k/s, 1.00 M/s).
type logTicks func(float64) string

var (
	durationTicks = logTicks(benchread.Duration)
	rateTicks     = logTicks(benchread.Rate)
)

func (label logTicks) Ticks(min, max float64) []plot.Tick {
	ticks := plot.LogTicks{Prec: -1}.Ticks(min, max)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = label(ticks[i].Value)
		}
	}
	return ticks
}

// decades returns the powers of ten just below lo and just above hi: the
// bounds of a logarithmic axis whose ticks all fall inside it.
func decades(lo, hi float64) (float64, float64) {
	return math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi)))
}

// saveBeside writes p as a w×h PNG with legend to its right, outside the
// data, so that it never hides a line or a bar.
func saveBeside(p *plot.Plot, legend plot.Legend, w, h vg.Length, path string) error {
	const legendWidth, titleHeight = vg.Length(120), vg.Length(48)
	img := vgimg.New(w, h)
	dc := draw.New(img)
	p.Draw(draw.Crop(dc, 0, -legendWidth, 0, 0))
	legend.Top, legend.Left = true, true
	legend.Draw(draw.Crop(dc, w-legendWidth, 0, 0, -titleHeight))
	return savePNG(img, path)
}

// savePNG writes img to path as a PNG.
func savePNG(img *vgimg.Canvas, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// series returns the median of unit against the n key of each result, in
// order of n.
func series(rs []*benchread.Result, unit string) plotter.XYs {
	var xys plotter.XYs
	for _, r := range rs {
		n, err := strconv.ParseFloat(r.Keys["n"], 64)
		y, ok := r.Median(unit)
		if err != nil || !ok {
			continue
		}
		xys = append(xys, plotter.XY{X: n, Y: y})
	}
	slices.SortFunc(xys, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
	return xys
}

// spread returns, in the order of series, how far the least and the
// greatest run of each result fall below and above its median.
func spread(rs []*benchread.Result, unit string) plotter.YErrors {
	type point struct {
		n      float64
		lo, hi float64
	}
	var ps []point
	for _, r := range rs {
		n, err := strconv.ParseFloat(r.Keys["n"], 64)
		med, ok := r.Median(unit)
		if err != nil || !ok {
			continue
		}
		runs := r.Values[unit]
		ps = append(ps, point{n, med - slices.Min(runs), slices.Max(runs) - med})
	}
	slices.SortFunc(ps, func(a, b point) int { return cmp.Compare(a.n, b.n) })
	errs := make(plotter.YErrors, len(ps))
	for i, p := range ps {
		errs[i].Low, errs[i].High = p.lo, p.hi
	}
	return errs
}

// A scenario is a group of the delivered chart, and a row of the tables.
type scenario struct {
	label string // on the chart and in the tables
	name  string // the benchmark's name without lib=
}

var scenarios = []scenario{
	{"no subscriber", "NoSubscriber"},
	{"1 subscriber", "Fanout/n=1"},
	{"fan-out 10", "Fanout/n=10"},
	{"fan-out 100", "Fanout/n=100"},
	{"fan-out 1000", "Fanout/n=1000"},
	{"1 topic", "Topics/n=1"},
	{"10 topics", "Topics/n=10"},
	{"100 topics", "Topics/n=100"},
	{"stuck beside healthy", "Stuck"},
}

// deliveredChart draws delivered-% per scenario as groups of bars, one bar
// per library. The scenario without a subscriber is left out: nothing is
// owed there.
func deliveredChart(rs *benchread.Set, path string) error {
	groups := scenarios[1:]
	names := libs(rs)
	p := plot.New()
	p.Title.Text = "Share of published values that reached the subscribers\n" + subtitle(rs, "delivered-%")
	p.Y.Label.Text = "delivered (% of values owed to subscribers)"
	p.X.Label.Text = "scenario (the stuck subscriber's share is not owed)"
	p.Y.Min, p.Y.Max = 0, 105
	p.Y.Tick.Marker = plot.ConstantTicks([]plot.Tick{{Value: 0, Label: "0"}, {Value: 25, Label: "25"}, {Value: 50, Label: "50"}, {Value: 75, Label: "75"}, {Value: 100, Label: "100"}})
	p.Add(plotter.NewGrid())
	legend := plot.NewLegend()
	labels := make([]string, len(groups))
	for i, g := range groups {
		labels[i] = g.label
	}
	p.NominalX(labels...)

	width := vg.Points(8)
	for i, lib := range names {
		values := make(plotter.Values, len(groups))
		var missing plotter.XYLabels
		for j, g := range groups {
			v, ok := 0.0, false
			name := g.name + "/lib=" + lib
			if r := rs.Find(name); r != nil {
				v, ok = r.Median("delivered-%")
			}
			values[j] = v
			if !ok {
				missing.XYs = append(missing.XYs, plotter.XY{X: float64(j), Y: 2})
				missing.Labels = append(missing.Labels, whyMissing(rs, name))
			}
		}
		bars, err := plotter.NewBarChart(values, width)
		if err != nil {
			return err
		}
		c, _, _ := style(i, lib)
		bars.Color = c
		bars.LineStyle.Width = 0
		bars.Offset = vg.Length(float64(i)-float64(len(names)-1)/2) * width
		p.Add(bars)
		legend.Add(lib, bars)
		if len(missing.XYs) == 0 {
			continue
		}
		// A missing bar is named where it would stand: the labels are
		// shifted by the bars' own offset.
		l, err := plotter.NewLabels(missing)
		if err != nil {
			return err
		}
		for k := range l.TextStyle {
			l.TextStyle[k].Rotation = math.Pi / 2
			l.TextStyle[k].Font.Size = vg.Points(9)
			l.TextStyle[k].Color = c
		}
		l.Offset = vg.Point{X: bars.Offset + width/4}
		p.Add(l)
	}
	return saveBeside(p, legend, 13*vg.Inch, 6*vg.Inch, path)
}

// whyMissing explains the missing result of the benchmark named name:
// "blocks" if the benchmark was skipped because publication blocks (a
// library that blocks on a stuck subscriber), "skipped" if it was skipped
// otherwise, "no result" if the input does not name it.
func whyMissing(rs *benchread.Set, name string) string {
	why, skipped := rs.Skipped[name]
	switch {
	case strings.Contains(why, "blocks"):
		return "blocks"
	case skipped:
		return "skipped"
	}
	return "no result"
}

// A panel is one of the core's sweeps.
type panel struct {
	bench, title, xlabel, ylabel string
}

var panels = []panel{
	{"PublishFanout", "Publish, fan-out", "subscriptions of the published type", "ns per publication"},
	{"PublishTypes", "Publish, distinct types subscribed", "types subscribed", "ns per publication"},
	{"SubscribeCancel", "Subscribe and cancel, beside others", "subscriptions held", "ns per subscribe + cancel"},
	{"PublishInterfaceSubscriptions", "Publish, beside interface subscriptions", "non-matching interface subscriptions", "ns per publication"},
}

// coreChart draws this library's sweeps, one panel each, 2×2.
func coreChart(rs *benchread.Set, path string) error {
	const w, h = 11 * vg.Inch, 8 * vg.Inch
	plots := [][]*plot.Plot{make([]*plot.Plot, 2), make([]*plot.Plot, 2)}
	for i, pn := range panels {
		p, err := corePanel(rs, pn)
		if err != nil {
			return err
		}
		plots[i/2][i%2] = p
	}
	img := vgimg.New(w, h)
	dc := draw.New(img)
	top := vg.Points(28)
	title := plots[0][0].Title.TextStyle // a copy, with the plot's font
	title.Font.Size = vg.Points(14)
	title.XAlign, title.YAlign = draw.XCenter, draw.YBottom
	dc.FillText(title, vg.Point{X: w / 2, Y: h - top + vg.Points(4)}, "topic's own sweeps ("+subtitle(rs, "ns/op")+")")
	tiles := draw.Tiles{Rows: 2, Cols: 2, PadX: vg.Points(24), PadY: vg.Points(24), PadTop: top, PadBottom: vg.Points(8), PadLeft: vg.Points(8), PadRight: vg.Points(16)}
	for i := range plots {
		for j := range plots[i] {
			plots[i][j].Draw(tiles.At(dc, j, i))
		}
	}
	return savePNG(img, path)
}

// corePanel plots the median ns/op of one sweep against n, with the spread
// of its runs: on log axes when every n is positive, otherwise with n as
// categories.
func corePanel(rs *benchread.Set, pn panel) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = pn.title
	p.X.Label.Text = pn.xlabel
	p.Add(plotter.NewGrid())
	xys := series(rs.Where(pn.bench), "ns/op")
	errs := spread(rs.Where(pn.bench), "ns/op")
	if len(xys) == 0 {
		p.Title.Text += " (no results)"
		return p, nil
	}
	if slices.ContainsFunc(xys, func(xy plotter.XY) bool { return xy.X <= 0 }) {
		ticks := make([]plot.Tick, len(xys))
		for i := range xys {
			ticks[i] = plot.Tick{Value: float64(i), Label: strconv.FormatFloat(xys[i].X, 'f', -1, 64)}
			xys[i].X = float64(i)
		}
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
		p.X.Min, p.X.Max = -0.3, float64(len(xys)-1)+0.3
	} else {
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
		p.X.Label.Text += " (log scale)"
	}
	lo, hi := yRange(xys)
	for i, e := range errs {
		lo, hi = min(lo, xys[i].Y-e.Low), max(hi, xys[i].Y+e.High)
	}
	p.Y.Label.Text = pn.ylabel
	if lo > 0 && hi/lo > 20 {
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, durationTicks
		p.Y.Min, p.Y.Max = decades(lo, hi)
		p.Y.Label.Text = strings.Replace(pn.ylabel, "ns per", "time per", 1) // the ticks carry units
		p.Title.Text += " (log-log)"
	} else {
		p.Y.Min, p.Y.Max = 0, hi*1.15
	}
	line, points, err := plotter.NewLinePoints(xys)
	if err != nil {
		return nil, err
	}
	c, g, width := style(0, "topic")
	line.Color, line.Width = c, width
	points.Color, points.Shape, points.Radius = c, g, vg.Points(3)
	// The spread of the runs, least to greatest, so that noise is not
	// read as a trend.
	bars, err := plotter.NewYErrorBars(struct {
		plotter.XYs
		plotter.YErrors
	}{xys, errs})
	if err != nil {
		return nil, err
	}
	bars.Color, bars.Width = c, vg.Points(1)
	p.Add(line, points, bars)
	labels := plotter.XYLabels{XYs: xys, Labels: make([]string, len(xys))}
	for i, xy := range xys {
		labels.Labels[i] = benchread.Duration(xy.Y)
	}
	l, err := plotter.NewLabels(labels)
	if err != nil {
		return nil, err
	}
	for i := range l.TextStyle {
		l.TextStyle[i].YAlign = draw.YBottom
		l.TextStyle[i].XAlign = draw.XCenter
	}
	l.Offset = vg.Point{Y: vg.Points(5)}
	p.Add(l)
	return p, nil
}

// A latencyRun is a group of the latency chart: a sub-benchmark of
// BenchmarkLatency without lib=.
type latencyRun struct {
	label, name string
}

var latencyRuns = []latencyRun{
	{"1 subscriber, 10k/s", "Latency/rate=10k/n=1"},
	{"10 subscribers, 10k/s", "Latency/rate=10k/n=10"},
	{"100 subscribers, 1k/s", "Latency/rate=1k/n=100"},
}

// latencyChart draws, per scenario of BenchmarkLatency and per library,
// the 99th percentile of the latency as a marker on a bar from the median
// to the 99.9th, on a logarithmic axis.
func latencyChart(rs *benchread.Set, path string) error {
	names := libs(rs)
	p := plot.New()
	p.Title.Text = "Publish-to-receipt latency at a fixed rate: p99 (marker), median to p99.9 (bar)\n" + subtitle(rs, "p99-ns")
	p.Y.Label.Text = "latency (log scale)"
	p.X.Label.Text = "scenario (subscribers of one topic, rate offered)"
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, durationTicks
	p.Add(plotter.NewGrid())
	labels := make([]string, len(latencyRuns))
	for i, r := range latencyRuns {
		labels[i] = r.label
	}
	p.NominalX(labels...)
	legend := plot.NewLegend()
	const step = 0.075 // between the libraries of a group, in groups
	lo, hi := math.Inf(1), 0.0
	for i, lib := range names {
		var pts struct {
			plotter.XYs
			plotter.YErrors
		}
		for j, run := range latencyRuns {
			r := rs.Find(run.name + "/lib=" + lib)
			if r == nil {
				continue
			}
			p50, ok1 := r.Median("p50-ns")
			p99, ok2 := r.Median("p99-ns")
			p999, ok3 := r.Median("p99.9-ns")
			if !ok1 || !ok2 || !ok3 || p50 <= 0 {
				continue
			}
			x := float64(j) + (float64(i)-float64(len(names)-1)/2)*step
			pts.XYs = append(pts.XYs, plotter.XY{X: x, Y: p99})
			pts.YErrors = append(pts.YErrors, struct{ Low, High float64 }{p99 - p50, p999 - p99})
			lo, hi = min(lo, p50), max(hi, p999)
		}
		if len(pts.XYs) == 0 {
			continue
		}
		c, g, w := style(i, lib)
		bars, err := plotter.NewYErrorBars(pts)
		if err != nil {
			return err
		}
		bars.Color, bars.Width, bars.CapWidth = c, w, vg.Points(5)
		marks, err := plotter.NewScatter(pts.XYs)
		if err != nil {
			return err
		}
		marks.Color, marks.Shape, marks.Radius = c, g, vg.Points(4)
		p.Add(bars, marks)
		legend.Add(lib, marks)
	}
	if hi == 0 {
		return errors.New("no latency results")
	}
	p.Y.Min, p.Y.Max = decades(lo, hi)
	p.X.Min, p.X.Max = -0.5, float64(len(latencyRuns))-0.5
	return saveBeside(p, legend, 11*vg.Inch, 6*vg.Inch, path)
}

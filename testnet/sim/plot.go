package sim

import (
	"fmt"
	"image/color"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// PlotAllocation draws a sweep's allocation time (p50 and p99, virtual
// seconds) against the number of agents, with and without faults.
func PlotAllocation(points []SweepPoint) (*plot.Plot, error) {
	p := newLogPlot("Allocation time against network size", "allocation time (virtual s)")
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{}
	err := addSeries(p, points, []series{
		{"p50, no faults", false, func(r Result) float64 { return r.AllocP50.Seconds() }, false},
		{"p99, no faults", false, func(r Result) float64 { return r.AllocP99.Seconds() }, true},
		{"p50, all faults", true, func(r Result) float64 { return r.AllocP50.Seconds() }, false},
		{"p99, all faults", true, func(r Result) float64 { return r.AllocP99.Seconds() }, true},
	})
	return p, err
}

// PlotMessages draws a sweep's advert messages per job, and per agent and
// job, against the number of agents, with and without faults.
func PlotMessages(points []SweepPoint) (*plot.Plot, error) {
	p := newLogPlot("Advert messages against network size", "advert messages")
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{}
	err := addSeries(p, points, []series{
		{"per job, no faults", false, func(r Result) float64 { return r.AdvertsPerJob }, false},
		{"per agent per job, no faults", false, func(r Result) float64 { return r.Adverts }, true},
		{"per job, all faults", true, func(r Result) float64 { return r.AdvertsPerJob }, false},
		{"per agent per job, all faults", true, func(r Result) float64 { return r.Adverts }, true},
	})
	return p, err
}

type series struct {
	name   string
	faulty bool
	value  func(Result) float64
	dashed bool
}

func newLogPlot(title, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "agents"
	p.Y.Label.Text = ylabel
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{}
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return p
}

var seriesColors = []color.Color{color.RGBA{B: 200, A: 255}, color.RGBA{B: 200, A: 255},
	color.RGBA{R: 200, A: 255}, color.RGBA{R: 200, A: 255}}

func addSeries(p *plot.Plot, points []SweepPoint, ss []series) error {
	for i, s := range ss {
		var xys plotter.XYs
		for _, pt := range points {
			if pt.Faulty == s.faulty {
				xys = append(xys, plotter.XY{X: float64(pt.Agents), Y: s.value(pt.Result)})
			}
		}
		if len(xys) == 0 || slices.ContainsFunc(xys, func(p plotter.XY) bool { return p.Y <= 0 }) {
			continue // nothing to draw on a log scale
		}
		l, sc, err := plotter.NewLinePoints(xys)
		if err != nil {
			return fmt.Errorf("sim: plot %s: %w", s.name, err)
		}
		c := seriesColors[i%len(seriesColors)]
		l.Color, sc.Color = c, c
		sc.Shape = draw.CircleGlyph{}
		if s.dashed {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(l, sc)
		p.Legend.Add(s.name, l, sc)
	}
	p.Y.Max *= 10 // room for the legend above the lines, on the log scale
	return nil
}

package testnet

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"sort"

	"github.com/zorilla-p2p/zorilla/job"
)

// siteColours colour the sites in the figures, in Grid5000Sites order;
// further sites take grey.
var siteColours = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"}

// SVG geometry: two panels side by side under a title and a legend.
const (
	svgWidth, svgHeight = 980, 470
	panelWidth          = 400
	plotTop, plotBottom = 110, 410
)

// WriteSVG draws the paper's figure for one strategy (Figures 2 and 3 of
// the P2P-MPI Grid'5000 experiment): for every n, a bar of the hosts used
// and a bar of the cores used, stacked by site, closest site at the
// bottom. The legend gives each site's RTT to nancy and what it offers.
func WriteSVG(w io.Writer, clusters []Cluster, s job.Strategy, allocs []Allocation) error {
	var rows []Allocation
	for _, a := range allocs {
		if a.Strategy == s {
			rows = append(rows, a)
		}
	}
	if len(rows) == 0 {
		return fmt.Errorf("grid5000 svg: no allocation with strategy %q", s)
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].N < rows[j].N })
	avail := Available(clusters)
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		svgWidth, svgHeight, svgWidth, svgHeight)
	fmt.Fprintf(bw, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(bw, `<text x="%d" y="24" font-size="16" text-anchor="middle">%s: processes per site, submitted from nancy (simulated Grid'5000, Table 1)</text>`+"\n",
		svgWidth/2, html.EscapeString(string(s)))
	legend(bw, avail)
	hosts := func(a Allocation, site string) int { return a.Site(site).Hosts }
	cores := func(a Allocation, site string) int { return a.Site(site).Cores }
	panel(bw, 70, "hosts allocated", rows, avail, hosts)
	panel(bw, 70+panelWidth+100, "cores allocated (processes)", rows, avail, cores)
	fmt.Fprintln(bw, "</svg>")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("grid5000 svg: %w", err)
	}
	return nil
}

func colour(i int) string {
	if i < len(siteColours) {
		return siteColours[i]
	}
	return "#999999"
}

// legend lists the sites with their colour, RTT and capacity.
func legend(w io.Writer, avail []SiteShare) {
	x, y := 70, 50
	for i, s := range avail {
		if s.Hosts == 0 {
			continue
		}
		label := fmt.Sprintf("%s (%.1f ms) %d hosts, %d cores", s.Site, float64(s.MinRTT.Microseconds())/1000, s.Hosts, s.Cores)
		fmt.Fprintf(w, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n",
			x, y, colour(i), x+16, y+11, html.EscapeString(label))
		x += 290
		if x > svgWidth-250 {
			x, y = 70, y+20
		}
	}
}

// panel draws one stacked bar chart at x0: a bar per allocation, a segment
// per site, with a y axis scaled to the tallest bar.
func panel(w io.Writer, x0 int, title string, rows []Allocation, avail []SiteShare, val func(Allocation, string) int) {
	top := 1
	for _, a := range rows {
		sum := 0
		for _, s := range avail {
			sum += val(a, s.Site)
		}
		top = max(top, sum)
	}
	step := niceStep(float64(top) / 5)
	ymax := math.Ceil(float64(top)/step) * step
	scale := float64(plotBottom-plotTop) / ymax
	fmt.Fprintf(w, `<text x="%d" y="%d" text-anchor="middle" font-size="14">%s</text>`+"\n", x0+panelWidth/2, plotTop-12, html.EscapeString(title))
	for v := 0.0; v <= ymax+step/2; v += step {
		y := float64(plotBottom) - v*scale
		fmt.Fprintf(w, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#dddddd"/><text x="%d" y="%.1f" text-anchor="end">%g</text>`+"\n",
			x0, y, x0+panelWidth, y, x0-6, y+4, v)
	}
	slot := float64(panelWidth) / float64(len(rows))
	for i, a := range rows {
		x := float64(x0) + slot*float64(i) + slot*0.15
		y := float64(plotBottom)
		for j, s := range avail {
			h := float64(val(a, s.Site)) * scale
			if h <= 0 {
				continue
			}
			y -= h
			fmt.Fprintf(w, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>n=%d %s: %d</title></rect>`+"\n",
				x, y, slot*0.7, h, colour(j), a.N, html.EscapeString(s.Site), val(a, s.Site))
		}
		fmt.Fprintf(w, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", x+slot*0.35, plotBottom+16, a.N)
	}
	fmt.Fprintf(w, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/><line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n",
		x0, plotBottom, x0+panelWidth, plotBottom, x0, plotTop, x0, plotBottom)
	fmt.Fprintf(w, `<text x="%d" y="%d" text-anchor="middle">processes requested (n)</text>`+"\n", x0+panelWidth/2, plotBottom+36)
}

// niceStep rounds a raw axis step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 1 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

package testnet

import (
	"fmt"
	"html"
	"io"
	"strings"
	"testing"
	"time"
)

// writeOOCSVG draws a run's rows: for each technique, one bar per job of
// its slowdown (time over its batch time), the total time beside them. A
// row not done is drawn as such, without bars.
func writeOOCSVG(w io.Writer, title string, rows []oocRow) error {
	const left, barH, gap, width = 330, 14, 18, 900
	var top float64 = 50
	maxSlow := 1.0
	for _, r := range rows {
		for i, d := range r.perJob {
			if s := rows[0].perJob[i]; s > 0 && r.err == nil {
				maxSlow = max(maxSlow, d.Seconds()/s.Seconds())
			}
		}
	}
	scale := float64(width-left-170) / maxSlow
	height := int(top) + len(rows)*(3*barH+gap) + 40
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" text-anchor="middle">%s</text>`+"\n", width/2, html.EscapeString(title))
	fmt.Fprintf(&b, `<text x="%d" y="40" text-anchor="middle" fill="#555">bars: each job's slowdown (its time / its batch time); right: total time of the three jobs</text>`+"\n", width/2)
	colours := []string{"#1f77b4", "#ff7f0e", "#2ca02c"}
	for _, r := range rows {
		y := top + float64(3*barH)/2
		fmt.Fprintf(&b, `<text x="%d" y="%.0f" text-anchor="end">%s</text>`+"\n", left-8, y+4, html.EscapeString(shorten(r.name, 48)))
		if r.err != nil {
			fmt.Fprintf(&b, `<text x="%d" y="%.0f" fill="#b00">not done within the row's limit</text>`+"\n", left+4, y+4)
			top += float64(3*barH + gap)
			continue
		}
		for i, d := range r.perJob {
			s := d.Seconds() / rows[0].perJob[i].Seconds()
			fmt.Fprintf(&b, `<rect x="%d" y="%.0f" width="%.1f" height="%d" fill="%s"><title>job %d: %.2f</title></rect>`+"\n",
				left, top+float64(i*barH), s*scale, barH-2, colours[i%len(colours)], i, s)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" font-size="10">%.2f</text>`+"\n", float64(left)+s*scale+3, top+float64(i*barH)+barH-4, s)
		}
		fmt.Fprintf(&b, `<text x="%d" y="%.0f" text-anchor="end">%v</text>`+"\n", width-10, y+4, r.total.Round(time.Second))
		top += float64(3*barH + gap)
	}
	fmt.Fprintf(&b, `<line x1="%.1f" y1="50" x2="%.1f" y2="%.0f" stroke="#999" stroke-dasharray="3,3"/>`+"\n", left+scale, left+scale, top)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" fill="#555" text-anchor="middle">1 (alone)</text>`+"\n", left+scale, top+14)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

// The figure has a bar per job of every row done, none for a row not
// done, and escapes the names.
func TestWriteOOCSVG(t *testing.T) {
	rows := []oocRow{
		{timeshareRow: timeshareRow{name: "batch", total: 90 * time.Second, perJob: []time.Duration{30e9, 30e9, 30e9}}},
		{timeshareRow: timeshareRow{name: "co <all>", total: 120 * time.Second, perJob: []time.Duration{60e9, 90e9, 120e9}}},
		{timeshareRow: timeshareRow{name: "gang", perJob: []time.Duration{0, 0, 0}}, err: fmt.Errorf("late")},
	}
	var b strings.Builder
	if err := writeOOCSVG(&b, "t", rows); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	if n := strings.Count(svg, "<rect x="); n != 6 {
		t.Fatalf("%d bars, want 6\n%s", n, svg)
	}
	for _, want := range []string{"co &lt;all&gt;", "<title>job 2: 4.00</title>", "not done", "2m0s"} {
		if !strings.Contains(svg, want) {
			t.Fatalf("no %q in\n%s", want, svg)
		}
	}
}

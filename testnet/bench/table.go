package bench

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// figure is one measure of one size: one-way latency and bandwidth.
type figure struct {
	latencyUS float64 // microseconds
	mbps      float64 // 10^6 bytes per second
}

// series is what one configuration gave, round by round.
type series struct {
	name   string
	note   string           // why it has no figures (not installed, failed), or ""
	base   *series          // whose figures its ratios divide; nil for the first series
	rounds []map[int]figure // by round, then size; nil for a round it did not run
}

// Results are the series of every configuration; the first is
// zorilla's, which the others' ratios divide.
type Results struct {
	series []*series
	Rounds int // rounds completed
}

// add records what a configuration measured in round i (from 0).
func (s *series) add(i int, figs map[int]figure) {
	for len(s.rounds) <= i {
		s.rounds = append(s.rounds, nil)
	}
	s.rounds[i] = figs
}

// benchRow is one line of the table: medians over the rounds.
type benchRow struct {
	latencyUS, mbps   float64
	latRatio, bwRatio float64 // zorilla / this configuration, per round; NaN for zorilla
	n                 int     // rounds with a figure
}

// row sums up a series at one size against base (zorilla's).
func row(s, base *series, size int) benchRow {
	var lat, bw, latR, bwR []float64
	for i, figs := range s.rounds {
		f, ok := figs[size]
		if !ok {
			continue
		}
		lat, bw = append(lat, f.latencyUS), append(bw, f.mbps)
		if s == base || i >= len(base.rounds) {
			continue
		}
		if b, ok := base.rounds[i][size]; ok {
			latR, bwR = append(latR, ratio(b.latencyUS, f.latencyUS)), append(bwR, ratio(b.mbps, f.mbps))
		}
	}
	return benchRow{latencyUS: median(lat), mbps: median(bw), latRatio: median(latR), bwRatio: median(bwR), n: len(lat)}
}

// ratio is a/b, NaN when b is not positive.
func ratio(a, b float64) float64 {
	if !(b > 0) {
		return math.NaN()
	}
	return a / b
}

// median is the middle value (the mean of the two middle ones for an even
// count), ignoring NaNs; NaN when there is none.
func median(xs []float64) float64 {
	v := slices.DeleteFunc(slices.Clone(xs), math.IsNaN)
	if len(v) == 0 {
		return math.NaN()
	}
	slices.Sort(v)
	m := len(v) / 2
	if len(v)%2 == 1 {
		return v[m]
	}
	return (v[m-1] + v[m]) / 2
}

// WriteTable prints, per size, each configuration's median one-way
// latency and bandwidth and the median ratios of zorilla to it.
func WriteTable(w io.Writer, res *Results, sizes []int) {
	rounds := fmt.Sprintf("%d rounds", res.Rounds)
	if res.Rounds == 1 {
		rounds = "1 round"
	}
	fmt.Fprintf(w, "ping-pong on loopback: medians of %s; ratios: zorilla / the configuration, per round, median\n", rounds)
	width := 12
	for _, s := range res.series {
		width = max(width, len(s.name))
	}
	fmt.Fprintf(w, "%8s  %-*s %12s %10s %10s %10s\n", "SIZE", width, "CONFIG", "LATENCY_US", "MB/S", "LAT_RATIO", "BW_RATIO")
	for _, size := range sizes {
		for _, s := range res.series {
			base := res.series[0]
			if s.base != nil { // the co-located rows divide the co-located zorilla's
				base = s.base
			}
			r := row(s, base, size)
			if r.n == 0 {
				fmt.Fprintf(w, "%8s  %-*s %s\n", sizeLabel(size), width, s.name, orText(s.note, "no figures"))
				continue
			}
			fmt.Fprintf(w, "%8s  %-*s %12.2f %10.2f %10s %10s%s\n", sizeLabel(size), width, s.name, r.latencyUS, r.mbps,
				ratioText(r.latRatio), ratioText(r.bwRatio), partial(r.n, res.Rounds))
		}
	}
}

// sizeLabel writes a message size in bytes, KiB or MiB when it is a whole
// number of them.
func sizeLabel(n int) string {
	for _, u := range []struct {
		unit string
		size int
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.unit)
		}
	}
	return fmt.Sprintf("%d B", n)
}

// partial notes a configuration measured in fewer rounds than the others.
func partial(n, rounds int) string {
	if n >= rounds {
		return ""
	}
	return fmt.Sprintf("  (%d of %d rounds)", n, rounds)
}

func ratioText(r float64) string {
	if math.IsNaN(r) {
		return "-"
	}
	return fmt.Sprintf("%.2fx", r)
}

func orText(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

package testnet

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/flood"
)

// Accounting and reporting of the flood benchmark (BenchmarkFloodSites).

// advertsLost counts, over every agent and the probe, the adverts dropped
// on receipt (by reason) or not sent ("send-error").
func advertsLost(net *Net, p *probe) map[string]uint64 {
	out := map[string]uint64{}
	add := func(st flood.Stats) {
		out["send-error"] += st.SendErrors
		for r, n := range st.Dropped {
			out[string(r)] += n
		}
	}
	add(p.fl.Stats())
	for _, nd := range net.Nodes {
		add(nd.Flooder().Stats())
	}
	return out
}

// lostSince is what was lost after before, with its total.
func lostSince(before, after map[string]uint64) (uint64, string) {
	var total uint64
	var parts []string
	for r, n := range after {
		if d := n - before[r]; d > 0 {
			total += d
			parts = append(parts, fmt.Sprintf("%s %d", r, d))
		}
	}
	slices.Sort(parts)
	return total, strings.Join(parts, ", ")
}

// benchLog logs to the benchmark and, as it happens, to stderr.
func benchLog(b *testing.B, format string, args ...any) {
	b.Helper()
	b.Logf(format, args...)
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}

func memory() string {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return fmt.Sprintf("heap in use %d MiB, from the OS %d MiB, %d goroutines", ms.HeapInuse>>20, ms.Sys>>20, runtime.NumGoroutine())
}

func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("job size %q: want a positive number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// benchTable is the markdown table of the results: medians over the runs.
func benchTable(rs []benchResult, agents int) string {
	var b strings.Builder
	b.WriteString("| n slots | loop | submit to enough (median, min-max) | radius | advert msgs per agent per job | offers | runs ok |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	var sizes []int
	for _, r := range rs {
		if !slices.Contains(sizes, r.n) {
			sizes = append(sizes, r.n)
		}
	}
	for _, n := range sizes {
		for _, mode := range benchModes {
			var took []time.Duration
			var radius []int
			var msgs, offers uint64
			ok, runs := 0, 0
			for _, r := range rs {
				if r.n != n || r.mode != mode {
					continue
				}
				runs++
				took, radius = append(took, r.took), append(radius, r.radius)
				msgs, offers = msgs+r.msgs, offers+uint64(r.offers)
				if r.ok {
					ok++
				}
			}
			if runs == 0 {
				continue
			}
			slices.Sort(took)
			slices.Sort(radius)
			fmt.Fprintf(&b, "| %d | %s | %.3f s (%.3f-%.3f) | %d | %.1f | %d | %d/%d |\n", n, mode,
				took[len(took)/2].Seconds(), took[0].Seconds(), took[len(took)-1].Seconds(), radius[len(radius)/2],
				float64(msgs)/float64(runs)/float64(agents), offers/uint64(runs), ok, runs)
		}
	}
	return b.String()
}

package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/zorilla-p2p/zorilla/testnet/sim"
)

// sweep runs cfg at each network size of sizes, with as many jobs per
// agent as cfg, without and with every fault kind, prints a row per run (with its wall time and the memory the
// process took) and, when dir is set, draws the SVG figures there.
func sweep(cfg sim.Config, sizes []int, dir string, stdout io.Writer) error {
	faults, err := sim.DefaultFaults([]string{"all"})
	if err != nil {
		return err
	}
	var points []sim.SweepPoint
	for _, n := range sizes {
		for _, faulty := range []bool{false, true} {
			c := sim.SweepConfig(cfg, n, faults, faulty)
			w, err := sim.New(c)
			if err != nil {
				return err
			}
			start := time.Now()
			r := w.Run()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			fmt.Fprintf(stdout, "# %d agents, %d jobs, faults %v: %v wall, %d MB from the OS, digest %s\n", n, c.Jobs, faulty,
				time.Since(start).Round(time.Millisecond), ms.Sys>>20, r.Digest)
			if r.Violation != nil {
				fmt.Fprintf(stdout, "# VIOLATION %s\n#   %s\n", r.Violation, r.Replay)
			}
			points = append(points, sim.SweepPoint{Agents: n, Jobs: c.Jobs, Faulty: faulty, Result: r})
			runtime.GC()
		}
	}
	sim.WriteSweep(stdout, points)
	if dir == "" {
		return nil
	}
	return drawSweep(points, dir)
}

func drawSweep(points []sim.SweepPoint, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	for _, f := range []struct {
		name string
		draw func([]sim.SweepPoint) (*plot.Plot, error)
	}{{"sim-allocation.svg", sim.PlotAllocation}, {"sim-messages.svg", sim.PlotMessages}} {
		p, err := f.draw(points)
		if err != nil {
			return err
		}
		if err := p.Save(6*vg.Inch, 4*vg.Inch, filepath.Join(dir, f.name)); err != nil {
			return fmt.Errorf("sweep: save %s: %w", f.name, err)
		}
	}
	return nil
}

// parseInts reads a comma-separated list of positive numbers.
func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q: want a positive number", f)
		}
		out = append(out, n)
	}
	return out, nil
}

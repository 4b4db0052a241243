package sim

import (
	"fmt"
	"io"
)

// SweepPoint is one run of a sweep: its network size, whether faults were
// on, and its result.
type SweepPoint struct {
	Agents int
	Jobs   int
	Faulty bool
	Result Result
}

// SweepConfig makes the configuration of one point of a sweep: base with
// agents agents and as many jobs per agent as base has, faults on or off.
// The load stays the same: what changes is the network's size.
func SweepConfig(base Config, agents int, faults Faults, faulty bool) Config {
	c := base
	c.Agents = agents
	c.Jobs = max(1, int((int64(base.Jobs)*int64(agents)+int64(base.Agents)/2)/int64(base.Agents)))
	c.Faults = Faults{}
	if faulty {
		c.Faults = faults
	}
	return c
}

// WriteSweep writes a sweep's table: one row per run.
func WriteSweep(out io.Writer, points []SweepPoint) {
	fmt.Fprintf(out, "%8s %6s %7s %10s %10s %12s %14s %6s %6s %6s %6s %6s\n", "agents", "jobs", "faults", "alloc p50", "alloc p99",
		"adverts/job", "adverts/agent", "done", "failed", "lost", "unfin.", "util")
	for _, p := range points {
		r := p.Result
		faults := "none"
		if p.Faulty {
			faults = "all"
		}
		fmt.Fprintf(out, "%8d %6d %7s %10s %10s %12.0f %14.5f %6d %6d %6d %6d %5.1f%%\n", p.Agents, p.Jobs, faults, secs(r.AllocP50),
			secs(r.AllocP99), r.AdvertsPerJob, r.Adverts, r.Count("done"), r.Count("failed"), r.Count("lost"),
			r.Count("unfinished")+r.Count("not submitted"), 100*r.Util)
	}
}

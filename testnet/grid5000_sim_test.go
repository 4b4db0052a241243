package testnet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/job"
)

// simTol is the RTT measurement noise the ranking checks allow. The
// submitter times one ping per offer, while every agent of the net answers
// the same advert on the same two cores (shared with other test
// binaries): measured on this machine, such a ping comes back 2 to 30 ms
// late, more under load. 5 ms keeps nancy strictly first (9.5 ms closer
// than any other site) and sophia after lyon and rennes (6.6 and 5.5 ms);
// the order of lyon, rennes, bordeaux and grenoble (0.6 to 1.1 ms apart)
// is left to the measurement, as the paper saw. CheckMeasured holds the
// placement to the measured order exactly.
const simTol = 5 * time.Millisecond

// simSlack is how much shorter than its link an RTT may be measured: none,
// but for the clock's granularity. Mocknet delays each write by half the
// RTT, and a timer never fires early.
const simSlack = 100 * time.Microsecond

// maxAllocation bounds the allocation time of every job
// of the full-size sweep.
const maxAllocation = 2 * time.Second

// fullSweep is set to run the paper's whole sweep (n = 100..600 by 50, 22
// jobs) at full size rather than the n that bound its rules.
func fullSweep() bool { return os.Getenv("ZORILLA_GRID5000_FULL") != "" }

// fullSize is set to run the simulation at the size of Table 1 at all.
// It is opt-in: 350 agents in one process take 4.5 GB and three minutes
// to converge on a quiet 2-core machine, and nine under CI's load, where
// the submitter's pings to 60 nancy hosts, answered by one process on two
// busy cores, misranked a host past the 5 ms tolerance in three attempts
// out of three (a `go test ./...` of 2026-11-28). The miniature
// (TestGrid5000Deterministic) runs the same rules at their boundary n in
// every `go test`.
func fullSize() bool { return fullSweep() || os.Getenv("ZORILLA_GRID5000") != "" }

// fullConfig is the experiment at the size of Table 1 (350 agents: about
// three minutes to converge and 4.5 GB). Unless fullSweep, its n are the
// boundaries of the paper's rules: 240 is nancy's cores (concentrate
// keeps all of them there), 250 the first that needs another site, 350
// the whole net's hosts (spread puts one process on each), 400 the first
// that gives hosts a second process.
func fullConfig(t *testing.T) Grid5000Config {
	cfg := DefaultGrid5000Config(1)
	if !fullSweep() {
		cfg.Ns = []int{240, 250, 350, 400}
	}
	cfg.Progress = func(m string) { t.Log(m) }
	return cfg
}

// miniConfig is the 37-host miniature (Scale 10) with an n on each side of
// the boundaries: nancy's hosts (6) and cores (24), the whole net's hosts
// (37).
func miniConfig() Grid5000Config {
	cfg := DefaultGrid5000Config(10)
	cfg.Ns = []int{6, 25, 45}
	cfg.Converge = 2 * time.Minute
	cfg.Quiet = 300 * time.Millisecond // a flood of radius 3 over 17 ms links is over in 100 ms
	return cfg
}

// runChecked runs the experiment on g and checks every allocation. A
// broken shape rule (P, n, one process per host first, hosts filled) or a
// placement that does not follow the measured RTTs fails at once: neither
// depends on the load. A broken ranking rule (true RTTs) is tried again,
// twice at most: a ping delayed by load misranks hosts once, a placement
// bug misranks them every time.
func runChecked(t *testing.T, g *Grid5000, cfg Grid5000Config) []Allocation {
	t.Helper()
	ctx := context.Background()
	var out []Allocation
	for _, n := range cfg.Ns {
		for _, s := range cfg.Strategies {
			var a Allocation
			var err error
			for attempt := 1; attempt <= 3; attempt++ {
				if a, err = g.Allocate(ctx, s, n); err != nil {
					t.Fatal(err)
				}
				if err := errors.Join(CheckShape(a), CheckMeasured(a, simSlack)); err != nil {
					t.Fatalf("%s n=%d: %v", s, n, err)
				}
				if err = CheckRanking(a, g.Clusters, simTol); err == nil {
					break
				}
				t.Logf("%s n=%d, attempt %d: ranking disturbed (measured RTTs %s): %v", s, n, attempt, rttSpread(a), err)
			}
			if err != nil {
				t.Fatalf("%s n=%d: the ranking rules failed three times: %v", s, n, err)
			}
			out = append(out, a)
		}
	}
	return out
}

// rttSpread shows the RTTs measured per site, for a failure message.
func rttSpread(a Allocation) string {
	var parts []string
	for _, s := range a.Sites {
		if s.Offers > 0 {
			parts = append(parts, fmt.Sprintf("%s %v..%v", s.Site, s.MinRTT.Round(100*time.Microsecond), s.MaxRTT.Round(100*time.Microsecond)))
		}
	}
	return strings.Join(parts, ", ")
}

// classTable is what the experiment reproduces exactly under a seed:
// processes per RTT class for every job, and hosts per class for spread
// (for concentrate, which hosts of a class fill up depends on the
// measurement, and hosts of one class have different P).
func classTable(allocs []Allocation, classes [][]string) string {
	var b strings.Builder
	for _, a := range allocs {
		fmt.Fprintf(&b, "%s n=%d:", a.Strategy, a.N)
		for _, c := range a.ByClass(classes) {
			fmt.Fprintf(&b, " %s cores %d", c.Site, c.Cores)
			if a.Strategy == job.Spread {
				fmt.Fprintf(&b, " hosts %d", c.Hosts)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// The paper's qualitative results on the topology of Table 1, with every
// one of its 350 hosts running the real agent: concentrate keeps every
// process at nancy while it has the cores (n <= 240) and sends the next
// ones to the next-closest sites; spread uses hosts one process each,
// closest sites first, before any host gets a second; no host exceeds its
// P.
func TestGrid5000Simulation(t *testing.T) {
	if testing.Short() || !fullSize() {
		t.Skip("starts 350 agents (4.5 GB, minutes): set ZORILLA_GRID5000=1 for the boundary n, ZORILLA_GRID5000_FULL=1 for the whole sweep")
	}
	cfg := fullConfig(t)
	t0 := time.Now()
	g, err := StartGrid5000(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := g.Close(); err != nil {
			t.Error(err)
		}
	}()
	t.Logf("%d agents converged in %v", len(g.Net.Nodes), time.Since(t0).Round(time.Millisecond))
	allocs := runChecked(t, g, cfg)
	checkSimulation(t, g, allocs)
	var text strings.Builder
	if err := WriteTable(&text, g.Clusters, allocs); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d agents, submitter %d, diameter %d:\n%s", len(g.Net.Nodes), g.Submitter, g.Diameter, text.String())
}

// The same seed gives the same table: two nets of the miniature, started
// and run alike, place as many processes (and, with spread, hosts) in
// each RTT class for every job, and both follow the rules.
func TestGrid5000Deterministic(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two nets of 37 agents")
	}
	cfg := miniConfig()
	var tables []string
	for run := range 2 {
		t0 := time.Now()
		g, err := StartGrid5000(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("run %d: %d agents converged in %v", run, len(g.Net.Nodes), time.Since(t0).Round(time.Millisecond))
		allocs := runChecked(t, g, cfg)
		checkSimulation(t, g, allocs)
		tables = append(tables, classTable(allocs, RTTClasses(g.Clusters, simTol)))
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if tables[0] != tables[1] {
		t.Fatalf("same seed, different tables:\n%s\nvs\n%s", tables[0], tables[1])
	}
}

// checkSimulation checks what the allocations of a whole run show beyond
// each job's rules: the flood reached every agent whenever the job asked
// for more processes than a site holds, and a spread over more processes
// than hosts used every host.
func checkSimulation(t *testing.T, g *Grid5000, allocs []Allocation) {
	t.Helper()
	agents := len(g.Net.Nodes)
	for _, a := range allocs {
		if a.Dropped != 0 {
			t.Errorf("%s n=%d: %d adverts dropped", a.Strategy, a.N, a.Dropped)
		}
		if a.Adverts == 0 || a.Reached < 1 || a.Kept > a.Reached {
			t.Errorf("%s n=%d: %d adverts, %d agents reached, %d offers kept", a.Strategy, a.N, a.Adverts, a.Reached, a.Kept)
		}
		if a.Strategy == job.Spread && a.N > agents && (a.Reached != agents || len(a.Hosts) != agents) {
			t.Errorf("spread n=%d over %d agents: %d reached, %d used", a.N, agents, a.Reached, len(a.Hosts))
		}
		if a.Time <= 0 || a.Time > g.cfg.Submitter.Deadline {
			t.Errorf("%s n=%d: allocation took %v", a.Strategy, a.N, a.Time)
		}
		// The bound is a figure of the opt-in sweep, on a machine
		// left to it: in CI it is logged, as a timed check on a shared
		// machine would measure the load.
		if a.Time > maxAllocation && fullSweep() {
			t.Errorf("%s n=%d: allocation took %v, more than %v", a.Strategy, a.N, a.Time, maxAllocation)
		}
		t.Logf("%s n=%d: allocated in %v, %.1f advert messages per agent", a.Strategy, a.N, a.Time.Round(time.Millisecond), float64(a.Adverts)/float64(agents))
	}
}

package sim

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/zorilla-p2p/zorilla/job/lifecycle"
	"github.com/zorilla-p2p/zorilla/overlay"
)

// Config is one run: the network, the jobs, the faults and the seed.
type Config struct {
	Agents int
	Jobs   int
	Seed   uint64
	// Topology is "grid5000" (the six sites and eight clusters of the
	// P2P-MPI experiment, scaled to Agents) or "internet" (Regions regions
	// with seeded RTTs, NATShare of the agents behind NAT).
	Topology string
	Regions  int
	NATShare float64
	// Mix is the job mix (see Mix).
	Mix Mix
	// Submit is the span over which jobs are submitted; Duration is when
	// the run stops (jobs not ended then count as waiting or running).
	Submit   time.Duration
	Duration time.Duration
	// Faults are the fault kinds on, with their rates.
	Faults Faults
	// Neighbours and LongRange are the overlay's neighbour set: the k
	// nearest candidates and a few random ones (overlay.SelectNeighbours).
	// Candidates is how many peers an agent's overlay table holds (the
	// overlay's MaxKnown). Rounds is how many rounds of the neighbour
	// exchange the overlay runs before the run starts.
	Neighbours, LongRange, Candidates, Rounds int
	// FullView starts every agent knowing every other, as the real
	// Grid'5000 reproduction's agents do once its DHT has converged
	// (testnet.SimOverlay: a table that holds them all); else an agent
	// starts from its bootstrap peers and learns the others by the
	// exchange. It needs Candidates of Agents-1.
	FullView bool
	// Lifecycle is every submitter's configuration of its jobs' lives.
	Lifecycle lifecycle.Config
	// Hooks inject bugs, for tests that show the invariants catch them.
	Hooks Hooks

	trace io.Writer // where Grid5000's runs write their traces
}

// Hooks are deliberate bugs for tests of the checker.
type Hooks struct {
	// KeepLeaseAfterRun: a worker forgets to end a lease once its job's
	// processes there are gone.
	KeepLeaseAfterRun bool
	// NoFence: a worker cut off from a job's submitter never freezes its
	// processes at the job's fence.
	NoFence bool
}

// Mix is the shape of the jobs: sizes drawn from Sizes, Replicated of them
// with r = 2, Malleable of them malleable (MIN = n/2), Concentrate of them
// placed with concentrate (the others spread), Failing of them with a
// rank that exits non-zero, each rank running RunTime (±50%).
type Mix struct {
	Sizes       []int
	Replicated  float64
	Malleable   float64
	Concentrate float64
	Failing     float64
	RunTime     time.Duration
}

// Faults are the fault kinds and their rates. A zero rate turns a kind off.
type Faults struct {
	// Crash is the share of agents that crash once during the run; each
	// restarts after Down (±50%).
	Crash float64
	Down  time.Duration
	// SubmitterCrash is the share of jobs whose submitter's agent crashes
	// while the job runs.
	SubmitterCrash float64
	// Partitions is how many times a whole site (or region) is cut off,
	// for Cut (±50%) each.
	Partitions int
	Cut        time.Duration
	// Loss is the chance a message is lost; Spike the chance it is
	// delayed by SpikeDelay more.
	Loss, Spike float64
	SpikeDelay  time.Duration
	// Slow is the share of hosts that stage and run SlowFactor times
	// slower.
	Slow       float64
	SlowFactor float64
	// Skew is the largest clock offset of an agent (uniform in ±Skew).
	Skew time.Duration
	// Liars is the share of agents that offer slots they then refuse to
	// commit, and flood forged adverts now and then.
	Liars float64
}

// DefaultFaults returns the default rate of each fault kind named (crash,
// partition, loss, slow, skew, liar; "all" for every one).
func DefaultFaults(kinds []string) (Faults, error) {
	var f Faults
	for _, k := range kinds {
		switch strings.TrimSpace(k) {
		case "":
		case "all":
			for _, k := range FaultKinds() {
				g, _ := DefaultFaults([]string{k})
				f = merge(f, g)
			}
		case "crash":
			f.Crash, f.Down, f.SubmitterCrash = 0.02, 30*time.Second, 0.02
		case "partition":
			f.Partitions, f.Cut = 2, 40*time.Second
		case "loss":
			f.Loss, f.Spike, f.SpikeDelay = 0.005, 0.01, 500*time.Millisecond
		case "slow":
			f.Slow, f.SlowFactor = 0.05, 4
		case "skew":
			f.Skew = 2 * time.Second
		case "liar":
			f.Liars = 0.01
		default:
			return f, fmt.Errorf("sim: unknown fault kind %q (want %s)", k, strings.Join(FaultKinds(), ","))
		}
	}
	return f, nil
}

// FaultKinds names the fault kinds.
func FaultKinds() []string { return []string{"crash", "partition", "loss", "slow", "skew", "liar"} }

func merge(a, b Faults) Faults {
	a.Crash, a.Down, a.SubmitterCrash = max(a.Crash, b.Crash), max(a.Down, b.Down), max(a.SubmitterCrash, b.SubmitterCrash)
	a.Partitions, a.Cut = max(a.Partitions, b.Partitions), max(a.Cut, b.Cut)
	a.Loss, a.Spike, a.SpikeDelay = max(a.Loss, b.Loss), max(a.Spike, b.Spike), max(a.SpikeDelay, b.SpikeDelay)
	a.Slow, a.SlowFactor = max(a.Slow, b.Slow), max(a.SlowFactor, b.SlowFactor)
	a.Skew, a.Liars = max(a.Skew, b.Skew), max(a.Liars, b.Liars)
	return a
}

// Names lists the fault kinds on, in a fixed order.
func (f Faults) Names() []string {
	var out []string
	on := map[string]bool{"crash": f.Crash > 0 || f.SubmitterCrash > 0, "partition": f.Partitions > 0,
		"loss": f.Loss > 0 || f.Spike > 0, "slow": f.Slow > 0, "skew": f.Skew > 0, "liar": f.Liars > 0}
	for _, k := range FaultKinds() {
		if on[k] {
			out = append(out, k)
		}
	}
	return out
}

// DefaultConfig returns a run of agents agents and jobs jobs on the
// synthetic internet, without faults.
func DefaultConfig(agents, jobs int, seed uint64) Config {
	return Config{
		Agents: agents, Jobs: jobs, Seed: seed,
		Topology: "internet",
		// 16 regions: continents and large countries; 30% behind NAT, a
		// share of home machines a volunteer network would have.
		Regions: 16, NATShare: 0.3,
		Mix: Mix{Sizes: []int{1, 4, 16, 64}, Replicated: 0.2, Malleable: 0.1, Concentrate: 0.5, Failing: 0.02,
			RunTime: 60 * time.Second},
		// Jobs come over 5 minutes and the run lasts 20: long enough for
		// a job submitted last to search its full deadline, restart twice
		// and run.
		Submit: 5 * time.Minute, Duration: 20 * time.Minute,
		// The overlay's neighbours (overlay.DefaultConfig: K nearest and
		// Random long-range), from tables of 48 peers: a real agent knows
		// up to MaxKnown (256), but 48 already find each agent neighbours
		// of its own region, and keep 100,000 agents within 2 GB. 36
		// rounds of the exchange, 3 minutes at its interval: the
		// neighbours of 300 to 10,000 agents settle in about 12, and the
		// inbound leases of the neighbours they left on the way end
		// within 24 more (InboundLease).
		Neighbours: overlay.DefaultConfig().K, LongRange: overlay.DefaultConfig().Random, Candidates: 48, Rounds: 36,
		Lifecycle: lifecycle.DefaultConfig(),
	}
}

// Validate reports a Config no run can follow.
func (c Config) Validate() error {
	switch {
	case c.Agents < 2:
		return fmt.Errorf("sim: need at least 2 agents, got %d", c.Agents)
	case c.Jobs < 0:
		return fmt.Errorf("sim: jobs must not be negative, got %d", c.Jobs)
	case c.Topology != "grid5000" && c.Topology != "internet":
		return fmt.Errorf("sim: topology %q: want grid5000 or internet", c.Topology)
	case c.Topology == "internet" && (c.Regions < 1 || c.NATShare < 0 || c.NATShare > 0.9):
		return fmt.Errorf("sim: internet: need regions >= 1 and a NAT share in [0, 0.9], got %d and %v", c.Regions, c.NATShare)
	case len(c.Mix.Sizes) == 0 || c.Mix.RunTime <= 0:
		return errors.New("sim: the job mix needs sizes and a run time")
	case c.Duration <= 0 || c.Submit < 0:
		return fmt.Errorf("sim: need a positive duration and a submission span >= 0, got %v and %v", c.Duration, c.Submit)
	case c.Neighbours < 1 || c.LongRange < 0 || c.Candidates < c.Neighbours+c.LongRange || c.Rounds < 0:
		return fmt.Errorf("sim: need neighbours >= 1, long-range >= 0, candidates >= both and rounds >= 0, got %d, %d, %d, %d",
			c.Neighbours, c.LongRange, c.Candidates, c.Rounds)
	case c.FullView && c.Candidates < c.Agents-1:
		return fmt.Errorf("sim: a full view needs candidates >= agents-1 (%d), got %d", c.Agents-1, c.Candidates)
	}
	if err := c.Lifecycle.Validate(); err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	for _, n := range c.Mix.Sizes {
		if n < 1 {
			return fmt.Errorf("sim: job size %d: must be at least 1", n)
		}
	}
	return nil
}

// ParseSizes reads a comma-separated list of job sizes.
func ParseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("sim: job size %q: %w", f, err)
		}
		out = append(out, n)
	}
	sort.Ints(out)
	return out, nil
}

package sim

import (
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/testnet"
)

// Grid5000Config is the configuration of the simulated P2P-MPI
// experiment: the 350 hosts of Table 1, each knowing every other (as in
// the real reproduction, testnet.SimOverlay; Config.FullView), and the
// reproduction's submitter settings (testnet.DefaultGrid5000Config).
func Grid5000Config(seed uint64) Config {
	c := DefaultConfig(350, 0, seed)
	c.Topology, c.Candidates, c.FullView = "grid5000", c.Agents-1, true
	c.Lifecycle = testnet.DefaultGrid5000Config(1).Submitter.Config
	return c
}

// Grid5000 runs the experiment's dry-run jobs, one at a time, each on a
// fresh idle network of cfg (Grid5000Config) and submitted from the same
// nancy host: for every n, every strategy. It returns each job's
// allocation as the real reproduction tallies it (testnet.Tally).
func Grid5000(cfg Config, strategies []job.Strategy, ns []int) ([]testnet.Allocation, error) {
	var out []testnet.Allocation
	for _, n := range ns {
		for _, s := range strategies {
			a, err := grid5000Job(cfg, s, n)
			if err != nil {
				return nil, err
			}
			out = append(out, a)
		}
	}
	return out, nil
}

func grid5000Job(cfg Config, s job.Strategy, n int) (testnet.Allocation, error) {
	w, err := New(cfg)
	if err != nil {
		return testnet.Allocation{}, err
	}
	if cfg.trace != nil {
		w.Trace(cfg.trace)
	}
	d := job.NewDescription("prog", nil, n)
	d.Strategy = s
	d.Deadline = cfg.Lifecycle.Deadline
	j := w.newJob(d, 0, time.Second) // agent 0 is nancy's first host
	j.dryRun = true
	r := w.Run()
	if r.Violation != nil {
		return testnet.Allocation{}, fmt.Errorf("sim: grid5000 %s n=%d: %s", s, n, r.Violation)
	}
	if j.rec.State != job.Done {
		return testnet.Allocation{}, fmt.Errorf("sim: grid5000 %s n=%d: %s (%s)", s, n, j.rec.State, j.rec.Reason)
	}
	a, err := testnet.Tally(j.rec, w.placed(int(j.sub)))
	if err != nil {
		return testnet.Allocation{}, err
	}
	a.Time, a.Adverts = reservingToEnd(j.rec.History), uint64(j.adverts)
	for _, f := range j.floods {
		for _, seen := range f.maxSeen {
			if seen > 0 {
				a.Reached++
			}
		}
	}
	return a, nil
}

// placed locates agents as testnet.Tally wants them: their site, P and
// true RTT from the submitter sub.
func (w *World) placed(sub int) func(peer.ID) (testnet.Placed, bool) {
	return func(p peer.ID) (testnet.Placed, bool) {
		i, ok := w.byID[p]
		if !ok {
			return testnet.Placed{}, false
		}
		at := testnet.Placed{Agent: int(i), Site: w.topo.groups[w.topo.group(int(i))], P: w.agents[i].policy.MaxProcs}
		if int(i) != sub {
			at.RTT = w.topo.direct(sub, int(i))
		}
		return at, true
	}
}

// reservingToEnd is the time from the first Reserving to the last state
// change (Done, for a dry run), as the reproduction measures it.
func reservingToEnd(h []job.StateChange) time.Duration {
	for _, e := range h {
		if e.State == job.Reserving {
			return h[len(h)-1].At.Sub(e.At)
		}
	}
	return 0
}

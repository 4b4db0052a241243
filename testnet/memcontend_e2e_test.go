package testnet

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/node"
)

// The rule on contested memory (the out-of-core row "agents' swap"):
// three jobs of 4 ranks, one rank per host, each declaring 311M a rank,
// submitted at once to 4 agents lending 2.5 times that (J and the cores
// would take all three: memory alone keeps the third out). The contested
// memory must go to one job by the rule every agent applies, so two jobs
// run together while the third waits, and the third runs when one of
// them ends, rather than the second and third each holding some of the
// hosts and waiting for the rest until their deadlines, the first job
// running alone. Several rounds, since such a split would come from a
// race (an ask to yield overtaking the offer it is about).
func TestContendedMemoryGoesToOneJob(t *testing.T) {
	if testing.Short() {
		t.Skip("5 agents, real processes")
	}
	const per = int64(311) << 20
	ln := shareNet(t, func(cfg *node.Config) {
		cfg.MaxJobs, cfg.Cores, cfg.MaxProcs, cfg.Memory = 3, 3, 1, 5*per/2
	})
	dir := t.TempDir()
	for round := range 3 {
		var ws []*watcher
		gates := map[job.ID]string{}
		for i := range 3 {
			gate := filepath.Join(dir, fmt.Sprintf("r%dj%d", round, i))
			d, prog := gatedJob(t, ln, gate, "", per)
			w := submitJob(t, ln.Nodes[0], d, prog)
			ws, gates[w.id] = append(ws, w), gate
		}
		runs := awaitTwoOfThree(t, ln, ws, round)
		// The third runs once one of the two ends.
		openGate(t, gates[runs[0].id])
		if rec := runs[0].wait(t); rec.State != job.Done {
			t.Fatalf("round %d: job %s ended %s: %s", round, runs[0].id, rec.State, rec.Reason)
		}
		third := runs[2]
		third.awaitState(t, job.Running)
		for _, w := range ws {
			openGate(t, gates[w.id])
		}
		for _, w := range ws {
			if rec := w.wait(t); rec.State != job.Done {
				t.Fatalf("round %d: job %s ended %s: %s", round, w.id, rec.State, rec.Reason)
			}
		}
		awaitNoLeases(t, ln.Net, 15*time.Second, "after the round")
	}
}

// awaitTwoOfThree waits (15 s at most: the jobs' deadlines are a minute)
// until two of the three jobs ws run on all 4 pool hosts while the
// third runs on none, and returns the two running, then the third.
func awaitTwoOfThree(t *testing.T, ln *launchNet, ws []*watcher, round int) []*watcher {
	t.Helper()
	pool := []int{1, 2, 3, 4}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var running, waiting []*watcher
	err := ln.Await(ctx, "two jobs running together, the third waiting", func() bool {
		running, waiting = nil, nil
		for _, w := range ws {
			if committedOn(ln.Net, w.id, pool...) {
				running = append(running, w)
			} else {
				waiting = append(waiting, w)
			}
		}
		if len(running) != 2 {
			return false
		}
		for _, i := range pool {
			if committedOn(ln.Net, waiting[0].id, i) {
				return false // the third ran beyond memory, or swaps in now
			}
		}
		return true
	})
	if err != nil {
		for _, w := range ws {
			t.Log(w.describe())
		}
		t.Fatalf("round %d: %v (%d running); leases:\n%s", round, err, len(running), describeLeases(leasesOf(ln.Net)))
	}
	return append(running, waiting[0])
}

// committedOn reports whether every agent in idx holds a committed lease
// for job id: the job runs there.
func committedOn(net *Net, id job.ID, idx ...int) bool {
	for _, i := range idx {
		if l, ok := net.Nodes[i].Leases().ByJob(id); !ok || !l.Committed {
			return false
		}
	}
	return true
}

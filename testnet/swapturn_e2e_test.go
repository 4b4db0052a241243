package testnet

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/internal/gang"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/submitter"
	"github.com/zorilla-p2p/zorilla/node"
)

// The agents swap jobs by checkpoint when memory runs out. Two
// heat jobs of equal priority on the same 4 agents, whose memory does not
// fit there together (700M per process, 1G lent, one process per agent):
// the second waits for memory, and once the first has run its swap slice
// every host swaps it out by checkpoint for the second, which runs its
// slice and is swapped out in turn. Both end with the result of a solo
// run, each swapped out at least once, the switches in their records.

// turnHeat is heat on 4 ranks, 80 steps of 50 ms (4 s alone), a
// checkpoint at most every 300 ms; cells makes each job's files its own.
func turnHeat(cells string, slice time.Duration) job.Description {
	d := job.NewDescription("heat", []string{"80", "50", cells}, 4)
	d.Strategy, d.Require.Labels = job.Spread, []string{poolLabel}
	d.MemPerProc, d.SwapSlice = 700<<20, slice
	d.CheckpointEvery, d.Deadline = 300*time.Millisecond, 3*time.Minute
	return d
}

func TestSwapTurnsWhenMemoryRunsOut(t *testing.T) {
	if testing.Short() {
		t.Skip("5 agents, real processes, checkpoints")
	}
	ln := shareNet(t, func(cfg *node.Config) {
		cfg.MaxJobs, cfg.Cores, cfg.MaxProcs, cfg.Memory = 2, 2, 1, 1<<30
	})
	prog := buildExample(t, ln.Nodes[0], "heat")
	cells := []string{"3000", "3003"}
	// The solo runs, one after the other.
	var want []string
	for _, c := range cells {
		d := turnHeat(c, 0)
		d.Args[1] = "0" // no pause: the same result, sooner
		w := submitJob(t, ln.Nodes[0], d, prog)
		if rec := w.wait(t); rec.State != job.Done || len(rec.Runs) != 1 {
			t.Fatalf("solo run ended %s after %d runs: %s\n%s", rec.State, len(rec.Runs), rec.Reason, w.describe())
		}
		want = append(want, heatSum(t, w))
		ln.awaitCheckpointsGone(t, w.end)
	}

	const slice = 1500 * time.Millisecond
	a := submitJob(t, ln.Nodes[0], turnHeat(cells[0], slice), prog)
	a.awaitState(t, job.Running)
	b := submitJob(t, ln.Nodes[0], turnHeat(cells[1], slice), prog)
	sub := ln.Nodes[0].Submitter()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var recs [2]job.Record
	err := ln.Await(ctx, "both jobs done", func() bool {
		ended := true
		for i, id := range []job.ID{a.id, b.id} {
			rec, err := sub.Get(id)
			if err != nil {
				return false
			}
			recs[i] = rec
			ended = ended && rec.State.Terminal() && rec.State != job.Stopped
		}
		return ended
	})
	if err != nil {
		t.Fatalf("%v\na: %s\nb: %s\nleases:\n%s", err, describeRecord(sub, a.id), describeRecord(sub, b.id), describeLeases(leasesOf(ln.Net)))
	}
	checkSwapTurns(t, ln, sub, recs[:], want)
}

// The overlapped swap policy (agent --swap-policy overlapped): the job
// taking the place of one swapped out is admitted at once and starts while
// that one runs on to its next checkpoint. A stop waits for the program's
// next Comm.Checkpoint, which heat calls once a step; with steps of 3 s,
// the first swap-out (planned at the first checkpoint) waits a whole step
// and later ones (planned when a resumed run's 1.5 s slice ends) half of
// one, so the other job, admitted at once, runs meanwhile; under the
// sequential policy (TestSwapTurnsWhenMemoryRunsOut) it is admitted only
// once the first has ended.
func TestSwapTurnsOverlapped(t *testing.T) {
	if testing.Short() {
		t.Skip("5 agents, real processes, checkpoints")
	}
	ln := shareNet(t, func(cfg *node.Config) {
		cfg.MaxJobs, cfg.Cores, cfg.MaxProcs, cfg.Memory = 2, 2, 1, 1<<30
		cfg.SwapPolicy = gang.Overlapped
	})
	prog := buildExample(t, ln.Nodes[0], "heat")
	// heat on 4 ranks, 4 steps of 3 s (12 s alone), checkpointing at
	// every step.
	heat := func(cells string, mem int64, slice time.Duration) job.Description {
		d := job.NewDescription("heat", []string{"4", "3000", cells}, 4)
		d.Strategy, d.Require.Labels = job.Spread, []string{poolLabel}
		d.MemPerProc, d.SwapSlice = mem, slice
		d.CheckpointEvery, d.Deadline = 300*time.Millisecond, 3*time.Minute
		return d
	}
	cells := []string{"3000", "3003"}
	want := referenceSums(t, ln, prog, cells, func(c string) job.Description { return heat(c, 300<<20, 0) })

	const slice = 1500 * time.Millisecond
	a := submitJob(t, ln.Nodes[0], heat(cells[0], 700<<20, slice), prog)
	a.awaitState(t, job.Running)
	b := submitJob(t, ln.Nodes[0], heat(cells[1], 700<<20, slice), prog)
	sub := ln.Nodes[0].Submitter()
	recs := awaitAllDone(t, ln, sub, []job.ID{a.id, b.id}, 3*time.Minute)
	checkSwapTurns(t, ln, sub, recs, want)
	together := runningTogether(recs[0], recs[1], time.Now())
	t.Logf("the two jobs ran together %v", together.Round(time.Millisecond))
	if together < 500*time.Millisecond {
		t.Fatalf("the two jobs ran together %v: want the incoming one started while the outgoing one checkpointed", together)
	}
}

// checkSwapTurns checks jobs the agents swapped by checkpoint on their
// own: each is done with its reference checksum (want, in order), was
// swapped out at least once and only because its swap slice was over.
func checkSwapTurns(t *testing.T, ln *launchNet, sub *submitter.Submitter, recs []job.Record, want []string) {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			for _, rec := range recs {
				t.Logf("job %s:\n%s%s", rec.ID, describeRecord(sub, rec.ID), describeSwitchList(rec.Switches))
			}
		}
	})
	for i, rec := range recs {
		if rec.State != job.Done {
			t.Fatalf("job %s ended %s: %s\n%s", rec.ID, rec.State, rec.Reason, describeRecord(sub, rec.ID))
		}
		if got := finalHeatSum(t, ln.Nodes[0], rec.ID); got != want[i] {
			t.Fatalf("job %s: checksum %s, the reference run's %s", rec.ID, got, want[i])
		}
		swaps := 0
		for _, s := range rec.Switches {
			if s.To == job.PhaseSwapped {
				swaps++
				if !strings.Contains(s.Why, "swap slice") {
					t.Errorf("job %s: swapped out for %q, want its swap slice over", rec.ID, s.Why)
				}
			}
		}
		tu := rec.TimeAt(time.Now())
		if swaps == 0 || len(rec.Runs) < 2 || tu.Swapped <= 0 {
			t.Fatalf("job %s: %d swaps, %d runs, %v swapped out: want each job swapped out at least once\n%s",
				rec.ID, swaps, len(rec.Runs), tu.Swapped, describeRecord(sub, rec.ID))
		}
		t.Logf("job %s's switches:\n%s", rec.ID, describeSwitchList(rec.Switches))
		t.Logf("job %s: %d runs, swapped out %d times, running %v, swapped out %v, end to end %v", rec.ID, len(rec.Runs), swaps,
			tu.Running.Round(time.Millisecond), tu.Swapped.Round(time.Millisecond), rec.Updated.Sub(rec.Created).Round(time.Millisecond))
	}
}

func describeSwitchList(sw []job.Switch) string {
	out := ""
	for _, s := range sw {
		out += fmt.Sprintf("  switch %s %s %s\n", s.At.Format("04:05.000"), s.To, s.Why)
	}
	return out
}

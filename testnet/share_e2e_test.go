package testnet

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/node"
)

// Time sharing on 4 loopback agents (agents 1 to 4, each one
// core and J=1 for preemption; agent 0 only submits).

// shareNet starts agent 0 (the submitter, outside the pool) and 4 pool
// agents configured by pool.
func shareNet(t testing.TB, pool func(cfg *node.Config)) *launchNet {
	return startLaunchNet(t, 5, 1, func(i int, cfg *node.Config) {
		cfg.Labels = nil
		if i > 0 {
			cfg.Labels = []string{poolLabel}
			pool(cfg)
		}
	})
}

// A job of priority 5 submitted while a priority-0 heat job holds every
// host runs at once: the heat job is swapped out by checkpoint, resumes by
// itself once the hosts free, and ends with the result of a solo run. Its
// record shows the time it spent swapped out and the switch.
func TestPreemptBySwap(t *testing.T) {
	if testing.Short() {
		t.Skip("5 agents, real processes")
	}
	ln := shareNet(t, func(cfg *node.Config) {
		cfg.MaxJobs, cfg.MaxPriority = 1, 10
	})
	prog := buildExample(t, ln.Nodes[0], "heat")
	low := func() job.Description {
		d := job.NewDescription("heat", []string{"40", "50", "3000"}, 4)
		d.Strategy, d.Require.Labels = job.Spread, []string{poolLabel}
		d.CheckpointEvery, d.Deadline = 300*time.Millisecond, 2*time.Minute
		return d
	}
	ref := submitJob(t, ln.Nodes[0], low(), prog)
	if rec := ref.wait(t); rec.State != job.Done {
		t.Fatalf("solo run ended %s: %s\n%s", rec.State, rec.Reason, ref.describe())
	}
	want := heatSum(t, ref)
	ln.awaitCheckpointsGone(t, ref.end)
	ln.awaitClean(t, ref.id, nil)

	w := submitJob(t, ln.Nodes[0], low(), prog)
	ln.awaitCheckpoint(t, w, 2)
	hd := job.NewDescription("heat", []string{"6", "50", "3000"}, 4)
	hd.Strategy, hd.Require.Labels, hd.Priority = job.Spread, []string{poolLabel}, 5
	hd.Deadline = time.Minute
	hi := submitJob(t, ln.Nodes[0], hd, prog)
	hiRec := hi.wait(t)
	if hiRec.State != job.Done {
		t.Fatalf("high-priority job ended %s: %s\n%s\nlow: %s", hiRec.State, hiRec.Reason, hi.describe(), w.describe())
	}
	stopped := w.wait(t) // the first run's feed ends at the swap
	if stopped.State != job.Stopped || !strings.Contains(stopped.Reason, "preempted by job "+string(hi.id)) {
		t.Fatalf("low job after the preemption: %s (%s)\n%s", stopped.State, stopped.Reason, w.describe())
	}
	rest := watchJob(ln.Nodes[0], w.id)
	rec := rest.wait(t)
	if rec.State != job.Done {
		t.Fatalf("preempted job ended %s: %s\n%s", rec.State, rec.Reason, rest.describe())
	}
	if got := heatSum(t, rest); got != want {
		t.Fatalf("preempted job's checksum %s, the solo run's %s", got, want)
	}
	if len(rec.Runs) != 2 || rec.Runs[1].From == 0 {
		t.Fatalf("runs %+v: want a second run from a checkpoint", rec.Runs)
	}
	hiRunning := firstEntered(hiRec)[job.Running]
	if !hiRunning.Before(rec.Runs[1].Started) {
		t.Errorf("the high-priority job ran at %v, after the preempted job resumed at %v", hiRunning, rec.Runs[1].Started)
	}
	tu := rec.TimeAt(time.Now())
	phases := make([]job.Phase, 0, len(rec.Switches))
	for _, s := range rec.Switches {
		phases = append(phases, s.To)
	}
	if tu.Swapped <= 0 || tu.Running <= 0 || !slices.Contains(phases, job.PhaseSwapped) {
		t.Errorf("time %+v, switches %v: want running and swapped-out time and a swap", tu, phases)
	}
	t.Logf("high-priority job ran %v after submission; the low one ran %v, swapped out %v",
		hiRunning.Sub(hiRec.Created).Round(time.Millisecond), tu.Running.Round(time.Millisecond), tu.Swapped.Round(time.Millisecond))
}

// An owner's cap: a submitter capped at 0 preempts nothing with priority
// 50; its job waits for the hosts and runs after the first ends.
func TestPreemptCapped(t *testing.T) {
	if testing.Short() {
		t.Skip("5 agents, real processes")
	}
	ln := shareNet(t, func(cfg *node.Config) { cfg.MaxJobs = 1 }) // --max-priority 0
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	prog := uploadScript(t, ln.Nodes[0], "while [ ! -e "+gate+" ]; do sleep 0.05; done")
	d := job.NewDescription("prog.sh", nil, 4)
	d.Strategy, d.Require.Labels = job.Spread, []string{poolLabel}
	first := submitJob(t, ln.Nodes[0], d, prog)
	first.awaitState(t, job.Running)
	d.Priority, d.Deadline = 50, time.Minute
	second := submitJob(t, ln.Nodes[0], d, prog)
	second.awaitState(t, job.Reserving)
	// The second job waits: give it time to preempt if it (wrongly) could.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_ = ln.Await(ctx, "the first job to end", func() bool {
		rec, _ := ln.Nodes[0].Submitter().Get(first.id)
		return rec.State != job.Running
	})
	if rec, _ := ln.Nodes[0].Submitter().Get(first.id); rec.State != job.Running {
		t.Fatalf("a capped priority stopped the running job: %s (%s)", rec.State, rec.Reason)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if rec := first.wait(t); rec.State != job.Done {
		t.Fatalf("first job ended %s: %s", rec.State, rec.Reason)
	}
	if rec := second.wait(t); rec.State != job.Done {
		t.Fatalf("second job ended %s: %s\n%s", rec.State, rec.Reason, second.describe())
	}
}

// A job that takes no checkpoint is frozen in place, never killed: a
// priority-5 job runs at once on its hosts; the frozen job then goes on
// where it stopped, in the same run, and ends well. Its record shows the
// time it spent frozen.
func TestPreemptByFreeze(t *testing.T) {
	if testing.Short() {
		t.Skip("5 agents, real processes")
	}
	ln := shareNet(t, func(cfg *node.Config) {
		cfg.MaxJobs, cfg.MaxPriority = 1, 10
	})
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	// Counts while it waits for the gate: a frozen copy stops counting.
	low := uploadScript(t, ln.Nodes[0], "i=0; while [ ! -e "+gate+" ]; do i=$((i+1)); sleep 0.05; done; echo counted $i")
	d := job.NewDescription("prog.sh", nil, 4)
	d.Strategy, d.Require.Labels = job.Spread, []string{poolLabel}
	w := submitJob(t, ln.Nodes[0], d, low)
	w.awaitState(t, job.Running)
	hi := uploadScript(t, ln.Nodes[0], "echo high")
	hd := d
	hd.Priority, hd.Deadline = 5, time.Minute
	h := submitJob(t, ln.Nodes[0], hd, hi)
	hRec := h.wait(t)
	if hRec.State != job.Done {
		t.Fatalf("high-priority job ended %s: %s\n%s\nlow: %s", hRec.State, hRec.Reason, h.describe(), w.describe())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var rec job.Record
	if err := ln.Await(ctx, "the frozen job continued", func() bool {
		rec, _ = ln.Nodes[0].Submitter().Get(w.id)
		return rec.Phase() == job.PhaseRunning && rec.TimeAt(time.Now()).Frozen > 0
	}); err != nil {
		t.Fatalf("%v: phase %s, switches %+v\n%s", err, rec.Phase(), rec.Switches, w.describe())
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rec = w.wait(t)
	if rec.State != job.Done || len(rec.Runs) > 1 || rec.Attempts != 1 {
		t.Fatalf("frozen job ended %s (%s) after %d attempts: want done in its one run\n%s", rec.State, rec.Reason, rec.Attempts, w.describe())
	}
	if n := len(linesMatching(w.updates(), regexp.MustCompile(`^counted \d+$`))); n != 4 {
		t.Fatalf("%d of 4 ranks finished counting", n)
	}
	tu := rec.TimeAt(time.Now())
	if tu.Frozen <= 0 || tu.Swapped != 0 {
		t.Fatalf("time %+v: want frozen time and no swap", tu)
	}
	t.Logf("frozen %v while the high-priority job ran (it ran %v after submission)",
		tu.Frozen.Round(time.Millisecond), firstEntered(hRec)[job.Running].Sub(hRec.Created).Round(time.Millisecond))
}

// A host that dies while a job is swapped out costs the job nothing: its
// checkpoint's files are the submitter's, and it resumes from them on
// the hosts left. Five pool agents; the heat job takes four, the job of
// priority 5 three, and one of the heat job's hosts that the high job does
// not use is stopped while it waits.
func TestSwappedOutSurvivesHostLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("6 agents, real processes, a host stopped")
	}
	swappedOutHostLoss(t, 3, false)
}

// The high job loses one of its own hosts while the job it swapped out
// waits: it restarts from its checkpoint on the hosts left (where the
// swapped-out job waits in the lines, behind it) and ends, then the
// swapped-out job resumes and ends with the solo run's checksum. Five
// pool agents; both jobs take four, and the stopped host is one of both.
func TestSwappedOutHighLosesHost(t *testing.T) {
	if testing.Short() {
		t.Skip("6 agents, real processes, a host stopped")
	}
	swappedOutHostLoss(t, 4, true)
}

// swappedOutHostLoss runs a heat job of 4 ranks, swaps it out for a
// priority-5 heat job of hiProcs ranks, and stops a host of the first
// job's run: one the high job uses too when hiHost, else one it does not.
func swappedOutHostLoss(t *testing.T, hiProcs int, hiHost bool) {
	ln := startLaunchNet(t, 6, 1, func(i int, cfg *node.Config) {
		cfg.Labels = nil
		if i > 0 {
			cfg.Labels = []string{poolLabel}
			cfg.MaxJobs, cfg.MaxPriority = 1, 10
		}
	})
	prog := buildExample(t, ln.Nodes[0], "heat")
	low := job.NewDescription("heat", []string{"40", "50", "3000"}, 4)
	low.Strategy, low.Require.Labels = job.Spread, []string{poolLabel}
	low.CheckpointEvery, low.Deadline = 300*time.Millisecond, 2*time.Minute
	ref := submitJob(t, ln.Nodes[0], low, prog)
	if rec := ref.wait(t); rec.State != job.Done {
		t.Fatalf("solo run ended %s: %s\n%s", rec.State, rec.Reason, ref.describe())
	}
	want := heatSum(t, ref)
	ln.awaitCheckpointsGone(t, ref.end)
	ln.awaitClean(t, ref.id, nil)

	w := submitJob(t, ln.Nodes[0], low, prog)
	ln.awaitCheckpoint(t, w, 2)
	hd := job.NewDescription("heat", []string{"30", "50", "3000"}, hiProcs)
	hd.Strategy, hd.Require.Labels, hd.Priority, hd.Deadline = job.Spread, []string{poolLabel}, 5, time.Minute
	hd.CheckpointEvery = 300 * time.Millisecond
	hi := submitJob(t, ln.Nodes[0], hd, prog)
	hi.awaitState(t, job.Running)
	stopped := w.wait(t)
	if stopped.State != job.Stopped {
		t.Fatalf("low job: %s (%s)\n%s", stopped.State, stopped.Reason, w.describe())
	}
	hiRec, err := ln.Nodes[0].Submitter().Get(hi.id)
	if err != nil || hiRec.Plan == nil {
		t.Fatalf("high job's record: %v", err)
	}
	// A host of the swapped-out job's run that the high job uses (when
	// hiHost) or does not use: with 4 and 3 ranks on 5 hosts there is one.
	victim := -1
	for _, p := range stopped.Runs[0].Hosts {
		if slices.ContainsFunc(hiRec.Plan.Hosts, func(h job.HostPlan) bool { return h.Offer.Peer == p }) == hiHost {
			victim = ln.Index(p)
		}
	}
	if victim < 0 {
		t.Fatalf("no host of the swapped-out job's run %v that the high job's run %v uses: %v", stopped.Runs[0].Hosts, hiRec.Plan.Hosts, hiHost)
	}
	if err := ln.Stop(victim); err != nil {
		t.Fatal(err)
	}
	if rec := hi.wait(t); rec.State != job.Done {
		t.Fatalf("high job ended %s: %s\n%s", rec.State, rec.Reason, hi.describe())
	}
	rest := watchJob(ln.Nodes[0], w.id)
	rec := rest.wait(t)
	if rec.State != job.Done {
		t.Fatalf("swapped-out job ended %s: %s\n%s", rec.State, rec.Reason, rest.describe())
	}
	if got := heatSum(t, rest); got != want {
		t.Fatalf("checksum %s, the solo run's %s", got, want)
	}
	last := rec.Runs[len(rec.Runs)-1]
	if last.From == 0 || slices.Contains(last.Hosts, ln.Nodes[victim].ID()) {
		t.Fatalf("last run %+v: want it from a checkpoint, without the stopped host %d", last, victim)
	}
	t.Logf("host %d stopped while the job was swapped out; it resumed from checkpoint %d on the other 4", victim, last.From)
}

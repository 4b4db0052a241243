package worker

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

// Properties of PlanPreemption over random hosts: it only takes jobs of
// lower honoured priority, never one already preempted, only swaps jobs
// that have a checkpoint, each at most once; with a plan the advert is
// accepted, and without one nothing is touched; dropping any job from a
// plan gives the advert fewer processes (minimal).
func TestPlanPreemptionProperties(t *testing.T) {
	const G = int64(1) << 30
	rng := rand.New(rand.NewPCG(19, 1))
	t0 := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	planned := 0
	for trial := range 3000 {
		p := Policy{MaxJobs: 1 + rng.IntN(4), MaxProcs: 8, Cores: 1 + rng.IntN(8), Memory: int64(1+rng.IntN(8)) * G,
			OS: "linux", Arch: "amd64", MaxPriority: rng.IntN(10)}
		var hs []Holder
		var u Usage
		for i := range rng.IntN(5) {
			h := Holder{Job: proto.JobID(fmt.Sprintf("j%d", i)), Priority: rng.IntN(10),
				Since: Seniority{Since: t0.Add(time.Duration(rng.IntN(100)) * time.Second), Job: proto.JobID(fmt.Sprintf("j%d", i))},
				Cores: 1 + rng.IntN(2), Memory: MemHold{Declared: int64(rng.IntN(3)) * G, Used: int64(rng.IntN(2)) * G},
				Checkpoint: rng.IntN(2) == 0, Preempted: rng.IntN(6) == 0}
			hs = append(hs, h)
			if !h.Preempted {
				u.Jobs++
				u.Cores += h.Cores
			}
			u.Memory += h.Memory.Charge()
		}
		need := proto.Need{Job: "jnew", N: 1 + rng.IntN(4), R: 1, Priority: rng.IntN(12), MemPerProc: int64(rng.IntN(2)) * G}
		since := Seniority{Since: t0.Add(time.Hour), Job: "jnew"}
		plan, d := PlanPreemption(p, u, hs, "alice", need, since)
		prio := p.HonouredPriority("alice", need.Priority)
		byID := byJob(hs)
		if len(plan) > 0 {
			planned++
		}
		seen := map[proto.JobID]bool{}
		for _, pr := range plan {
			h := byID[pr.Job]
			switch {
			case seen[pr.Job]:
				t.Fatalf("trial %d: %s preempted twice: %v", trial, pr.Job, plan)
			case h.Preempted || h.Priority >= prio:
				t.Fatalf("trial %d: %+v taken for priority %d: %v", trial, h, prio, plan)
			case pr.Action == ActionSwap && !h.Checkpoint, pr.Action == ActionFreeze && h.Checkpoint:
				t.Fatalf("trial %d: %+v given %s", trial, h, pr.Action)
			}
			seen[pr.Job] = true
		}
		before := Decide(p, u, "alice", need)
		if len(plan) > 0 && (!d.Accept || before.Accept) {
			t.Fatalf("trial %d: plan %v but accept %v (before %v)", trial, plan, d.Accept, before.Accept)
		}
		for i := range plan {
			if less := Decide(p, usageAfter(u, byID, plan, i), "alice", need); less.Accept && less.Slots >= d.Slots {
				t.Fatalf("trial %d: plan %v not minimal: without %s still %d slots", trial, plan, plan[i].Job, less.Slots)
			}
		}
	}
	if planned < 100 {
		t.Fatalf("only %d of 3000 random hosts needed a preemption: the generator tests little", planned)
	}
}

// Properties of PlanTurn over random hosts and lines: each job is taken at
// most once, and only for a waiting job it may give way to (lower
// priority, or an equal whose turn is over, or nearly over when another
// job is taken at the same turn); every job it is taken for is
// let in; once the plan is done, the set is admitted in order, each job
// in turn; without a plan there is no set. The waiting jobs ask for one
// process each: a job let in without a preemption is counted with the
// offer it gets before the plan, and admitted after it could take more.
func TestPlanTurnProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 2))
	planned, sets := 0, 0
	for trial := range 3000 {
		p, hs, u, line := randomTurn(rng)
		turn := PlanTurn(p, u, hs, line)
		if len(turn.Plan) == 0 {
			if turn.Set != nil {
				t.Fatalf("trial %d: a set %v without a plan", trial, turn.Set)
			}
			continue
		}
		planned++
		if len(turn.Set) > 1 {
			sets++
		}
		if err := checkTurnPlan(p, hs, u, line, turn); err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
	}
	if planned < 100 || sets < 20 {
		t.Fatalf("%d plans, %d sets of several in 3000 trials: the generator tests little", planned, sets)
	}
}

// randomTurn is a host with 1 to 4 jobs running and 1 to 4 waiting, in
// the line's order.
func randomTurn(rng *rand.Rand) (Policy, []Holder, Usage, []Waiter) {
	const G = int64(1) << 30
	t0 := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	p := Policy{MaxJobs: 2 + rng.IntN(4), MaxProcs: 8, Cores: 2 + rng.IntN(8), Memory: int64(2+rng.IntN(6)) * G,
		OS: "linux", Arch: "amd64", MaxPriority: rng.IntN(3)}
	var hs []Holder
	var u Usage
	for i := range 1 + rng.IntN(4) {
		id := proto.JobID(fmt.Sprintf("j%d", i))
		h := Holder{Job: id, Priority: rng.IntN(3), Since: Seniority{Since: t0.Add(time.Duration(i) * time.Second), Job: id},
			Cores: 1, Memory: MemHold{Declared: int64(1+rng.IntN(2)) * G}, Checkpoint: rng.IntN(4) > 0,
			SwapSlice: time.Minute, Ran: time.Duration(rng.IntN(120)) * time.Second}
		hs = append(hs, h)
		u.Jobs++
		u.Cores += h.Cores
		u.Memory += h.Memory.Charge()
	}
	var line []Waiter
	for i := range 1 + rng.IntN(4) {
		id := proto.JobID(fmt.Sprintf("w%d", i))
		line = append(line, Waiter{Submitter: "alice", Since: Seniority{Since: t0.Add(time.Hour + time.Duration(i)*time.Second), Job: id},
			Need: proto.Need{Job: id, N: 1, R: 1, Priority: rng.IntN(3), MemPerProc: int64(1+rng.IntN(2)) * G, SwapSlice: time.Minute}})
	}
	slices.SortStableFunc(line, func(a, b Waiter) int { return b.Need.Priority - a.Need.Priority }) // the line's order
	return p, hs, u, line
}

// checkTurnPlan checks a turn PlanTurn made: no job taken twice, each for
// a job of the set, of lower priority or of equal priority with its turn
// over (or nearly, with another taken); and after the plan every job of
// the set is admitted.
func checkTurnPlan(p Policy, hs []Holder, u Usage, line []Waiter, turn Turn) error {
	byID, waiting := byJob(hs), map[proto.JobID]Waiter{}
	for _, w := range line {
		waiting[w.Need.Job] = w
	}
	seen := map[proto.JobID]bool{}
	for _, pr := range turn.Plan {
		h, w := byID[pr.Job], waiting[pr.For]
		prio := p.HonouredPriority(w.Submitter, w.Need.Priority)
		// duringSwitch: with another job taken, one within half its
		// slice of its turn's end may go too.
		nearly := len(turn.Plan) > 1 && h.SwapSlice > 0 && h.Ran+h.SwapSlice/2 >= h.SwapSlice
		equalTurn := h.Priority == prio && (h.turnOver() || nearly) && h.Checkpoint
		switch {
		case seen[pr.Job]:
			return fmt.Errorf("%s taken twice: %+v", pr.Job, turn)
		case !slices.Contains(turn.Set, pr.For):
			return fmt.Errorf("%s taken for %s, not let in: %+v", pr.Job, pr.For, turn)
		case h.Priority > prio || h.Priority == prio && !equalTurn:
			return fmt.Errorf("%+v taken for %s of priority %d", h, pr.For, prio)
		}
		seen[pr.Job] = true
	}
	after := usageAfter(u, byID, turn.Plan, -1)
	for _, id := range turn.Set {
		w := waiting[id]
		d := Decide(p, after, w.Submitter, w.Need)
		if !d.Accept {
			return fmt.Errorf("%s of the set not admitted after the plan: %s (%+v)", id, d.Reason, turn)
		}
		after.Jobs++
		after.Cores += d.Cores
		after.Memory += d.Memory
	}
	return nil
}

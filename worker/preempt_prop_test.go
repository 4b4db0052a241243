package worker

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/job"
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
			h := Holder{Job: job.ID(fmt.Sprintf("j%d", i)), Priority: rng.IntN(10),
				Since: job.Priority{Since: t0.Add(time.Duration(rng.IntN(100)) * time.Second), Job: job.ID(fmt.Sprintf("j%d", i))},
				Cores: 1 + rng.IntN(2), Memory: MemHold{Declared: int64(rng.IntN(3)) * G, Used: int64(rng.IntN(2)) * G},
				Checkpoint: rng.IntN(2) == 0, Preempted: rng.IntN(6) == 0}
			hs = append(hs, h)
			if !h.Preempted {
				u.Jobs++
				u.Cores += h.Cores
			}
			u.Memory += h.Memory.Charge()
		}
		need := job.Need{Job: "jnew", N: 1 + rng.IntN(4), R: 1, Priority: rng.IntN(12), MemPerProc: int64(rng.IntN(2)) * G}
		since := job.Priority{Since: t0.Add(time.Hour), Job: "jnew"}
		plan, d := PlanPreemption(p, u, hs, "alice", need, since)
		prio := p.HonouredPriority("alice", need.Priority)
		byID := byJob(hs)
		if len(plan) > 0 {
			planned++
		}
		seen := map[job.ID]bool{}
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

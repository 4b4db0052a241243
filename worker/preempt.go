package worker

import (
	"math"
	"slices"
	"sort"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

// Holder is a job running on this host, as the preemption plan sees it.
type Holder struct {
	Job proto.JobID
	// Priority is the priority this host honoured when it admitted the
	// job (Policy.HonouredPriority), and Since its place in the line
	// (Seniority): among equal priorities the latest job gives way.
	Priority int
	Since    Seniority
	Cores    int
	Memory   MemHold
	// Checkpoint says the job has a checkpoint to restart from: it is
	// swapped out (stopped by checkpoint, its memory freed, resumed later
	// on these hosts or elsewhere). Without one it can only be frozen in
	// place, which frees its cores but not its memory.
	Checkpoint bool
	// Preempted is set on a job already swapped out or frozen: it is not
	// a candidate again.
	Preempted bool
	// Leaving is set on a job whose swap-out was asked and not refused:
	// its cores, J place and memory come back once its stop lands (at
	// its next checkpoint). The plan counts them free already, so that a
	// plan made meanwhile (another job's slice ending, the advert again)
	// does not swap out a second job for the room this one frees.
	Leaving bool
	// SwapSlice is the job's swap slice here (Policy.SwapSlice of what it
	// asked; 0: never swapped for an equal) and Ran how long it has run
	// here since it last started or resumed (from its release from Init).
	SwapSlice time.Duration
	Ran       time.Duration
	// Malleable says the job can shrink (proto.Need.Min > 0): it is asked
	// to give way rather than swapped out (giveway.go).
	Malleable bool
}

// turnOver says whether h may give way to a job of its own priority that
// waits for its memory: it has a checkpoint to be swapped out with (a job
// of equal priority is never frozen for another) and has run its swap
// slice since it last started or resumed. This is the hybrid technique's
// rotation on long slices, kept by every host of the job from the same
// data: the job's slice and its release.
func (h Holder) turnOver() bool {
	return h.Checkpoint && h.SwapSlice > 0 && h.Ran >= h.SwapSlice
}

// maxReleaseLag bounds how long before its arrival here a release may
// say the submitter sent it: a release is one message, delivered in
// well under this, and a stamp further back would only be a wrong clock.
const maxReleaseLag = 5 * time.Second

// releaseTime is when a job's ranks here count as released, from which
// its swap slice runs (Holder.Ran): its submitter's stamp (the same on
// all its hosts, so they order the releases of two jobs alike and take
// swap turns alike), but never later than now (a job cannot lengthen its
// slice) nor more than maxReleaseLag before it; now without a stamp. Pure.
func releaseTime(stampNs int64, now time.Time) time.Time {
	if stampNs == 0 {
		return now
	}
	at := time.Unix(0, stampNs)
	if at.After(now) {
		return now
	}
	return maxTime(at, now.Add(-maxReleaseLag))
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Action is what preemption does to a job. Neither kills it.
type Action string

const (
	ActionSwap   Action = "swap"   // stop by checkpoint, resume later
	ActionFreeze Action = "freeze" // stop in place (SIGSTOP / cgroup freezer)
)

// Preemption is one job to preempt and how; For is the waiting job it
// makes room for (set by PlanTurn).
type Preemption struct {
	Job    proto.JobID
	Action Action
	For    proto.JobID
}

// PlanPreemption decides which running jobs to preempt so that an advert
// this host refuses for lack of room (Decide's Full) can be offered. It is
// a pure function: the same inputs give the same plan on every agent.
//
// Only jobs of honoured priority strictly below the advert's are
// candidates, and, when the advert is refused for memory only
// (proto.DeclineMemory) and asks for a swap slice itself, jobs of equal
// priority whose turn is over (Holder.turnOver): the hybrid technique's
// swap by checkpoint, the waiting job taking its turn. They are taken
// lowest priority first, then the latest in the line first. A candidate with a checkpoint is swapped out
// (its cores, J slot and memory come back); one without is frozen (its
// cores and J slot come back, its memory stays), which is chosen only
// when that still lets the advert in. The aim is the offer this host
// would make with every candidate preempted (as many processes as it can
// give the advert): candidates are added in order until Decide offers
// that many, then each chosen job not needed for it is dropped again, so
// the plan is minimal for its order. It returns nil, and the refusal,
// when no set of candidates makes room: then nothing is preempted. u is
// the host's usage; the holders Leaving are counted as gone.
func PlanPreemption(p Policy, u Usage, holders []Holder, submitter peer.ID, need proto.Need, since Seniority) ([]Preemption, Decision) {
	for _, h := range holders {
		if h.Leaving {
			u = freed(u, h)
		}
	}
	d := Decide(p, u, submitter, need)
	if d.Accept || !d.Full {
		return nil, d
	}
	prio := p.HonouredPriority(submitter, need.Priority)
	turns := d.Code == proto.DeclineMemory && p.SwapSlice(need.SwapSlice) > 0
	cands := candidates(holders, prio, since, turns)
	hs := byJob(cands)
	var all []Preemption
	for _, h := range cands {
		all = append(all, preemptOne(h))
	}
	best := Decide(p, usageAfter(u, hs, all, -1), submitter, need)
	if !best.Accept {
		return nil, d // no set of candidates makes room
	}
	// The shortest prefix of the order that gives the advert as many
	// processes as preempting every candidate would, then pruned.
	for k := 1; k <= len(all); k++ {
		if dk := Decide(p, usageAfter(u, hs, all[:k], -1), submitter, need); dk.Accept && dk.Slots >= best.Slots {
			plan := prune(p, u, hs, append([]Preemption(nil), all[:k]...), submitter, need, best.Slots)
			return plan, Decide(p, usageAfter(u, hs, plan, -1), submitter, need)
		}
	}
	return nil, d // unreachable: k = len(all) gives best
}

// Waiter is a job waiting in the line for this host, as the preemption
// plan sees it: its advert's submitter and need, and its place in the line.
type Waiter struct {
	Submitter peer.ID
	Need      proto.Need
	Since     Seniority
}

// Turn is what a host does for its waiting line at once: the preemptions,
// each with the job it makes room for, and the incoming set, the waiting
// jobs let in together (those the preemptions made room for and those
// that fit already). A job swapped out yields to the whole set.
type Turn struct {
	Plan []Preemption
	Set  []proto.JobID
}

// PlanTurn plans preemptions for the jobs waiting in the line, in its
// order (highest honoured priority, then earliest), rather than for its
// first job alone: each in turn gets PlanPreemption's plan with the jobs
// already chosen counted as leaving and the jobs already let in counted as
// holding their offers, so one turn lets in as many waiting jobs as the
// candidates make room for. That is the hybrid technique's switch of whole
// sets: when the running jobs' swap slices end together, the set that
// waited takes all their places at once, its jobs are released together,
// and their slices end together in turn; planned one job at a time, the
// second waiting job got its turn only once the first had restarted (a
// switch later), and the sets mixed. A waiting job that cannot be let in
// is skipped, and so is every later one of lower priority (the line would
// not serve them ahead of it); later equals are still tried (first fit, as
// gang.SwapSets forms sets). A pure function, like PlanPreemption.
func PlanTurn(p Policy, u Usage, holders []Holder, line []Waiter) Turn {
	hs := append([]Holder(nil), holders...)
	var t Turn
	blocked := math.MinInt // the highest priority of a job not let in
	for _, w := range line {
		prio := p.HonouredPriority(w.Submitter, w.Need.Priority)
		if prio < blocked {
			continue
		}
		plan, d := PlanPreemption(p, u, duringSwitch(hs), w.Submitter, w.Need, w.Since)
		if !d.Accept {
			blocked = max(blocked, prio)
			continue
		}
		for _, pr := range plan {
			pr.For = w.Need.Job
			t.Plan = append(t.Plan, pr)
			for i := range hs {
				if hs[i].Job == pr.Job {
					hs[i].Leaving, hs[i].Preempted = true, true
				}
			}
		}
		t.Set = append(t.Set, w.Need.Job)
		u.Jobs++
		u.Cores += d.Cores
		u.Memory += d.Memory
	}
	if len(t.Plan) == 0 {
		return Turn{} // nothing to do: the line is served as room frees
	}
	return t
}

// duringSwitch is hs as a turn plans with them: once a job here is
// leaving (swapped out at this turn or an earlier one still under way),
// the jobs whose turn ends within half their slice count as over too. So
// a set switches whole even when its jobs were released a little apart
// (the second job of a set placed after the first, a restart): the turn
// that lets one waiting job in takes the others that are nearly done as
// well, and the set let in is released together, its slices aligned.
// Planned one by one, the jobs let in were released as apart as the jobs
// that left, and the offset stayed for good (0.4-0.8 s here under load:
// jobs of different sets ran together that long at every switch). Each
// job still runs at least half its slice.
func duringSwitch(hs []Holder) []Holder {
	if !slices.ContainsFunc(hs, func(h Holder) bool { return h.Leaving }) {
		return hs
	}
	out := append([]Holder(nil), hs...)
	for i := range out {
		if !out[i].Preempted {
			out[i].Ran += out[i].SwapSlice / 2
		}
	}
	return out
}

// candidates are the holders that may give way to a job of priority prio,
// in the order they do; with turns, the equal ones whose turn is over too.
func candidates(holders []Holder, prio int, since Seniority, turns bool) []Holder {
	var out []Holder
	for _, h := range holders {
		lower := h.Priority < prio || turns && h.Priority == prio && h.turnOver()
		if !h.Preempted && lower && h.Since.Job != since.Job {
			out = append(out, h)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Priority != b.Priority {
			return a.Priority < b.Priority
		}
		if ao, bo := a.Ran-a.SwapSlice, b.Ran-b.SwapSlice; a.Priority == prio && ao != bo {
			// Equals whose turns are over: the one whose turn ended
			// first. Every host of the two counts from the same releases
			// (releaseTime), so they all pick the same one even when one
			// host sees both turns over and another only the first: the
			// latest in line would differ between them.
			return ao > bo
		}
		return Precedes(b.Since, a.Since) // the latest gives way first
	})
	return out
}

func preemptOne(h Holder) Preemption {
	if h.Checkpoint {
		return Preemption{Job: h.Job, Action: ActionSwap}
	}
	return Preemption{Job: h.Job, Action: ActionFreeze}
}

// freed is the usage once h is preempted: a swapped-out job gives back
// its cores, its J slot and its memory; a frozen one keeps its memory.
func freed(u Usage, h Holder) Usage {
	u.Jobs--
	u.Cores -= h.Cores
	if h.Checkpoint {
		u.Memory -= h.Memory.Charge()
	}
	return u
}

func byJob(hs []Holder) map[proto.JobID]Holder {
	m := make(map[proto.JobID]Holder, len(hs))
	for _, h := range hs {
		m[h.Job] = h
	}
	return m
}

// prune drops, in plan order, each preemption the advert does not need
// to be offered slots processes.
func prune(p Policy, u Usage, hs map[proto.JobID]Holder, plan []Preemption, submitter peer.ID, need proto.Need, slots int) []Preemption {
	for i := 0; i < len(plan); {
		if d := Decide(p, usageAfter(u, hs, plan, i), submitter, need); len(plan) > 1 && d.Accept && d.Slots >= slots {
			plan = append(plan[:i:i], plan[i+1:]...)
			continue
		}
		i++
	}
	return plan
}

// usageAfter is u once every job of plan but the skip-th is preempted.
func usageAfter(u Usage, hs map[proto.JobID]Holder, plan []Preemption, skip int) Usage {
	for j, pr := range plan {
		if j != skip {
			u = freed(u, hs[pr.Job])
		}
	}
	return u
}

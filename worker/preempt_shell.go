package worker

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zorilla-p2p/zorilla/internal/gang"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/worker/proc"
)

// The I/O side of preemption: the worker applies
// PlanPreemption when an advert is refused for lack of room, and asks the
// submitter of each job to swap out to stop it with a checkpoint
// (proto.PreemptProtocol). The freed slots go to the waiting line, where a
// job of higher priority is served first and no lower one is admitted
// ahead of it. A job without a checkpoint is frozen in place (proc.Freeze)
// when the plan says memory permits, and continued (proc.Thaw) once its
// cores and its place among the J are free again and no job of higher
// priority waits for them. No job is ever killed to make room.

// preemptState is what a running job carries for preemption.
type preemptState struct {
	preempted atomic.Bool // a swap-out was asked and not refused, or the job is frozen
	saved     atomic.Bool // a rank here saved a checkpoint
	// gaveWayAt is when the job's submitter said it gives way for a job
	// waiting here (unix ns; 0 for none): see lapseGiveWay.
	gaveWayAt atomic.Int64

	mu     sync.Mutex // serialises Freeze and Thaw of the job (proc's rule)
	frozen bool
	// fenced: the job's fence froze it (fence.go); nothing else thaws it.
	fenced bool
	// slices counts the time the gang rotation held the job frozen here
	// (guarded by mu): reported as RepSliced (gangloop.go).
	slices gang.FrozenClock
}

// canSwap says whether the job can be swapped out by checkpoint: a
// Zorilla MPI job without replicas, released, whose program takes
// checkpoints (one was saved here, or this run restarted from one).
func (r *running) canSwap() bool {
	return !r.c.PMI && r.c.R == 1 && r.running.Load() && (r.pre.saved.Load() || len(r.c.Restore) > 0)
}

// preemptForWaiting plans, for the jobs waiting in the line for this host
// (waiters), the preemptions that would let them in (PlanTurn), and starts
// them: called when an advert is refused for lack of room, when a job here
// is released (a job still starting was not a candidate when that advert
// came), when one saves its first checkpoint here, and when one's swap
// slice ends.
func (s *Service) preemptForWaiting() {
	now := time.Now()
	for _, r := range s.runningJobs() {
		r.pre.lapseGiveWay(now)
	}
	listed := s.waiting.ordered(now)
	line := waiters(listed, s.holds, s.yields)
	if len(line) == 0 {
		return
	}
	holders, byID := s.holders()
	if len(holders) == 0 {
		return
	}
	p := s.leases.Policy()
	for _, ask := range PlanGiveWay(p, s.leases.Usage(), holders, line) {
		r := byID[ask.Job]
		if r == nil || !r.pre.preempted.CompareAndSwap(false, true) {
			continue
		}
		// Its room counts as coming back: the turn below swaps nothing
		// else out for the job it lets in.
		i := slices.IndexFunc(holders, func(h Holder) bool { return h.Job == ask.Job })
		holders[i].Preempted, holders[i].Leaving = true, true
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.askGiveWay(r, ask.For)
		}()
	}
	turn := PlanTurn(p, s.leases.Usage(), holders, line)
	for _, pr := range turn.Plan {
		r := byID[pr.Job]
		if r == nil || !r.pre.preempted.CompareAndSwap(false, true) {
			continue
		}
		w := line[slices.IndexFunc(line, func(w Waiter) bool { return w.Need.Job == pr.For })]
		honoured := p.HonouredPriority(w.Submitter, w.Need.Priority)
		if pr.Action == ActionFreeze {
			s.freeze(r, fmt.Sprintf("job %s of priority %d", pr.For, honoured))
			continue
		}
		h := holders[slices.IndexFunc(holders, func(h Holder) bool { return h.Job == pr.Job })]
		set := yieldSet(pr.Job, h.Priority, pr.For, turn.Set, listed, s.leases.Runs)
		log.Infow("swapping out a job by checkpoint", "job", r.id, "for", pr.For, "set", turn.Set, "yields to", set, "priority", honoured)
		// Until the jobs it yields to run here (commit), its own advert
		// (it resumes at once, and came first in the line) is not served
		// here: else it would take back the memory it frees. The mark
		// stays when the swap is refused: every host of the job asks, and
		// all but the first are refused, the job being stopped already.
		s.waiting.yieldTo(r.id, set, "")
		s.leases.SetLeaving(r.lease, true) // overlapped: its place is offered at once
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.swapOut(r, set, honoured)
		}()
	}
}

// yieldSet is what job j (of honoured priority prio), swapped out for job
// forJob at a turn that let in set, yields to: forJob first (its record
// names it), then the rest of set, then every other job in the line that
// does not run here, of priority prio or higher. The job goes to the back
// of the line: the jobs that waited while it ran have their turn before it
// has another. Yielding only to the set let in, it would be served again,
// being earlier in the line, as soon as that set ran, ahead of a job that
// waited for the next turn (with four jobs of which two fit, the fourth
// waited until the first had run three times). At most 1+proto.MaxYieldWith
// jobs, the earliest in the line. Pure.
func yieldSet(j proto.JobID, prio int, forJob proto.JobID, set []proto.JobID, line []waitEntry, runs func(proto.JobID) bool) []proto.JobID {
	out := []proto.JobID{forJob}
	add := func(t proto.JobID) {
		if t != j && len(out) <= proto.MaxYieldWith && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	for _, t := range set {
		add(t)
	}
	for _, e := range line {
		if e.honoured >= prio && !runs(e.need.Job) {
			add(e.need.Job)
		}
	}
	return out
}

// waiters are the jobs preemption makes room for, in the line's order
// (highest priority, then earliest): those that hold no lease here and do
// not yield to a job still waiting (one swapped out here for it). Pure.
func waiters(line []waitEntry, held, yielding func(proto.JobID) bool) []Waiter {
	var out []Waiter
	for _, e := range line {
		if !held(e.need.Job) && !yielding(e.need.Job) {
			out = append(out, Waiter{Submitter: e.advert.Submitter, Need: e.need, Since: e.prio})
		}
	}
	return out
}

// afterSwapSlice looks again, once r's swap slice here is over, whether a
// job of its priority waits for its memory: its turn is then over
// (Holder.turnOver). A job with no slice (or none here) waits for none.
func (s *Service) afterSwapSlice(r *running) {
	l, ok := s.leases.Get(r.lease)
	if !ok {
		return
	}
	slice := s.leases.Policy().SwapSlice(l.Need.SwapSlice)
	if slice <= 0 {
		return
	}
	// Counted from the submitter's release, as Holder.Ran is.
	left := slice - time.Since(time.Unix(0, r.releasedAt.Load()))
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTimer(max(left, 0))
		defer t.Stop()
		select {
		case <-r.ctx.Done():
		case <-t.C:
			s.preemptForWaiting()
		}
	}()
}

// swapAfterRelease says whether the job will be swapped out, not frozen,
// once its ranks are released from Init (canSwap), and is not released
// yet: it restarted from a checkpoint.
func (r *running) swapAfterRelease() bool {
	return !r.c.PMI && r.c.R == 1 && !r.running.Load() && len(r.c.Restore) > 0
}

// holders are the jobs running here as PlanPreemption sees them.
func (s *Service) holders() ([]Holder, map[proto.JobID]*running) {
	byID := map[proto.JobID]*running{}
	var out []Holder
	p, now := s.leases.Policy(), time.Now()
	for _, r := range s.runningJobs() {
		l, ok := s.leases.Get(r.lease)
		since, listed := s.waiting.priority(r.id)
		v := heldJob{id: r.id, lease: l, leased: ok, since: since, listed: listed, mem: s.leases.MemHold(r.id),
			canSwap: r.canSwap(), preempted: r.pre.preempted.Load(), started: r.started(),
			swapAfterRelease: r.swapAfterRelease()}
		if ns := r.releasedAt.Load(); ns != 0 {
			v.released = time.Unix(0, ns)
		}
		if h, ok := holderOf(p, v, now); ok {
			out = append(out, h)
			byID[r.id] = r
		}
	}
	return out, byID
}

// heldJob is what holders reads of one running job: its lease here, its
// place in the line, its memory, and the state of its run.
type heldJob struct {
	id       proto.JobID
	lease    Lease
	leased   bool // the lease is still held
	since    Seniority
	listed   bool // the job is in the line (since is its place)
	mem      MemHold
	released time.Time // its ranks' release here; zero before

	canSwap, preempted, started, swapAfterRelease bool
}

// holderOf is job v as PlanPreemption sees it at now, under policy p;
// false for a job whose lease is gone or not committed. Pure.
func holderOf(p Policy, v heldJob, now time.Time) (Holder, bool) {
	if !v.leased || !v.lease.Committed {
		return Holder{}, false
	}
	since := v.since
	if !v.listed {
		since = Seniority{Job: v.id}
	}
	h := Holder{Job: v.id, Priority: v.lease.Priority, Since: since, Cores: v.lease.Cores, Memory: v.mem,
		Checkpoint: v.canSwap, SwapSlice: p.SwapSlice(v.lease.Need.SwapSlice), Malleable: v.lease.Need.Min > 0,
		// A job whose processes have not all started is left alone,
		// and so is one restarted from a checkpoint until its ranks
		// are released from Init: preempted then, it would be frozen
		// on the hosts that have not released it (no swap before the
		// release) and swapped out on those that have, and the
		// swap's checkpoint would wait for ranks that are frozen. It
		// becomes a candidate when it is released (preemptForWaiting).
		Preempted: v.preempted || !v.started || v.swapAfterRelease,
		// Asked to swap out and not refused (a freeze marks the lease).
		Leaving: v.preempted && v.canSwap && !v.lease.Frozen}
	if !v.released.IsZero() {
		h.Ran = max(now.Sub(v.released), 0)
	}
	return h, true
}

// swapOut asks r's submitter to stop it with a checkpoint, for the jobs
// of set (the first is the one it makes room for); a refusal (no
// checkpoint in time, the job ended) leaves it running and a candidate
// again.
func (s *Service) swapOut(r *running, set []proto.JobID, prio int) {
	ctx, cancel := context.WithTimeout(s.ctx, proto.PreemptStopTimeout+30*time.Second)
	defer cancel()
	forJob := set[0]
	msg := proto.PreemptMsg{Job: r.id, Lease: r.lease, For: forJob, With: set[1:], Priority: prio}
	var reply proto.PreemptReply
	err := s.ep.Call(ctx, r.submitter, proto.PreemptProtocol, msg, &reply, proto.MaxPreemptSize)
	if err != nil || !reply.Stopped {
		log.Infow("job not swapped out; it runs on", "job", r.id, "for", forJob, "err", err, "reason", reply.Reason)
		s.leases.SetLeaving(r.lease, false)
		r.pre.preempted.Store(false)
	}
}

// highestWaiting is the highest honoured priority of the jobs in the line
// other than self that hold no lease here; false when there is none.
func (w *waitLine) highestWaiting(self proto.JobID, leases *Leases, now time.Time) (int, bool) {
	w.mu.Lock()
	w.sweep(now) // an expired advert holds nothing back
	ids := make([]proto.JobID, 0, len(w.jobs))
	prios := make([]int, 0, len(w.jobs))
	for id, e := range w.jobs {
		if id != self {
			ids, prios = append(ids, id), append(prios, e.honoured)
		}
	}
	w.mu.Unlock()
	top, found := math.MinInt, false
	for i, id := range ids {
		if _, held := leases.ByJob(id); !held && prios[i] > top {
			top, found = prios[i], true
		}
	}
	return top, found
}

// freeze stops job r's processes here in place and frees its cores and
// its place among the J (not its memory); the submitter is told, for the
// job's time accounting. A failure leaves the job running.
func (s *Service) freeze(r *running, why string) {
	r.pre.mu.Lock()
	defer r.pre.mu.Unlock()
	r.mu.Lock()
	procs, k := r.procs, r.sink
	r.mu.Unlock()
	if r.pre.frozen || len(procs) == 0 {
		r.pre.preempted.Store(r.pre.frozen)
		return
	}
	if err := proc.Freeze(r.sandbox, procs); err != nil {
		log.Warnw("job not frozen; it runs on", "job", r.id, "err", err)
		r.pre.preempted.Store(false)
		return
	}
	r.pre.frozen = true
	r.pre.slices.Thaw(time.Now()) // from now its frozen time is preemption's (RepFrozen)
	s.leases.SetFrozen(r.lease, true)
	log.Infow("job frozen in place", "job", r.id, "for", why)
	if k != nil {
		k.send(r.ctx, proto.Report{Kind: proto.RepFrozen, Reason: "preempted by " + why})
	}
}

// thawFrozen continues the frozen jobs here whose cores and place among
// the J are free again, highest priority first, unless a job of higher
// priority than theirs waits in the line for this host.
func (s *Service) thawFrozen() {
	type cand struct {
		r    *running
		prio int
	}
	var cs []cand
	for _, r := range s.runningJobs() {
		if l, ok := s.leases.Get(r.lease); ok && l.Frozen {
			cs = append(cs, cand{r, l.Priority})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].prio > cs[j].prio })
	for _, c := range cs {
		if top, ok := s.waiting.highestWaiting(c.r.id, s.leases, time.Now()); ok && top > c.prio {
			continue
		}
		if s.leases.FitsThawed(c.r.lease) {
			s.thaw(c.r)
		}
	}
}

// thaw continues job r's processes here.
func (s *Service) thaw(r *running) {
	r.pre.mu.Lock()
	defer r.pre.mu.Unlock()
	if !r.pre.frozen {
		return
	}
	r.mu.Lock()
	procs, k := r.procs, r.sink
	r.mu.Unlock()
	// A job its fence holds stays frozen: the fence continues it when
	// the submitter answers again.
	if !r.pre.fenced {
		if err := proc.Thaw(r.sandbox, procs); err != nil {
			log.Warnw("frozen job not continued", "job", r.id, "err", err)
			return
		}
	}
	r.pre.frozen = false
	s.leases.SetFrozen(r.lease, false)
	r.pre.preempted.Store(false)
	log.Infow("job continued", "job", r.id)
	if k != nil {
		k.send(r.ctx, proto.Report{Kind: proto.RepThawed})
	}
	s.kickGang() // out of its time slice, the rotation freezes it again
}

// started says whether the job's processes here have started.
func (r *running) started() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.procs) > 0
}

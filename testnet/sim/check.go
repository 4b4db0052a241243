package sim

import (
	"fmt"
	"strings"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/lifecycle"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// Violation is an invariant that did not hold: when, where, and what.
type Violation struct {
	At    string
	Agent int32
	What  string
}

func (v Violation) String() string {
	return fmt.Sprintf("at %s on agent %d: %s", v.At, v.Agent, v.What)
}

// violate stops the run at its first violation.
func (w *World) violate(agent int32, format string, args ...any) {
	if w.failure != nil {
		return
	}
	w.failure = &Violation{At: w.now.String(), Agent: agent, What: fmt.Sprintf(format, args...)}
	w.line = fmt.Appendf(w.line[:0], "%d violation a%d %s\n", int64(w.now), agent, w.failure.What)
	w.trace.Write(w.line)
	if w.out != nil {
		_, _ = w.out.Write(w.line)
	}
}

// checkHost checks what a worker holds after an event: no more processes
// than its cores (a slot is never committed to two jobs), no uncommitted
// lease past its life, no committed lease whose processes are all gone.
// (A commit that comes after its lease expired is caught as it arrives:
// onLeaseReq.)
func (w *World) checkHost(a *agent) {
	procs := 0
	for _, p := range a.parts {
		procs += len(p.procs)
	}
	if procs > a.policy.Cores {
		w.violate(a.idx, "%d processes committed on %d cores", procs, a.policy.Cores)
	}
	now := w.clock(a)
	for _, l := range a.leases.List() {
		switch {
		case !l.Committed && !now.Before(l.Expires):
			w.violate(a.idx, "lease %s of %s held past its expiry %v", l.Key, l.Job, l.Expires)
		case l.Committed && a.parts[l.Key] == nil:
			w.violate(a.idx, "lease %s of %s committed, and no process of it left here", l.Key, l.Job)
		}
	}
}

// startCopy and endCopy count the running copies of each rank: a job
// without replicas never runs a rank twice at once. A copy counts from
// its release until its process ends, also once its submitter counted
// its host lost, except while its fence holds it frozen (fence.go).
func (w *World) startCopy(j *simJob, p *part, pr proto.Proc) {
	if p.frozen {
		return
	}
	j.copies[pr.Rank]++
	if j.desc.Replicas == 1 && j.copies[pr.Rank] > 1 {
		w.violate(j.sub, "job %s: rank %d runs twice at once: %s", j.id, pr.Rank, w.holders(j, pr.Rank))
	}
	if live := len(j.copies); live > j.hi {
		w.violate(j.sub, "job %s: %d ranks run, more than its %d", j.id, live, j.hi)
	}
}

func (w *World) endCopy(j *simJob, p *part, pr proto.Proc) {
	if p.frozen {
		return
	}
	if j.copies[pr.Rank]--; j.copies[pr.Rank] <= 0 {
		delete(j.copies, pr.Rank)
	}
}

// checkStep checks a machine's step: a replicated job leaves Running
// other than by its end only when some rank has no copy left (or a rank
// failed, which ends any job).
func (w *World) checkStep(j *simJob, before job.State, effects []lifecycle.Effect) {
	rec := j.m.Record()
	if j.desc.Replicas < 2 || before != job.Running || rec.State == job.Running || rec.State == job.Done ||
		rec.State == job.Cancelled || j.badExit {
		return
	}
	for rank := range j.desc.Nodes {
		if w.copiesReachable(j, rank) == 0 {
			return
		}
	}
	w.violate(j.sub, "job %s left running for %s (%s) while every rank had a copy its submitter reaches", j.id, rec.State, rec.Reason)
}

// copiesReachable counts the running copies of rank that j's submitter
// can reach.
func (w *World) copiesReachable(j *simJob, rank int) int {
	n := 0
	for l, h := range j.leases {
		p := w.agents[h].parts[l]
		if p == nil || p.job != j.idx || !w.reachable(int(h), int(j.sub)) {
			continue
		}
		for i, pr := range p.procs {
			if pr.Rank == rank && (p.running[i] || !p.released) {
				n++
			}
		}
	}
	return n
}

// queueBound bounds the event queue: every agent's few timers and
// messages in flight, and every job's adverts.
func (w *World) queueBound() int { return 64*len(w.agents) + 4096*len(w.jobs) + 1<<16 }

// checkQueues: no queue grows without bound.
func (w *World) checkQueues() {
	if w.q.len() > w.queueBound() {
		w.violate(-1, "event queue of %d, bound %d", w.q.len(), w.queueBound())
	}
	if len(w.backlogged) > 0 {
		for _, p := range w.backlogged {
			if len(p.backlog) > proto.MaxUnackedReports {
				w.violate(p.host, "%d reports kept for job %d, bound %d", len(p.backlog), p.job, proto.MaxUnackedReports)
			}
		}
	}
}

// checkEnd checks the end of the run: every worker holds only what it
// should, and no job is stuck.
func (w *World) checkEnd() {
	for _, a := range w.agents {
		if a.up {
			w.checkHost(a)
		}
	}
	w.checkStuck()
}

// checkStuck: a job not ended waits for something, a timer of its machine
// or an event on its way; one that waits for nothing would wait for ever.
func (w *World) checkStuck() {
	pending := make([]int, len(w.jobs))
	for _, e := range w.q.ev {
		if e.job >= 0 && e.kind != evCut && e.kind != evHeal {
			pending[e.job]++
		}
	}
	for _, j := range w.jobs {
		if j.m != nil && !j.gone && !j.m.Ended() && j.tickAt < 0 && pending[j.idx] == 0 && len(j.inbox) == 0 {
			w.violate(j.sub, "job %s waits in phase %s for nothing: no timer, nothing on its way", j.id, j.m.Phase())
		}
	}
}

// holders names the parts that run a copy of rank of j (lease, attempt).
func (w *World) holders(j *simJob, rank int) string {
	var out []string
	for _, a := range w.agents {
		for _, l := range sortedKeys(a.parts) {
			p := a.parts[l]
			for i, pr := range p.procs {
				if p.job == j.idx && pr.Rank == rank && p.running[i] {
					out = append(out, fmt.Sprintf("%s (attempt %d, since %v)", l, p.attempt, p.since))
				}
			}
		}
	}
	return strings.Join(out, ", ")
}

package sim

import (
	"time"

	"github.com/zorilla-p2p/zorilla/worker"
)

// The worker's fence (worker/fence.go): a part whose submitter has
// answered nothing it sent for the commit's Fence freezes its processes;
// they no longer run (nor count as running copies) until the submitter
// answers again, which a submitter that counted the host lost does with
// a refusal: the processes are then killed.

// armFence starts a part's fence count: its submitter went out of reach.
// The last heartbeat it answered was sent within the last beat, before
// the answer's trip back.
func (w *World) armFence(p *part) {
	if p.fence <= 0 || p.frozen || p.fencing || w.cfg.Hooks.NoFence {
		return
	}
	beat := worker.FenceBeat(worker.DefaultServiceConfig().Heartbeat, p.fence)
	j := w.jobs[p.job]
	p.answered = max(0, w.now-w.topo.rtt(int(p.host), int(j.sub))-time.Duration(w.rng.Int64N(int64(beat))))
	p.fencing = true
	w.push(max(0, p.answered+p.fence-w.now), evFence, p.host, p.job, p)
}

// fenceEvent: a fence check is due (evFence), or the submitter is back
// in reach (evThaw).
func (w *World) fenceEvent(a *agent, p *part, k kind) {
	j := w.jobs[p.job]
	back := w.reachable(int(a.idx), int(j.sub))
	switch {
	case k == evFence:
		p.fencing = false
		if !back && w.now-p.answered >= p.fence {
			w.freeze(j, p)
		}
	case !back || !p.frozen:
	case w.refuses(j, p.lease):
		w.kill(a, p, true) // the new stream's answer is a refusal
	default:
		w.thaw(j, p)
	}
}

// freeze stops a part's running processes in place.
func (w *World) freeze(j *simJob, p *part) {
	for i, pr := range p.procs {
		if p.running[i] {
			w.endCopy(j, p, pr)
		}
	}
	p.frozen = true
	w.stats.frozen++
}

// thaw continues them: the submitter answered.
func (w *World) thaw(j *simJob, p *part) {
	p.frozen, p.answered = false, w.now
	for i, pr := range p.procs {
		if p.running[i] {
			w.startCopy(j, p, pr)
		}
	}
}

// thawAll: the frozen parts whose submitter is in reach again open a new
// stream within a second, and hear its answer.
func (w *World) thawAll() {
	for _, a := range w.agents {
		if !a.up {
			continue
		}
		for _, l := range sortedKeys(a.parts) {
			p := a.parts[l]
			if j := w.jobs[p.job]; p.frozen && w.reachable(int(a.idx), int(j.sub)) {
				w.push(w.jitter(500*time.Millisecond, 1)+w.topo.rtt(int(a.idx), int(j.sub)), evThaw, a.idx, p.job, p)
			}
		}
	}
}

package sim

import (
	"errors"
	"time"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

var errNoReply = errors.New("no reply")

// part is a job's part on one host: its processes, from staging to their
// ends, and the reports the host numbers and sends.
type part struct {
	host     int32
	job      int32
	lease    string
	procs    []proto.Proc
	n        int
	attempt  int
	released bool
	since    time.Duration // when it was released
	running  []bool        // by proc: released and not ended
	live     int           // processes not ended
	seq      uint64
	backlog  []proto.Report
	log      []proto.Report // every report numbered, for a re-attached submitter
	grace    bool           // a grace check is armed
	lastAt   time.Duration  // when its last report sent arrives
	finished bool           // every process ended: the part waits for its done report to be taken
	fence    time.Duration  // the commit's fence (proto.Commit.Fence)
	answered time.Duration  // when the last message its submitter answered was sent
	frozen   bool           // its fence closed: its processes are frozen
	fencing  bool           // a fence check is armed
}

// graceAfter is how long a job's processes run on while its submitter is
// unreachable (worker.ServiceConfig.SubmitterGrace's default).
const graceAfter = time.Minute

// startPart stages j's program on a and starts its processes: staging
// takes a few RTTs to the submitter and a second or so, longer on a slow
// host.
func (w *World) startPart(a *agent, j *simJob, req proto.LeaseRequest) {
	c := req.Commit
	p := &part{host: a.idx, job: j.idx, lease: req.Lease, procs: c.Procs, n: c.N, attempt: c.Attempt,
		running: make([]bool, len(c.Procs)), live: len(c.Procs), fence: c.Fence, answered: w.now}
	a.parts[req.Lease] = p
	if c.N < j.lo || c.N > j.hi {
		w.violate(a.idx, "job %s committed at %d processes, outside %d..%d", j.id, c.N, j.lo, j.hi)
	}
	stage := 4*w.topo.rtt(int(a.idx), int(j.sub)) + w.jitter(time.Second, 0.5)
	w.push(time.Duration(float64(stage)*a.slow), evStaged, a.idx, j.idx, p)
}

// onPart moves a part along: staged, ready, a process's exit, a grace
// check. A part whose processes all ended only waits for its done report
// to be taken.
func (w *World) onPart(e event) {
	a := w.agents[e.agent]
	var p *part
	var proc int
	switch d := e.data.(type) {
	case *part:
		p = d
	case exitIn:
		p, proc = d.p, d.proc
	}
	if a.parts[p.lease] != p {
		return // killed meanwhile
	}
	if p.finished && e.kind != evGrace {
		return
	}
	if e.kind == evFence || e.kind == evThaw {
		w.fenceEvent(a, p, e.kind)
		w.checkHost(a)
		return
	}
	w.tracef(e, "%s", p.lease)
	switch e.kind {
	case evStaged:
		w.report(p, proto.Report{Kind: proto.RepStarted})
		w.push(time.Duration(float64(w.jitter(200*time.Millisecond, 0.5))*a.slow), evReady, a.idx, p.job, p)
	case evReady:
		w.report(p, proto.Report{Kind: proto.RepReady})
	case evExit:
		w.exit(a, p, proc)
	case evGrace:
		w.grace(a, p)
	}
	w.checkHost(a)
}

type exitIn struct {
	p    *part
	proc int
}

// release lets the ranks go (phase two): each runs its time.
func (w *World) release(a *agent, p *part) {
	if p.released {
		return
	}
	p.released, p.since = true, w.now
	j := w.jobs[p.job]
	for i, pr := range p.procs {
		p.running[i] = true
		w.startCopy(j, p, pr)
		d := w.jitter(j.runFor, 0.1)
		w.push(time.Duration(float64(d)*a.slow), evExit, a.idx, p.job, exitIn{p: p, proc: i})
	}
}

// exit ends one process: its report, and once none is left the done
// report and the end of the lease.
func (w *World) exit(a *agent, p *part, i int) {
	j := w.jobs[p.job]
	pr := p.procs[i]
	p.running[i] = false
	p.live--
	w.endCopy(j, p, pr)
	w.stats.busy += w.now - p.since
	code := 0
	if j.failing && pr.Rank == p.n-1 {
		code = 1
		j.badExit = true
	}
	w.report(p, proto.Report{Kind: proto.RepExit, Rank: pr.Rank, Replica: pr.Replica, Code: code})
	if p.live == 0 {
		// The worker keeps the job until its submitter took the done
		// report (or its grace ends): a re-attached submitter asks.
		p.finished = true
		w.report(p, proto.Report{Kind: proto.RepDone})
	}
}

// kill ends a part's processes and, unless keep (a retry keeps the
// slots under a new key), its lease.
func (w *World) kill(a *agent, p *part, end bool) {
	if p == nil {
		return
	}
	j := w.jobs[p.job]
	for i, r := range p.running {
		if r {
			p.running[i] = false
			w.endCopy(j, p, p.procs[i])
			w.stats.busy += w.now - p.since
		}
	}
	p.live = 0
	if end {
		w.endPart(a, p)
	} else {
		delete(a.parts, p.lease)
	}
}

// endPart forgets a part whose processes are gone and ends its lease.
func (w *World) endPart(a *agent, p *part) {
	delete(a.parts, p.lease)
	if w.cfg.Hooks.KeepLeaseAfterRun {
		return
	}
	_, _ = a.leases.End(p.lease)
}

// report numbers a report and sends it, or keeps it while the submitter
// is out of reach (and arms the grace check).
func (w *World) report(p *part, r proto.Report) {
	p.seq++
	r.Seq = p.seq
	p.log = append(p.log, r)
	j := w.jobs[p.job]
	if len(p.backlog) == 0 && w.sendReport(p, j, r) {
		return
	}
	p.backlog = append(p.backlog, r)
	if len(p.backlog) == 1 {
		w.backlogged = append(w.backlogged, p)
	}
	w.armGrace(p)
}

// armGrace starts a part's grace period: its submitter went out of
// reach (a report or a heartbeat did not get through).
func (w *World) armGrace(p *part) {
	if !p.grace {
		p.grace = true
		w.push(graceAfter, evGrace, p.host, p.job, p)
	}
}

// armGraces arms the grace, and the fence, of every part whose submitter
// is out of reach now: their next heartbeat fails.
func (w *World) armGraces() {
	for _, a := range w.agents {
		if !a.up || len(a.parts) == 0 {
			continue
		}
		for _, l := range sortedKeys(a.parts) {
			if p := a.parts[l]; !w.reachable(int(a.idx), int(w.jobs[p.job].sub)) {
				w.armGrace(p)
				w.armFence(p)
			}
		}
	}
}

func (w *World) sendReport(p *part, j *simJob, r proto.Report) bool {
	if !w.reachable(int(p.host), int(j.sub)) {
		return false
	}
	w.stats.messages++
	// One stream carries a host's reports in order: none overtakes another.
	arrive := max(w.now+w.delay(int(p.host), int(j.sub)), p.lastAt)
	p.lastAt = arrive
	w.push(arrive-w.now, evReport, j.sub, j.idx, reportIn{from: p.host, lease: p.lease, rep: r})
	return true
}

// flush sends what a part kept, once its submitter is back in reach.
func (w *World) flush(p *part) bool {
	j := w.jobs[p.job]
	for len(p.backlog) > 0 {
		if !w.sendReport(p, j, p.backlog[0]) {
			return false
		}
		p.backlog = p.backlog[1:]
	}
	return true
}

// resume sends every report of a part again, in order (a re-attached
// submitter takes those its journal lacks), then what it kept.
func (w *World) resume(p *part) {
	j := w.jobs[p.job]
	p.backlog = append([]proto.Report(nil), p.log...)
	if !w.flush(p) {
		w.backlogged = append(w.backlogged, p)
	}
	_ = j
}

// onAck: the submitter took a part's done report; the worker forgets the
// job and ends its lease.
func (w *World) onAck(e event) {
	a, p := w.agents[e.agent], e.data.(*part)
	if a.parts[p.lease] != p || !p.finished {
		return
	}
	w.tracef(e, "%s done taken", p.lease)
	w.endPart(a, p)
	w.checkHost(a)
}

// grace ends a part whose submitter stayed out of reach for graceAfter.
func (w *World) grace(a *agent, p *part) {
	p.grace = false
	if w.flush(p) && w.reachable(int(a.idx), int(w.jobs[p.job].sub)) {
		return
	}
	if p.finished {
		w.endPart(a, p)
		return
	}
	w.stats.graceKills++
	w.kill(a, p, true)
}

// flushAll retries every part's kept reports (a cut healed, an agent
// restarted).
func (w *World) flushAll() {
	keep := w.backlogged[:0]
	for _, p := range w.backlogged {
		if w.agents[p.host].parts[p.lease] != p {
			continue
		}
		if !w.flush(p) {
			keep = append(keep, p)
		}
	}
	w.backlogged = keep
}

package lifecycle

import (
	"fmt"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// runEnded ends the watch of a run: what its hosts sent of its
// checkpoints is all there will be, so the writer settles first (a
// restart takes the last complete checkpoint); then the processes still
// running are killed, and Recover decides what the end means.
func (m *Machine) runEnded(out outcome) {
	if out.kind == outDetached {
		m.finish(out)
		return
	}
	if out.kind != outResized {
		m.stopGrowing()
	}
	m.ending = &ending{out: out}
	m.phase = settling
	m.emit(SettleCheckpoints{})
}

// settled goes on once the writer has settled.
func (m *Machine) settled() {
	out := m.ending.out
	m.endStop(out)
	if out.kind == outResized {
		m.ending = nil
		m.stopForResize(out)
		return
	}
	if out.kind == outFailed && (m.startFailed(out.fail) || m.shrinksOnLoss(out.fail)) {
		m.ending = nil
		m.stopStart(out.fail)
		return
	}
	why := out.why
	if out.kind == outDone {
		why = ""
	}
	m.killAll(why)
}

// startFailed reports whether a failure ends the run's start rather than
// the run: any before every host started, and a start's own (a host that
// could not start, a rank not in mpi.Init in time) before the release.
// The hosts not at fault then keep their slots for the retry.
func (m *Machine) startFailed(f job.Failure) bool {
	if !m.run.running {
		return true
	}
	switch f.Kind {
	case job.StartTimeout, job.HostSilent, job.BadProgram:
		return !m.run.released
	}
	return false
}

// killAll tells every host of the run that has not ended to end the job
// and clean up, and awaits their replies before the end is judged.
func (m *Machine) killAll(why string) {
	run := m.run
	run.awaiting = map[peer.ID]bool{}
	for _, p := range run.order {
		if h := run.hosts[p]; !h.done {
			h.done = true
			run.awaiting[p] = true
			m.disown(h.plan.Offer.Lease, why)
			m.lease(p, proto.LeaseRequest{Op: proto.OpKill, Lease: h.plan.Offer.Lease, Reason: why})
		}
	}
	m.phase = killing
	m.killed()
}

// killed goes on once every kill is answered.
func (m *Machine) killed() {
	if len(m.run.awaiting) > 0 {
		return
	}
	out := m.ending.out
	m.ending = nil
	m.endRun(out.why)
	switch out.kind {
	case outFailed:
		m.recoverFrom(out.fail)
	case outStopped:
		m.finish(out)
	default:
		// Done, fatal or cancelled. Cancelled before it ran, the spares
		// are still reserved: give them back.
		m.cancelLeases(m.held())
		m.finish(out)
	}
}

// recoverFrom carries out what Recover decides about a failure: a start
// again on the same hosts and the spares, a new match (after a backoff,
// for a job that ran), or the end.
func (m *Machine) recoverFrom(f job.Failure) {
	m.dropExpiredSpares()
	if m.cancel == "" && m.run != nil && m.fallBack(f) {
		return
	}
	rec := job.Recover(m.rec, f, m.cfg.Retry)
	m.avoidHosts(rec.Unavailable)
	if m.cancel != "" {
		m.cancelLeases(m.held())
		m.finish(cancelled(m.cancel))
		return
	}
	switch rec.Action {
	case job.RetryStart:
		log.Infow("start failed, retrying on the spares", "job", m.rec.ID, "why", f.Why)
		m.cancelLeases(failedOffers(m.plan, f.Hosts))
		m.note = rec.Reason
		m.start(m.withKept(rec.Plan))
	case job.Shrink:
		log.Infow("hosts lost: restarting on the hosts left", "job", m.rec.ID, "why", f.Why)
		m.cancelLeases(failedOffers(m.plan, f.Hosts))
		m.resized(m.plan.N, rec.Plan.N, "host lost")
		m.note = rec.Reason
		m.start(m.withKept(rec.Plan))
	case job.Rematch:
		log.Infow("matching again", "job", m.rec.ID, "why", f.Why)
		m.giveBack(m.held())
		m.rlist, m.declined = nil, declines{}
		m.note = rec.Reason
		if rec.Restart {
			m.restart(f, rec)
			return
		}
		m.setState(job.Reserving, m.takeNote()) // it waits for the answers, then floods
		m.pauseTo, m.phase = m.now, pausing
		m.resumeReserving()
	default:
		m.cancelLeases(m.held())
		if (f.Kind == job.HostLost || f.Kind == job.BadProgram) && rec.Reason != "" {
			f.Why += "; " + rec.Reason
		}
		m.finish(fatal(f.Why))
	}
}

// giveBack cancels the offers a failed start still holds before the job
// floods again, and has the new flood wait for the cancels' answers: a
// worker that still holds a lease of the job when the new advert comes
// makes it no offer.
func (m *Machine) giveBack(offers []job.Offer) {
	m.returning = map[string]bool{}
	for _, o := range offers {
		m.returning[o.Lease] = true
	}
	m.cancelLeases(offers)
}

// resumeReserving floods again once the backoff has passed and the
// offers given back are answered for.
func (m *Machine) resumeReserving() {
	if m.phase == pausing && !m.now.Before(m.pauseTo) && len(m.returning) == 0 {
		if plan := m.deferred; plan != nil {
			m.deferred = nil
			m.afterFence(*plan)
			return
		}
		m.reserve()
	}
}

// dropExpiredSpares forgets the spares whose leases expire before a
// retry could commit them: a retry is never committed on an expired offer.
func (m *Machine) dropExpiredSpares() {
	spares := slices.DeleteFunc(slices.Clone(m.plan.Spares), m.expiring)
	if len(spares) == len(m.plan.Spares) {
		return
	}
	m.plan.Spares = spares
	plan := m.plan
	m.rec.Plan = &plan
}

// restart prepares the next attempt of a job that lost a host while it
// ran and has retries left: it counts the restart, tells the user, drops
// the output files of the run that ended (the next run writes them anew,
// so no rank's file is brought back twice) and waits the backoff, and
// the fence of the hosts lost: the new match's offers are then not kept
// waiting for it.
func (m *Machine) restart(f job.Failure, rec job.Recovery) {
	m.rec.Restarts++
	m.emit(Save{})
	m.pauseTo = later(m.now.Add(rec.Backoff), m.fencedUntil())
	m.notice(fmt.Sprintf("%s; starting the job again on other hosts in %v (retry %d of %d), %s",
		f.Why, m.pauseTo.Sub(m.now).Round(time.Millisecond), m.rec.Restarts, m.rec.Desc.Retries, m.restartWords()))
	m.outputs = map[string]string{}
	m.emit(DropOutputs{})
	m.setState(job.Reserving, m.takeNote()) // status says it waits for a new match, not that it runs
	m.phase = pausing
}

// finish records how the job ended, or, for a job left to its hosts by an
// agent that stops, leaves its record as it is.
func (m *Machine) finish(out outcome) {
	m.phase, m.res = over, nil
	switch out.kind {
	case outDetached:
		m.notice("this agent is stopping; the job goes on, and this agent takes it back when it starts again")
		m.end(true)
		return
	case outStopped:
		m.finishStopped(out)
		return
	case outDone:
		m.setState(job.Done, "")
	case outCancelled:
		m.setState(job.Cancelled, out.why)
	default:
		if m.exitCode == 0 {
			m.exitCode = 1
		}
		m.setState(job.Failed, out.why)
	}
	m.rec.Exit = m.exitCode
	m.dropCheckpoints()
	m.emit(Save{})
	m.end(false)
}

// end tells the watchers the job's end, with its record, and the executor
// that the machine is over.
func (m *Machine) end(detached bool) {
	rec := m.rec
	m.emit(Notify{job.Update{Kind: "end", State: rec.State, Record: &rec}})
	m.emit(End{Detached: detached})
}

// afterEnd answers what still comes once the machine is over.
func (m *Machine) afterEnd(e Event) {
	switch e := e.(type) {
	case Offer:
		m.emit(AnswerOffer{Token: e.Token, Reply: proto.OfferReply{Reason: "job ended"}})
	case Stop:
		m.emit(AnswerStop{Token: e.Token, Err: fmt.Errorf("%w: job %s ended meanwhile", job.ErrNotStoppable, m.rec.ID)})
	case GiveWay:
		m.emit(AnswerGiveWay{Token: e.Token, Err: fmt.Errorf("job %s ended meanwhile", m.rec.ID)})
	}
}

// onLeaseReply takes a lease request's reply where a phase waits for it.
func (m *Machine) onLeaseReply(r LeaseReply) {
	if r.Op == proto.OpKill && r.Err == nil && r.Reply.OK {
		m.unfence(r.Host)
	}
	switch {
	case r.Op == proto.OpCheckpoint && m.phase == watching && m.run.stop != nil:
		m.onCheckpointAsked(r)
	case r.Op == proto.OpCheckpoint && m.phase == watching && m.run.resize != nil:
		m.onResizeAsked(r)
	case m.phase == committing && r.Op == proto.OpCommit:
		m.onCommitted(r)
	case m.phase == stoppingStart && r.Op == proto.OpRetry:
		m.onRetried(r)
	case m.phase == killing && r.Op == proto.OpKill && m.run.awaiting[r.Host]:
		delete(m.run.awaiting, r.Host)
		if r.Err != nil || !r.Reply.OK {
			m.fenceHost(r.Host, m.now) // unconfirmed: it may run on, cut off
		}
		m.killed()
	case m.phase == reattaching && r.Op == proto.OpResume:
		m.onResumed(r)
	case r.Op == proto.OpCancel && m.returning[r.Lease]:
		delete(m.returning, r.Lease)
		m.resumeReserving()
	}
}

// onCancel ends the job at the user's word, as soon as the phase allows:
// a reservation gives its offers back, a run is killed, a stopped job
// drops its checkpoint; a phase that waits for replies ends when they are
// in.
func (m *Machine) onCancel(why string) {
	switch m.phase {
	case idle:
		m.cancelBeforeBegin(why)
	case reserving:
		m.cancelLeases(m.rlist)
		m.finish(cancelled(why))
	case watching:
		m.runEnded(cancelled(why))
	case pausing:
		if plan := m.deferred; plan != nil {
			m.deferred = nil
			m.cancelLeases(append(plan.Offers(), plan.Spares...))
		}
		m.finish(cancelled(why))
	default:
		if m.cancel == "" {
			m.cancel = why
		}
	}
}

// cancelBeforeBegin cancels a job whose machine never began: a stopped
// job that will not be resumed, whose checkpoint's files go.
func (m *Machine) cancelBeforeBegin(why string) {
	m.phase = over
	if m.rec.State == job.Stopped {
		m.dropCheckpoints()
	}
	m.setState(job.Cancelled, why)
	m.end(false)
}

// onShutdown: the agent stops. A job that runs is left to its hosts, which
// keep it running for their grace period while the agent is away; any
// other is cancelled.
func (m *Machine) onShutdown() {
	m.shutdown = true
	const why = "agent shutting down"
	switch {
	case m.phase == watching && m.run.running, m.phase == reattaching:
		m.finish(detached())
	case m.phase == watching:
		m.runEnded(cancelled(why))
	default:
		m.onCancel(why)
	}
}

// shrinksOnLoss reports whether a host lost makes a malleable job start
// again on the hosts left (job.Shrink): they then keep their
// slots, as after a failed start.
func (m *Machine) shrinksOnLoss(f job.Failure) bool {
	return f.Kind == job.HostLost && job.Recover(m.rec, f, m.cfg.Retry).Action == job.Shrink
}

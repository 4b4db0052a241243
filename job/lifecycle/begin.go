package lifecycle

import (
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// begin starts the machine from its record: a new job floods, a stopped
// one floods to restart from its checkpoint, and one that was running
// when its agent stopped is taken back from its hosts.
func (m *Machine) begin() {
	if m.phase != idle {
		return
	}
	var avoid []peer.ID
	for p := range m.avoid {
		avoid = append(avoid, p)
	}
	m.avoid = map[peer.ID]time.Time{}
	m.avoidHosts(sortPeers(avoid))
	switch m.rec.State {
	case job.Running:
		m.reattach()
	case job.Stopped:
		m.resumeStopped()
	default:
		m.reserve()
	}
}

// resumeStopped floods again for a job stopped with a checkpoint: the
// output files of the stopped run go (the next run writes them anew), and
// its hosts may fetch the checkpoint's files.
func (m *Machine) resumeStopped() {
	c, _ := m.rec.LastComplete()
	m.emit(DropOutputs{})
	m.grantCheckpoints()
	m.note = fmt.Sprintf("resumed from checkpoint %d", c.Num)
	m.notice(fmt.Sprintf("resuming from checkpoint %d (taken %s, %d bytes)", c.Num, c.Taken.Format(time.TimeOnly), c.Bytes()))
	m.reserve()
}

// reattach takes back the run of the record's plan after this agent
// restarted. Every host not known to be done is asked whether it still
// runs the job (OpResume); those that do send again what the journal
// lacks, and the job is watched to its end as if nothing had happened. A
// host that no longer runs it lost its copies: a replicated job goes on
// while every rank keeps one; otherwise the job fails
// (job.ReasonRestarted), since starting it again would run it twice.
//
// The record says running once every host started its processes, which
// is before the release: the journal says which hosts had every copy in
// Init, and the release goes out again (hosts take it once) when all had,
// or when the rest, asked again, say so.
func (m *Machine) reattach() {
	plan := *m.rec.Plan
	m.plan = plan
	lost := map[proto.Proc]bool{}
	for _, l := range m.rec.Lost {
		lost[proto.Proc{Rank: l.Rank, Replica: l.Replica}] = true
	}
	m.lost = append([]job.LostCopy(nil), m.rec.Lost...)
	m.run = newAttempt(plan)
	m.run.running = true
	j := m.journal
	for _, p := range m.run.order {
		h := m.run.hosts[p]
		lease := h.plan.Offer.Lease
		h.started, h.ready, h.seq, h.done = true, j.Ready[lease], j.Seq[lease], j.Done[lease]
		allLost := true
		for _, pr := range h.plan.Procs {
			allLost = allLost && lost[pr]
		}
		h.done = h.done || allLost
		if !h.done {
			m.emit(AddAddrs{Host: p, Addrs: h.plan.Offer.Addrs})
			m.run.awaiting[p] = true
			m.run.asked++
			m.lease(p, proto.LeaseRequest{Op: proto.OpResume, Lease: lease})
		}
	}
	m.emit(Watch{Leases: m.run.leases(), Seqs: j.Seq})
	m.grantCheckpoints() // a restart after this agent's own may need them
	// The cancels of the unused offers may not have gone out before the
	// agent stopped: their leases would hold slots until they expire. A
	// worker that no longer holds one refuses, which is final.
	m.dropSpares()
	m.phase = reattaching
	m.reattached()
}

// onResumed takes a host's answer to OpResume.
func (m *Machine) onResumed(r LeaseReply) {
	if !m.run.awaiting[r.Host] {
		return
	}
	if h := m.run.hosts[r.Host]; r.Err != nil && h != nil && m.run.resumeAsked[r.Host] < resumeTries {
		// No answer is not a no: a lost reply would end a job whose
		// host still runs it. Ask again.
		m.run.resumeAsked[r.Host]++
		m.lease(r.Host, proto.LeaseRequest{Op: proto.OpResume, Lease: h.plan.Offer.Lease})
		return
	}
	delete(m.run.awaiting, r.Host)
	if r.Err != nil || !r.Reply.OK {
		m.run.refused = append(m.run.refused, r.Host)
	}
	m.reattached()
}

// resumeTries is how many times a host that did not answer OpResume is
// asked again before it counts as no longer running the job.
const resumeTries = 2

// reattached goes on once every host has answered whether it still runs
// the job.
func (m *Machine) reattached() {
	run := m.run
	if len(run.awaiting) > 0 {
		return
	}
	gone := sortPeers(run.refused)
	run.refused = nil
	m.notice(fmt.Sprintf("re-attached after this agent restarted: %d of %d hosts still run the job", run.asked-len(gone), run.asked))
	for _, p := range gone {
		if m.rec.Desc.Replicas == 1 {
			m.endReattach(fmt.Errorf("%s: host %s no longer runs the job", job.ReasonRestarted, job.ShortPeer(p)))
			return
		}
		if out := m.onLost(p, "gone after the submitter restarted", m.now); out != nil {
			// Not a failure to recover from: never run twice.
			m.endReattach(errors.New(job.ReasonRestarted + ": " + out.why))
			return
		}
	}
	if m.cancel != "" {
		m.runEnded(cancelled(m.cancel))
		return
	}
	if run.all(func(h *hostRun) bool { return h.done }) {
		m.runEnded(done())
		return
	}
	m.releaseIfReady()
	m.watch(true)
}

// endReattach ends a re-attached job that cannot go on.
func (m *Machine) endReattach(err error) {
	m.phase = watching // the run's end takes it from here
	m.runEnded(fatal(err.Error()))
}

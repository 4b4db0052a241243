package lifecycle

import (
	"fmt"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job"
)

// The fence: a host counted lost may only be cut off, its processes
// running on; a rank of a job without replicas started again elsewhere
// would then run twice at once. Every commit carries Config.Fence
// (proto.Commit.Fence): a host whose submitter has answered nothing it
// sent for that long freezes the job's processes, and thaws them only
// when the submitter answers again, which a submitter that counted the
// host lost does with a refusal (the worker then kills them). So the
// machine starts no new attempt before every host counted lost has
// surely frozen: Fence and a fifth after the host was last heard from.
// The worker counts from the send time of the last message the submitter
// answered, which the submitter heard at or before its last stamp of the
// host, so both count from the same instant or the worker from an
// earlier one. A host lost to silence is counted lost LostAfter after
// that stamp, past its fence already; one whose stream ended, or that
// another host reports unreachable, is fenced from the loss, the time
// the machine takes it (its last stamp may be older than the last bytes
// the reader saw); so is a host given up on at the end of a run (its
// start failed, or its kill or retry went unconfirmed). Those hosts'
// leases are refused from then on (disown): a cut-off host that comes
// back is told to kill what it froze. A kill a host confirms lifts its
// fence, and a host that says it leaves (RepLeaving, its agent draining)
// is in touch and ends its processes itself: it gets none.

// disown makes the job refuse the reports of a lease whose run it ended:
// a host cut off when the run ended, which the kill did not reach, is
// refused when it reconnects, and kills its processes, rather than taken
// back and continued.
func (m *Machine) disown(lease, why string) {
	if why == "" {
		why = "the run ended"
	}
	m.emit(Refuse{Lease: lease, Why: why})
}

// fenceHost keeps the next attempt's start until host p, last heard at
// heard, has surely frozen the job's processes; a zero heard fences
// nothing.
func (m *Machine) fenceHost(p peer.ID, heard time.Time) {
	if heard.IsZero() {
		return
	}
	if heard.After(m.now) {
		heard = m.now
	}
	for q, until := range m.fences {
		if !m.now.Before(until) {
			delete(m.fences, q) // closed
		}
	}
	if until := heard.Add(m.cfg.Fence + m.cfg.Fence/5); until.After(m.fences[p]) {
		m.fences[p] = until
	}
}

// unfence lifts p's fence: it confirmed a kill, its processes end. A
// start that waited for the fences goes when none is left open.
func (m *Machine) unfence(p peer.ID) {
	if _, ok := m.fences[p]; !ok {
		return
	}
	delete(m.fences, p)
	if m.phase == pausing && m.deferred != nil {
		m.pauseTo = m.fencedUntil()
		m.resumeReserving()
	}
}

// fencedUntil is when the last fence open closes (zero when none is).
func (m *Machine) fencedUntil() time.Time {
	var last time.Time
	for _, until := range m.fences {
		if m.now.Before(until) && until.After(last) {
			last = until
		}
	}
	return last
}

// startAfterFence keeps plan's start until the fence has closed on every
// host lost (pausing: a cancel gives its offers back).
func (m *Machine) startAfterFence(plan job.Plan) {
	m.deferred = &plan
	m.phase, m.pauseTo = pausing, m.fencedUntil()
	m.notice(fmt.Sprintf("starting again in %v, once any process left on the hosts given up is surely frozen (a host cut off from this agent freezes them after %v without an answer)",
		m.pauseTo.Sub(m.now).Round(time.Millisecond), m.cfg.Fence))
}

// afterFence starts the plan kept for the fence. An offer of it that
// stops counting meanwhile is not committed: a spare is dropped; a
// host's offer fails the start as offers expired at a commit do
// (LeaseExpired: the job matches again at once).
func (m *Machine) afterFence(plan job.Plan) {
	plan.Spares = slices.DeleteFunc(slices.Clone(plan.Spares), m.expiring)
	var gone []peer.ID
	for _, o := range plan.Offers() {
		if m.expiring(o) {
			gone = append(gone, o.Peer)
		}
	}
	if len(gone) == 0 {
		m.start(plan)
		return
	}
	// The recovery gives back what the job holds: every offer of plan.
	m.plan, m.kept = plan, map[peer.ID]string{}
	for _, o := range plan.Offers() {
		m.kept[o.Peer] = o.Lease
	}
	if m.run != nil {
		m.run.fallback = nil // a fallback is a start of its own, not this one's
	}
	m.recoverFrom(job.Failure{Kind: job.LeaseExpired, Hosts: sortPeers(gone),
		Why: fmt.Sprintf("the offers of %d host(s) expired while the start waited for the fence", len(gone))})
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

package lifecycle

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/internal/gang"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// start begins the two-phase start of plan (CrossGrid's): the commits go
// out at once, and every host's reply is awaited before the start is
// judged (committing); in phase one the hosts stage and start their
// processes and every rank enters mpi.Init, and phase two releases them
// from it, which watch follows.
func (m *Machine) start(plan job.Plan) {
	if m.cancel != "" {
		m.cancelLeases(append(plan.Offers(), plan.Spares...))
		m.finish(cancelled(m.cancel))
		return
	}
	if m.now.Before(m.fencedUntil()) {
		m.startAfterFence(plan)
		return
	}
	m.plan = plan
	m.rec.Plan = &plan // in the record before watchers hear of the start
	m.setState(job.Starting, m.takeNote())
	m.beginRun(plan)
	m.emit(Save{})
	m.run = newAttempt(plan)
	m.emit(Watch{Leases: m.run.leases()})
	m.kept = map[peer.ID]string{}
	m.lost = nil
	m.phase = committing
	for _, c := range m.commits(plan) {
		m.run.awaiting[c.Host] = true
		m.emit(c)
	}
}

// onCommitted takes a commit's reply; once every one is in, a start whose
// hosts all took their commit is watched, one with refusals is stopped.
func (m *Machine) onCommitted(r LeaseReply) {
	run := m.run
	if !run.awaiting[r.Host] {
		return
	}
	delete(run.awaiting, r.Host)
	if r.Err != nil || !r.Reply.OK {
		log.Infow("commit failed", "job", m.rec.ID, "host", r.Host, "err", r.Err, "refused", r.Reply.Error)
		run.refused = append(run.refused, r.Host)
		if h := run.hosts[r.Host]; h != nil && r.Err == nil {
			h.spared = true // it answered: it took nothing
		}
	}
	if len(run.awaiting) > 0 {
		return
	}
	if m.cancel != "" {
		m.runEnded(cancelled(m.cancel))
		return
	}
	if len(run.refused) > 0 {
		m.stopStart(m.commitFailure(run.refused))
		return
	}
	m.watch(false)
}

// commitFailure classes refused commits: offers that expired meanwhile
// (their hosts are fine: the job matches again at once), else hosts
// silent.
func (m *Machine) commitFailure(refused []peer.ID) job.Failure {
	expired := true
	for _, p := range refused {
		if h := m.run.hosts[p]; h == nil || h.plan.Offer.Expires.IsZero() || m.now.Before(h.plan.Offer.Expires) {
			expired = false
		}
	}
	if expired {
		return job.Failure{Kind: job.LeaseExpired, Hosts: sortPeers(refused),
			Why: fmt.Sprintf("the offers of %d host(s) expired before their commit", len(refused))}
	}
	return job.Failure{Kind: job.HostSilent, Hosts: sortPeers(refused),
		Why: fmt.Sprintf("%d host(s) refused or did not answer the commit", len(refused))}
}

// stopStart ends a failed start. Every process is killed; the hosts not at
// fault keep their slots under new lease keys (OpRetry), so that a retry
// on the same hosts and the spares can commit again. Their replies are
// awaited: a host that could not keep its slots (it had failed too, or
// vanished) joins the hosts at fault.
func (m *Machine) stopStart(f job.Failure) {
	m.stopKeeping(peerSet(f.Hosts), f.Why, failed(f))
}

// stopKeeping ends the run's processes: the hosts in drop end their
// leases (OpKill), the others keep their slots under new keys (OpRetry),
// and out is the run's outcome once every reply is in (startStopped).
func (m *Machine) stopKeeping(drop map[peer.ID]bool, why string, out outcome) {
	m.run.awaiting = map[peer.ID]bool{}
	for _, p := range m.run.order {
		h := m.run.hosts[p]
		if h.done {
			continue
		}
		h.done = true
		op := proto.OpRetry
		switch {
		case drop[p] && h.spared: // it took nothing
			op = proto.OpKill
		case drop[p]:
			// At fault, it may run on, cut off: the retry waits for the
			// kill's answer, or for its fence.
			op = proto.OpKill
			m.disown(h.plan.Offer.Lease, why)
			m.fenceHost(p, m.now)
		default:
			m.run.awaiting[p] = true
		}
		m.lease(p, proto.LeaseRequest{Op: op, Lease: h.plan.Offer.Lease, Reason: why})
	}
	m.ending = &ending{out: out}
	m.phase = stoppingStart
	m.startStopped()
}

// onRetried takes a retry's reply: the new key of the slots the host
// kept; a host that did not confirm it is fenced.
func (m *Machine) onRetried(r LeaseReply) {
	if !m.run.awaiting[r.Host] {
		return
	}
	delete(m.run.awaiting, r.Host)
	if r.Err == nil && r.Reply.OK && r.Reply.Lease != "" {
		m.kept[r.Host] = r.Reply.Lease
	} else if h := m.run.hosts[r.Host]; h != nil {
		// Unconfirmed: it may run on, cut off.
		m.disown(h.plan.Offer.Lease, "its slots could not be kept for a retry")
		m.fenceHost(r.Host, m.now)
	}
	m.startStopped()
}

// startStopped goes on once every retry's reply is in.
func (m *Machine) startStopped() {
	if len(m.run.awaiting) > 0 {
		return
	}
	if out := m.ending.out; out.kind == outResized {
		m.finishResize(out)
		return
	}
	f := m.ending.out.fail
	bad := peerSet(f.Hosts)
	for _, p := range m.run.order {
		if _, ok := m.kept[p]; !ok && !bad[p] {
			f.Hosts = append(f.Hosts, p)
		}
	}
	m.ending = nil
	m.endRun(f.Why)
	m.recoverFrom(f)
}

// withKept returns plan with the lease keys its hosts kept after a failed
// start.
func (m *Machine) withKept(plan job.Plan) job.Plan {
	plan.Hosts = append([]job.HostPlan(nil), plan.Hosts...)
	for i, h := range plan.Hosts {
		if key, ok := m.kept[h.Offer.Peer]; ok {
			// The host reserved its slots again for the retry, for as long
			// as it holds any offer: its reply says no expiry.
			plan.Hosts[i].Offer.Lease, plan.Hosts[i].Offer.Expires = key, time.Time{}
		}
	}
	return plan
}

// held lists the offers still reserved for the job after a failed start:
// the hosts that kept their slots, and the spares.
func (m *Machine) held() []job.Offer {
	var out []job.Offer
	for _, h := range m.withKept(m.plan).Hosts {
		if _, ok := m.kept[h.Offer.Peer]; ok {
			out = append(out, h.Offer)
		}
	}
	return append(out, m.plan.Spares...)
}

// failedOffers returns the offers of plan held by the given hosts.
func failedOffers(plan job.Plan, hosts []peer.ID) []job.Offer {
	bad := peerSet(hosts)
	var out []job.Offer
	for _, o := range append(plan.Offers(), plan.Spares...) {
		if bad[o.Peer] {
			out = append(out, o)
		}
	}
	return out
}

// beginRun records the start of an attempt on plan's hosts.
func (m *Machine) beginRun(plan job.Plan) {
	m.dropIncomplete()
	m.rec.Runs = job.AppendRun(m.rec.Runs, job.Run{Attempt: m.rec.Attempts, Started: m.now, Hosts: plan.Peers(), From: m.resumeFrom()})
}

// endRun records how the current attempt ended: "done", or what ended it.
func (m *Machine) endRun(why string) {
	if len(m.rec.Runs) == 0 {
		return
	}
	r := &m.rec.Runs[len(m.rec.Runs)-1]
	if !r.Ended.IsZero() {
		return
	}
	r.Ended, r.End = m.now, "done"
	if why != "" {
		r.End = why[:min(len(why), job.MaxReasonLen)]
	}
	m.emit(Save{})
}

// commits builds the per-host commit of plan, in the plan's order.
func (m *Machine) commits(plan job.Plan) []Lease {
	d := m.rec.Desc
	table := plan.RankTable()
	col := gangColumn(plan)
	timeout := d.Timeout
	if m.rec.Phase() == job.PhaseSwapped {
		timeout = m.rec.RemainingTimeout(m.now) // swapped out: the time it ran counts, the rest does not
	}
	out := make([]Lease, 0, len(plan.Hosts))
	for _, hp := range plan.Hosts {
		restore, from := m.restoreFor(plan, hp.Procs)
		c := &proto.Commit{Key: string(m.rec.Key), N: plan.N, R: d.Replicas, Program: *m.rec.Program, Args: d.Args,
			Env: envList(d.Env), Inputs: m.rec.Inputs, Outputs: d.Outputs, Timeout: timeout,
			Procs: hp.Procs, RankTable: table, Attempt: m.rec.Attempts, PMI: d.PMI,
			CheckpointEvery: d.CheckpointEvery, Restore: restore, RestoreSize: from, GangColumn: col,
			Fence: m.cfg.Fence}
		out = append(out, Lease{Host: hp.Offer.Peer, Req: proto.LeaseRequest{Op: proto.OpCommit, Job: m.rec.ID,
			Lease: hp.Offer.Lease, Commit: c}})
	}
	return out
}

// envList turns a job's environment into sorted K=V strings.
func envList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// gangColumn picks the job's column of the hosts' time-slice rotation when
// every host of plan takes part in one; nil otherwise (the job is then
// co-scheduled wherever it shares a host). A column free on every host is
// taken when there is one; else the one free on most hosts, where the job
// shares its slices with the job that holds that column.
func gangColumn(plan job.Plan) *int {
	free := make([]uint64, 0, len(plan.Hosts))
	for _, hp := range plan.Hosts {
		if hp.Offer.GangFree == nil {
			return nil
		}
		free = append(free, *hp.Offer.GangFree)
	}
	if len(free) == 0 {
		return nil
	}
	col, err := gang.PickColumn(free)
	if errors.Is(err, gang.ErrNoCommonColumn) {
		log.Infow("no time-slice column free on every host: the job shares one", "column", col)
	}
	return &col
}

func peerSet(ids []peer.ID) map[peer.ID]bool {
	m := make(map[peer.ID]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

// sortPeers returns ids sorted, for effects and records that do not
// depend on the order replies came in.
func sortPeers(ids []peer.ID) []peer.ID {
	out := append([]peer.ID(nil), ids...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// dropSpares gives back the spares and takes them out of the plan, so
// that no later start commits a lease already cancelled.
func (m *Machine) dropSpares() {
	m.cancelLeases(m.plan.Spares)
	m.plan.Spares = nil
	if m.rec.Plan != nil {
		plan := *m.rec.Plan
		plan.Spares = nil
		m.rec.Plan = &plan
	}
}

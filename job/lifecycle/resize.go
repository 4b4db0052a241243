package lifecycle

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// Resizing. A malleable job changes size only at a checkpoint whose
// channels were empty (job.Checkpoint.Quiet): asked to resize, it has
// rank 0's host make the next Checkpoint call take one (OpCheckpoint), and
// asks again while the checkpoints that come are not quiet, up to
// ResizeTimeout. At a quiet one its run ends: the hosts it keeps kill
// their processes but keep their slots under new keys (OpRetry), those it
// gives back end their leases, and the job starts again at the new size
// on the hosts it keeps and those it grows onto, each rank reading the old
// ranks' states it needs (Commit.RestoreSize). A resize whose start fails
// falls back to the size and hosts it had, from the same checkpoint.

// resizing is a resize under way.
type resizing struct {
	target int
	why    string
	base   uint64    // the last complete checkpoint when it was asked
	by     time.Time // when it gives up
	asked  bool      // rank 0's host took the OpCheckpoint
	// waiters and askers are the jobs a give-way resize makes room for,
	// and the hosts that asked: those are given back first.
	waiters []job.Waiter
	askers  []peer.ID
	dropped []peer.ID // the hosts given back, once the run stopped
}

// giving reports whether the resize gives slots back.
func (rz *resizing) giving() bool { return len(rz.waiters) > 0 }

// fallback is what a start at a new size falls back to if it fails: the
// size and the hosts the job had, which kept their slots.
type fallback struct {
	size  int
	hosts []peer.ID
}

// askResize asks for a resize to target: rank 0's host is told to take a
// checkpoint at the program's next call.
func (m *Machine) askResize(target int, why string, w *GiveWay) {
	host, lease := m.rankZero()
	if host == "" {
		return
	}
	base := uint64(0)
	if c, ok := m.rec.LastComplete(); ok {
		base = c.Num
	}
	rz := &resizing{target: target, why: why, base: base, by: m.now.Add(m.cfg.ResizeTimeout)}
	if w != nil {
		rz.waiters, rz.askers = []job.Waiter{w.Waiter()}, []peer.ID{w.Host}
	}
	m.run.resize = rz
	m.lease(host, proto.LeaseRequest{Op: proto.OpCheckpoint, Lease: lease})
}

// onResizeAsked takes rank 0's host's answer to a resize's OpCheckpoint.
func (m *Machine) onResizeAsked(r LeaseReply) {
	rz := m.run.resize
	if r.Err == nil && r.Reply.OK {
		if !rz.asked {
			rz.asked = true
			m.notice(fmt.Sprintf("resizing from %d to %d processes at the next quiet checkpoint: %s", m.plan.N, rz.target, rz.why))
		}
		return
	}
	why := r.Reply.Error
	if r.Err != nil {
		why = r.Err.Error()
	}
	m.giveUpResize("rank 0's host was not told to checkpoint: " + why)
}

// giveUpResize ends a resize that will not happen; the job runs on at its
// size, and asks again only after ResizeEvery.
func (m *Machine) giveUpResize(why string) {
	m.run.resize = nil
	m.lastResize = m.now
	m.notice("resize given up: " + why + "; the job runs on")
}

// resizeIfCheckpointed ends the run for the resize once a checkpoint newer
// than the one at the ask is complete and quiet; a loud one makes it ask
// for the next.
func (m *Machine) resizeIfCheckpointed() *outcome {
	rz := m.run.resize
	if rz == nil {
		return nil
	}
	c, ok := m.rec.LastComplete()
	if !ok || c.Num <= rz.base {
		return nil
	}
	if !c.Quiet() {
		rz.base = c.Num
		if host, lease := m.rankZero(); host != "" {
			m.lease(host, proto.LeaseRequest{Op: proto.OpCheckpoint, Lease: lease})
		}
		return nil
	}
	return &outcome{kind: outResized, num: c.Num, why: rz.why}
}

// resizeTick gives a resize up at its timeout.
func (m *Machine) resizeTick() {
	if rz := m.run.resize; rz != nil && due(m.now, rz.by) {
		m.giveUpResize(fmt.Sprintf("no checkpoint without messages in flight within %v (does the program call Comm.Checkpoint between its exchanges?)", m.cfg.ResizeTimeout))
	}
}

// stopForResize ends the run at its quiet checkpoint: the hosts the job
// keeps keep their slots under new keys (OpRetry), those it gives back end
// their leases; the start at the new size follows every reply
// (finishResize).
func (m *Machine) stopForResize(out outcome) {
	rz := m.run.resize
	if rz.giving() {
		m.stopGrowing()
		rz.dropped = job.HostsToGive(m.plan, rz.askers, rz.target)
	}
	m.stopKeeping(peerSet(rz.dropped), "resizing: "+rz.why, out)
}

// finishResize starts the job at its new size on the hosts it kept and the
// offers it grows onto, or, when hosts were lost meanwhile, recovers as
// from their loss.
func (m *Machine) finishResize(out outcome) {
	rz, old := m.run.resize, m.plan
	var kept, lost []peer.ID
	for _, p := range m.run.order {
		if _, ok := m.kept[p]; ok {
			kept = append(kept, p)
		} else if !slices.Contains(rz.dropped, p) {
			lost = append(lost, p)
		}
	}
	var pool []job.Offer
	if g := m.run.grow; g != nil && !rz.giving() {
		pool = g.pool
	}
	m.ending = nil
	m.endRun(fmt.Sprintf("resized at checkpoint %d: %s", out.num, rz.why))
	if len(lost) > 0 {
		m.cancelLeases(pool)
		m.forgetHosts(rz.dropped) // given back: no recovery may count on them
		m.recoverFrom(job.Failure{Kind: job.HostLost, Hosts: lost, Why: fmt.Sprintf("%d host(s) did not keep their slots for the resize", len(lost))})
		return
	}
	offers := append(keptOffers(m.withKept(old), kept), pool...)
	job.OrderRList(offers, m.rec.Desc.Prefer)
	lo, hi := m.rec.Desc.SizeRange()
	target := rz.target
	if !rz.giving() { // offers that came since the ask count too
		target = min(hi, old.N+poolSlots(pool, hi))
	}
	plan, err := job.PlaceRange(m.rec.Desc.Strategy, offers, min(lo, target), target)
	if err != nil {
		m.cancelLeases(offers)
		m.finish(fatal(fmt.Sprintf("resize to %d: %v", target, err)))
		return
	}
	m.cancelLeases(plan.Spares)
	plan.Spares = nil
	m.resized(old.N, plan.N, rz.why)
	m.start(plan)
	m.run.fallback = &fallback{size: old.N, hosts: kept}
}

// keptOffers are the offers of plan of the given hosts.
func keptOffers(plan job.Plan, hosts []peer.ID) []job.Offer {
	var out []job.Offer
	for _, o := range plan.Offers() {
		if slices.Contains(hosts, o.Peer) {
			out = append(out, o)
		}
	}
	return out
}

// resized records a change of size, for status and the watchers.
func (m *Machine) resized(from, to int, why string) {
	m.lastResize = m.now
	m.rec.Resizes = job.AppendResize(m.rec.Resizes, job.Resize{At: m.now, From: from, To: to, Why: why})
	m.note = fmt.Sprintf("resized from %d to %d processes: %s", from, to, why)
	m.outputs = map[string]string{}
	m.emit(DropOutputs{})
}

// fallBack restarts a job whose start at a new size failed at the size and
// on the hosts it had, from the same checkpoint, when they all kept their
// slots; false otherwise.
func (m *Machine) fallBack(f job.Failure) bool {
	fb := m.run.fallback
	switch {
	case fb == nil, f.Kind == job.HostLost, f.Kind == job.RankFailed:
		return false
	}
	for _, p := range fb.hosts {
		if _, ok := m.kept[p]; !ok {
			return false
		}
	}
	plan := m.withKept(m.plan)
	var others []job.Offer
	for _, o := range plan.Offers() {
		if _, ok := m.kept[o.Peer]; ok && !slices.Contains(fb.hosts, o.Peer) {
			others = append(others, o)
		}
	}
	back, err := job.PlaceRange(m.rec.Desc.Strategy, keptOffers(plan, fb.hosts), fb.size, fb.size)
	if err != nil {
		return false
	}
	m.cancelLeases(others)
	m.avoidHosts(f.Hosts)
	m.resized(m.plan.N, back.N, "fell back: "+f.Why)
	m.start(back)
	return true
}

// GiveWay is a host's ask that a malleable job give slots back for a job
// that waits there; it is answered by an AnswerGiveWay effect with the
// same token.
type GiveWay struct {
	Token uint64
	Host  peer.ID
	Lease string // the job's lease on the asking host
	For   job.ID
	N     int // the waiting job's size, and its least size if malleable
	Min   int
}

// Waiter is the waiting job as job.GiveWayTarget takes it.
func (w GiveWay) Waiter() job.Waiter { return job.Waiter{Job: w.For, N: w.N, Min: w.Min} }

// onGiveWay takes a host's ask: the job shrinks at its next quiet
// checkpoint to what job.GiveWayTarget says of the jobs that asked, or
// says why it will not.
func (m *Machine) onGiveWay(w GiveWay) {
	if err := m.canGiveWay(w); err != nil {
		m.emit(AnswerGiveWay{Token: w.Token, Err: err})
		return
	}
	lo, _ := m.rec.Desc.SizeRange()
	rz := m.run.resize
	var waiters []job.Waiter
	if rz != nil && rz.giving() {
		waiters = rz.waiters
	}
	if !slices.ContainsFunc(waiters, func(x job.Waiter) bool { return x.Job == w.For }) {
		waiters = append(slices.Clone(waiters), w.Waiter())
	}
	target := job.GiveWayTarget(m.plan.N, lo, waiters)
	if given := job.HostsToGive(m.plan, append(slices.Clone(askersOf(rz)), w.Host), target); len(given) == 0 {
		target = m.plan.N // its hosts each run more processes than it can give
	}
	if target >= m.plan.N {
		why := fmt.Sprintf("job %s runs at its least size, %d processes", m.rec.ID, lo)
		if m.plan.N > lo {
			why = fmt.Sprintf("job %s of %d processes would not fit in an equal part of the %d job %s runs", w.For, w.N, m.plan.N, m.rec.ID)
		}
		m.emit(AnswerGiveWay{Token: w.Token, Err: errors.New(why)})
		return
	}
	m.emit(AnswerGiveWay{Token: w.Token})
	if rz != nil && rz.giving() {
		rz.waiters, rz.target = waiters, target
		if !slices.Contains(rz.askers, w.Host) {
			rz.askers = append(rz.askers, w.Host)
		}
		return
	}
	m.stopGrowing()
	why := "gave way to " + string(w.For)
	if rz != nil { // a grow under way turns into the give-way
		rz.why, rz.target, rz.waiters, rz.askers = why, target, waiters, []peer.ID{w.Host}
		return
	}
	m.askResize(target, why, &w)
}

// canGiveWay says why the job cannot give way now, if it cannot.
func (m *Machine) canGiveWay(w GiveWay) error {
	switch {
	case m.phase != watching || !m.run.released:
		return fmt.Errorf("job %s does not run now", m.rec.ID)
	case !m.rec.Desc.Malleable():
		return fmt.Errorf("job %s is not malleable", m.rec.ID)
	case !m.runsUnder(w.Host, w.Lease):
		return fmt.Errorf("%w: host %s does not run job %s under that lease", job.ErrNotPreemptible, job.ShortPeer(w.Host), m.rec.ID)
	case m.run.stop != nil:
		return fmt.Errorf("job %s is stopping", m.rec.ID)
	}
	return nil
}

// askersOf are the hosts that asked a give-way resize, if rz is one.
func askersOf(rz *resizing) []peer.ID {
	if rz == nil || !rz.giving() {
		return nil
	}
	return rz.askers
}

// forgetHosts takes hosts out of the plan (the machine's and the
// record's): their leases ended.
func (m *Machine) forgetHosts(ps []peer.ID) {
	if len(ps) == 0 {
		return
	}
	gone := peerSet(ps)
	m.plan.Hosts = slices.DeleteFunc(slices.Clone(m.plan.Hosts), func(h job.HostPlan) bool { return gone[h.Offer.Peer] })
	plan := m.plan
	m.rec.Plan = &plan
}

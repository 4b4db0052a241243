package lifecycle

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// maxOfferAddrs bounds the addresses an offer keeps of its host.
const maxOfferAddrs = 8

// onOffer answers a measured offer: kept while the job reserves (unless
// its host is to be avoided, already holds one, or is the farthest of
// more than the job can use), refused at any other time so that the
// worker offers its slots to the next job in its line at once.
func (m *Machine) onOffer(o Offer) {
	delete(m.arriving, o.Token)
	if m.phase == watching && m.run.grow != nil {
		m.emit(AnswerOffer{Token: o.Token, Reply: m.takeGrowOffer(o)})
		return
	}
	if m.phase != reserving {
		m.emit(AnswerOffer{Token: o.Token, Reply: proto.OfferReply{Reason: m.notTakingOffers()}})
		return
	}
	rs := m.res
	m.heard(o.From)
	m.emit(AnswerOffer{Token: o.Token, Reply: m.takeOffer(o)})
	m.sample(rs.radius)
	if !rs.steering && m.feasible() {
		m.steer(true)
	}
	d := m.rec.Desc
	if _, hi := m.rec.RestartRange(); !rs.enough && job.Enough(d.Strategy, m.rlist, hi, d.Replicas) {
		// The schedule floods nothing more; the extra radius, if worth
		// it, is flooded once this one is answered.
		rs.enough, rs.ended = true, true
		rs.graceAt = m.now.Add(m.cfg.OfferGrace)
	}
}

// notTakingOffers says why an offer that comes outside a reservation is
// refused.
func (m *Machine) notTakingOffers() string {
	switch m.phase {
	case committing, watching:
		return "job already placed"
	case pausing:
		return "job is between two runs"
	case over:
		return "job ended"
	}
	return "job no longer reserving"
}

// takeOffer adds an offer to rlist (latency-sorted) and says whether the
// job keeps it.
func (m *Machine) takeOffer(o Offer) proto.OfferReply {
	if m.avoided(o.From) {
		return proto.OfferReply{Reason: "host recently failed a start of this job"}
	}
	if slices.ContainsFunc(m.rlist, func(h job.Offer) bool { return h.Peer == o.From }) {
		return proto.OfferReply{Reason: "already holding an offer from this host"}
	}
	if m.res.lapsed[o.From] {
		// Taken again, the host's slots would be held from other jobs for
		// another lease's life by a job that could not use them in this one.
		return proto.OfferReply{Reason: "this host's offer to the job expired; the job takes no other from it in this match"}
	}
	offer := m.offerOf(o)
	m.rlist = append(m.rlist, offer)
	m.usable[offer.Lease] = m.usableUntil(offer.Expires)
	m.declined.offered(o.From)
	d := m.rec.Desc
	job.OrderRList(m.rlist, d.Prefer)
	if d.PMI {
		job.PreferDirect(m.rlist)
	}
	if _, hi := m.rec.RestartRange(); len(m.rlist) > MaxHeld(hi, d.Replicas, m.cfg.Spares) {
		held := MaxHeld(hi, d.Replicas, m.cfg.Spares)
		// Overbooking is bounded: the farthest offer goes back, and it
		// may be this one.
		worst := m.rlist[len(m.rlist)-1]
		m.rlist = m.rlist[:len(m.rlist)-1]
		if worst.Lease == offer.Lease {
			return proto.OfferReply{Reason: fmt.Sprintf("the job holds the %d closer offers it can use", held)}
		}
		m.cancelLeases([]job.Offer{worst})
	}
	return proto.OfferReply{Keep: true}
}

// offerOf is the offer an Offer input makes. Its addresses go in the
// record: a restarted agent that re-attaches to the job must reach its
// hosts before they reach it.
func (m *Machine) offerOf(o Offer) job.Offer {
	addrs := o.Addrs[:min(len(o.Addrs), maxOfferAddrs)]
	return job.Offer{Peer: o.From, Lease: o.Msg.Lease, Slots: o.Msg.Slots, Cores: o.Msg.Cores, Memory: o.Msg.Memory,
		RTT: o.RTT, Addrs: slices.Clone(addrs), Site: proto.SiteName(o.Msg.Site), Relayed: o.Relayed,
		GangFree: o.Msg.GangFree, Expires: o.Msg.Expires}
}

// usableUntil is when an offer that came now, and whose lease expires at
// t, stops counting: a commit sent later may arrive after the lease is
// gone. The margin is the config's, or a quarter of the offer's life when
// that is shorter (a host that leases for seconds). The zero time never
// expires.
func (m *Machine) usableUntil(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.Add(-min(m.cfg.ExpiryMargin, max(t.Sub(m.now), 0)/4))
}

// expiring reports whether an offer no longer counts.
func (m *Machine) expiring(o job.Offer) bool {
	t := m.usable[o.Lease]
	return !t.IsZero() && !m.now.Before(t)
}

// nextExpiry is when the first offer held stops counting.
func (m *Machine) nextExpiry() time.Time { return m.nextExpiryOf(m.rlist) }

// nextExpiryOf is when the first of offers stops counting.
func (m *Machine) nextExpiryOf(offers []job.Offer) time.Time {
	var first time.Time
	for _, o := range offers {
		if t := m.usable[o.Lease]; !t.IsZero() && (first.IsZero() || t.Before(first)) {
			first = t
		}
	}
	return first
}

// dropExpired forgets the offers whose leases expire before a commit
// could reach them: their workers drop them on their own, and a job never
// commits an expired offer. It goes on looking, without the hosts whose
// offers lapsed (lapsed).
func (m *Machine) dropExpired() {
	gone := 0
	m.rlist = slices.DeleteFunc(m.rlist, func(o job.Offer) bool {
		if m.expiring(o) {
			gone++
			m.res.lapsed[o.Peer] = true
			return true
		}
		return false
	})
	if gone == 0 {
		return
	}
	log.Infow("offers expired before the job could be placed", "job", m.rec.ID, "offers", gone)
	rs, d := m.res, m.rec.Desc
	m.sample(rs.radius)
	feasible := m.feasible()
	m.steer(feasible)
	_, hi := m.rec.RestartRange()
	rs.enough = rs.enough && job.Enough(d.Strategy, m.rlist, hi, d.Replicas)
	if !feasible {
		rs.graceAt = time.Time{}
	}
}

// yield gives back the lease held on from when the job cannot be placed
// yet: the worker said an earlier job waits for those slots. The worker
// keeps this job in its line and offers again when it can.
func (m *Machine) yield(from peer.ID) {
	if !ShouldYield(m.feasible()) {
		return
	}
	i := slices.IndexFunc(m.rlist, func(o job.Offer) bool { return o.Peer == from })
	if i < 0 {
		return
	}
	o := m.rlist[i]
	m.rlist = slices.Delete(m.rlist, i, i+1)
	log.Debugw("giving a contested host to an earlier job", "job", m.rec.ID, "host", from)
	m.cancelLeases([]job.Offer{o})
	// The host answered, and keeps the job in its line: it counts as a
	// decline that may pass (Hopeless), not as a host that never answered.
	m.declined.add(from, proto.DeclineMsg{Job: m.rec.ID, Code: proto.DeclineYield})
}

// feasible reports whether the offers so far can hold the job.
func (m *Machine) feasible() bool {
	d := m.rec.Desc
	lo, _ := m.rec.RestartRange()
	slist, _ := job.SelectHosts(m.rlist, lo, d.Replicas)
	return job.Feasible(slist, lo, d.Replicas) == nil
}

// slots counts the process slots offered so far (c_i summed).
func (m *Machine) slots() int {
	_, hi := m.rec.RestartRange()
	total := 0
	for _, o := range m.rlist {
		total += job.Capacity(o, hi)
	}
	return total
}

// place runs the placement on the offers held, gives back those it does
// not use (keeping a few spares reserved for a failing commit), and starts
// the job; a dry run lists its plan and gives every offer back.
func (m *Machine) place() {
	m.dropExpired() // never commit an offer whose lease expires first
	if m.phase != reserving {
		return
	}
	if !m.feasible() {
		if !m.now.Before(m.res.deadlineAt) {
			m.notEnough("the offers expired before the job could be placed")
		}
		return // the flood goes on for offers that replace them
	}
	plan, err := m.placeOn(m.rlist)
	m.res = nil
	if err != nil {
		m.cancelLeases(m.rlist)
		m.finish(fatal(err.Error()))
		return
	}
	m.rec.Offers = slices.Clone(m.rlist)
	m.rec.Declines = m.declined.counts()
	if m.rec.DryRun {
		m.rec.Plan = &plan
		m.cancelLeases(m.rlist)
		m.finish(done())
		return
	}
	sort.SliceStable(plan.Spares, func(i, j int) bool { return plan.Spares[i].RTT < plan.Spares[j].RTT })
	spares := min(m.cfg.Spares, len(plan.Spares))
	m.cancelLeases(plan.Spares[spares:])
	plan.Spares = plan.Spares[:spares:spares] // still reserved: Replan's spares
	m.start(plan)
}

// placeOn places the job on offers (job.Description.PlaceOn), at the
// size of the checkpoint it restarts from when it cannot change size
// there (job.Record.RestartRange).
func (m *Machine) placeOn(offers []job.Offer) (job.Plan, error) {
	d := m.rec.Desc
	if lo, hi := m.rec.RestartRange(); lo == hi && d.Malleable() {
		d.MinNodes, d.Nodes = 0, hi
	}
	return d.PlaceOn(offers)
}

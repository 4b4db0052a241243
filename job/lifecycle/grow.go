package lifecycle

import (
	"fmt"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/flood"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// Growing. A malleable job that runs below its largest size stays visible
// to agents with free slots: it floods an advert for the processes it
// lacks (Need.Grow, a key of its own per search) on the flood's growing
// radius, and again after a wait that doubles while searches find nothing.
// Hosts that decline it for lack of room list it in their waiting line and
// offer their slots when they free, after every job waiting to start. The
// offers it keeps (its pool) are used at its next resize.

// growSearch is the current search for more hosts, and the offers kept.
type growSearch struct {
	key    string
	body   []byte
	issued time.Time
	growth flood.Growth
	next   time.Time     // when the next search starts, once this one is over
	wait   time.Duration // the wait after the next search that finds nothing
	pool   []job.Offer
}

// startGrowing begins the searches of a malleable job released below its
// largest size.
func (m *Machine) startGrowing() {
	_, hi := m.rec.Desc.SizeRange()
	if !m.rec.Desc.Malleable() || m.plan.N >= hi || m.run.grow != nil {
		return
	}
	m.run.grow = &growSearch{wait: m.cfg.GrowEvery}
	m.newGrowSearch()
}

// newGrowSearch floods a new advert for the processes the job lacks.
func (m *Machine) newGrowSearch() {
	g := m.run.grow
	_, hi := m.rec.Desc.SizeRange()
	need := m.rec.Desc.Need(m.rec.ID)
	need.N, need.Min, need.Grow, need.Deadline = hi-m.plan.N, 0, true, m.cfg.GrowLife
	body, err := encodeYielding(need, m.yieldTo)
	if err != nil {
		log.Warnw("grow advert not encoded", "job", m.rec.ID, "err", err)
		g.next = m.now.Add(m.cfg.GrowEveryMax)
		return
	}
	g.key, g.body, g.issued, g.next = m.nextAdvertKey(), body, m.now, time.Time{}
	g.growth = flood.NewGrowth(m.cfg.Schedule, m.env.FloodLimit)
	m.growFlood()
}

// growFlood floods the search's next radius, or, after the largest, sets
// when the next search starts.
func (m *Machine) growFlood() {
	g := m.run.grow
	r, more := g.growth.Next()
	if !more {
		g.next = m.now.Add(g.wait)
		g.wait = min(2*g.wait, m.cfg.GrowEveryMax)
		return
	}
	g.growth = g.growth.Flooded(r, m.now)
	m.emit(Flood{Key: g.key, Body: g.body, Issued: g.issued, Radius: r})
}

// growTick moves the searches on and drops the offers about to expire.
func (m *Machine) growTick() {
	g := m.run.grow
	if g == nil {
		return
	}
	g.pool = m.dropExpiring(g.pool)
	switch {
	case !m.searching():
	case g.next.IsZero() && due(m.now, g.growth.Due()):
		m.growFlood()
	case due(m.now, g.next):
		m.newGrowSearch()
	}
}

// searching reports whether the job looks for more hosts now: not while
// a resize is under way, nor while the offers it keeps are all it can
// grow into.
func (m *Machine) searching() bool {
	_, hi := m.rec.Desc.SizeRange()
	return m.run.resize == nil && poolSlots(m.run.grow.pool, hi) < hi-m.plan.N
}

// growTimers are the searches' timers, and when the first offer kept
// stops counting.
func (m *Machine) growTimers() []time.Time {
	g := m.run.grow
	if g == nil {
		return nil
	}
	ts := []time.Time{m.nextExpiryOf(g.pool), m.growDueAt()}
	switch {
	case !m.searching():
	case g.next.IsZero() && g.body != nil:
		ts = append(ts, g.growth.Due())
	default:
		ts = append(ts, g.next)
	}
	return ts
}

// dropExpiring gives back the offers of pool that no longer count.
func (m *Machine) dropExpiring(pool []job.Offer) []job.Offer {
	gone := slices.DeleteFunc(slices.Clone(pool), func(o job.Offer) bool { return !m.expiring(o) })
	if len(gone) == 0 {
		return pool
	}
	m.cancelLeases(gone)
	return slices.DeleteFunc(pool, m.expiring)
}

// takeGrowOffer keeps an offer for the job's next resize, and asks for
// one when the resize may come.
func (m *Machine) takeGrowOffer(o Offer) proto.OfferReply {
	g := m.run.grow
	_, hi := m.rec.Desc.SizeRange()
	switch {
	case m.avoided(o.From):
		return proto.OfferReply{Reason: "host recently failed a start of this job"}
	case m.run.hosts[o.From] != nil:
		return proto.OfferReply{Reason: "the job runs on this host already"}
	case slices.ContainsFunc(g.pool, func(h job.Offer) bool { return h.Peer == o.From }):
		return proto.OfferReply{Reason: "already holding an offer from this host"}
	case m.run.resize != nil && m.run.resize.giving():
		return proto.OfferReply{Reason: "the job is giving slots back to jobs that wait"}
	case poolSlots(g.pool, hi) >= hi-m.plan.N:
		return proto.OfferReply{Reason: fmt.Sprintf("the job holds the offers it can grow into (%d processes)", hi-m.plan.N)}
	}
	offer := m.offerOf(o)
	g.pool = append(g.pool, offer)
	m.usable[offer.Lease] = m.usableUntil(offer.Expires)
	job.OrderRList(g.pool, m.rec.Desc.Prefer)
	m.growIfDue()
	return proto.OfferReply{Keep: true}
}

// poolSlots counts the processes the offers of pool hold for a job of
// largest size hi.
func poolSlots(pool []job.Offer, hi int) int {
	n := 0
	for _, o := range pool {
		n += job.Capacity(o, hi)
	}
	return n
}

// growIfDue asks for a resize to the size the pool allows once the last
// resize is at least ResizeEvery old and nothing else is under way.
func (m *Machine) growIfDue() {
	at, ok := m.growAt()
	if !ok || m.now.Before(at) {
		return
	}
	_, hi := m.rec.Desc.SizeRange()
	m.askResize(min(hi, m.plan.N+poolSlots(m.run.grow.pool, hi)), "grew", nil)
}

// growAt is when the offers kept may make the job grow (ResizeEvery after
// its last resize); false while it cannot (no offer kept, not released
// yet, a stop or a resize under way).
func (m *Machine) growAt() (time.Time, bool) {
	run := m.run
	if g := run.grow; g == nil || len(g.pool) == 0 || !run.released || run.resize != nil || run.stop != nil {
		return time.Time{}, false
	}
	if m.lastResize.IsZero() {
		return m.now, true
	}
	return m.lastResize.Add(m.rec.Desc.ResizeEvery), true
}

// growDueAt is growAt as a timer: zero when nothing waits for it.
func (m *Machine) growDueAt() time.Time {
	if at, ok := m.growAt(); ok && at.After(m.now) {
		return at
	}
	return time.Time{}
}

// stopGrowing gives back the offers of the job's searches: its run ended,
// or it gives slots back to jobs that wait.
func (m *Machine) stopGrowing() {
	if g := m.run.grow; g != nil {
		m.cancelLeases(g.pool)
		g.pool = nil
	}
}

// nextAdvertKey is a flood key the job has not used: each match and each
// search for more hosts floods under its own, so that no host takes a
// new advert for a copy of an old one.
func (m *Machine) nextAdvertKey() string {
	m.rec.Adverts = max(m.rec.Matches, m.rec.Adverts+1)
	return proto.FloodKey(m.rec.ID, m.rec.Adverts)
}

// growYield gives back the offer of host from that the job keeps to grow:
// a job waiting to start there asked for its slots (DeclineYield).
func (m *Machine) growYield(from peer.ID) {
	g := m.run.grow
	if g == nil {
		return
	}
	i := slices.IndexFunc(g.pool, func(o job.Offer) bool { return o.Peer == from })
	if i < 0 {
		return
	}
	m.cancelLeases(g.pool[i : i+1])
	g.pool = slices.Delete(g.pool, i, i+1)
}

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

// reserve begins a match: the advert goes out with radius 1, the radii
// grow on the schedule (faster once a radius is answered, Steer's rules
// in answeredStep), and the offers are collected until the job can be
// placed, the flood has reached every agent it can, or the scheduling
// deadline comes.
func (m *Machine) reserve() {
	if m.cancel != "" {
		m.finish(cancelled(m.cancel))
		return
	}
	if m.rec.State != job.Reserving { // a restart entered it before its backoff
		m.setState(job.Reserving, m.takeNote())
	}
	need := m.rec.Desc.Need(m.rec.ID)
	need.Deadline = m.deadline() // the hosts keep their offers as long as the job may look
	if lo, hi := m.rec.RestartRange(); lo == hi {
		need.N, need.Min = hi, 0 // a checkpoint with messages in flight fixes the size
	}
	body, err := encodeYielding(need, m.yieldTo)
	if err != nil {
		m.finish(fatal(err.Error()))
		return
	}
	rs := &reservation{key: m.nextAdvertKey(), body: body,
		growth: flood.NewGrowth(m.cfg.Schedule, m.env.FloodLimit), heard: map[peer.ID]bool{}, sent: map[peer.ID]bool{}, lapsed: map[peer.ID]bool{},
		gap: m.cfg.AnswerGap, grace: m.cfg.OfferGrace, extra: m.cfg.Schedule.Extra, floodedAt: m.now, last: m.now,
		deadlineAt: m.now.Add(m.deadline()), checkAt: m.now.Add(m.cfg.OfferGrace)}
	if m.env.KnowsPeers {
		rs.start = map[peer.ID]bool{}
		for _, p := range m.in.Known {
			rs.start[p.ID] = true
			if !p.Dead {
				rs.live++
			}
		}
	}
	m.res, m.phase = rs, reserving
	m.usable = map[string]time.Time{} // the last match's offers are given back
	m.sample(0)
	m.floodNext()
}

// floodNext floods the schedule's next radius; false when it has none.
func (m *Machine) floodNext() bool {
	rs := m.res
	r, ok := rs.growth.Next()
	if !ok {
		return false
	}
	rs.flooding = r
	m.emit(Flood{Key: rs.key, Body: rs.body, Issued: m.rec.Created, Radius: r})
	return true
}

// floodEnded notes that the flood has no radius left: a feasible job is
// placed once the offer grace has passed.
func (m *Machine) floodEnded() {
	rs := m.res
	rs.ended = true
	if !rs.enough && m.feasible() && rs.graceAt.IsZero() {
		rs.graceAt = m.now.Add(m.cfg.OfferGrace) // the reachable network has offered all it will
	}
}

// reservationEvent takes the inputs only a reservation acts on; at
// other times they are dropped (an offer measured is answered elsewhere).
func (m *Machine) reservationEvent(e Event) {
	switch e := e.(type) {
	case Arrived:
		m.arriving[e.Token] = true
		if m.phase == reserving {
			m.heard(e.From) // an offer being measured: its sender has answered
		}
	case OfferDropped:
		delete(m.arriving, e.Token)
	case Decline:
		if m.phase == reserving {
			m.onDecline(e)
		} else if m.phase == watching && e.Msg.Code == proto.DeclineYield {
			m.growYield(e.From)
		}
	case Flooded:
		if m.phase == reserving {
			m.onFlooded(e)
		}
	case DirectFailed:
		if m.phase == reserving {
			log.Infow("direct advert not sent", "job", m.rec.ID, "err", e.Err)
			m.res.directBy, m.res.settleAt = m.now, m.now // the next look floods the next radius
		}
	}
}

func (m *Machine) onFlooded(e Flooded) {
	rs := m.res
	if rs.flooding != e.Radius {
		return
	}
	extra := rs.extraOut
	rs.flooding, rs.extraOut = 0, false
	if e.Err != nil {
		if extra {
			log.Infow("extra radius not flooded", "job", m.rec.ID, "err", e.Err)
			m.place()
			return
		}
		log.Infow("advertising failed", "job", m.rec.ID, "err", e.Err)
		m.floodEnded()
		return
	}
	rs.growth = rs.growth.Flooded(e.Radius, m.now)
	rs.flooded(e.Radius, m.now)
	rs.settleAt = m.now.Add(rs.wait())
	m.sample(e.Radius)
	log.Debugw("radius flooded", "job", m.rec.ID, "radius", e.Radius, "answers", len(rs.heard))
}

func (m *Machine) onDecline(e Decline) {
	if e.Msg.Code == proto.DeclineYield {
		m.yield(e.From)
		return
	}
	m.declined.add(e.From, e.Msg)
	m.heard(e.From)
}

// heard notes an answer to the flood (an offer or a decline) from a
// peer, and when the radius now counts as answered.
func (m *Machine) heard(from peer.ID) {
	rs := m.res
	if m.now.Sub(rs.last) >= rs.gap {
		rs.burst = m.now // answers after a gap without any: a new burst
	}
	rs.last = m.now
	if from == m.env.Self || rs.heard[from] {
		return // its own worker answers at once: no sign the radius is answering
	}
	if len(rs.heard) == rs.before {
		rs.lag = max(rs.lag, m.now.Sub(rs.floodedAt))
	}
	if len(rs.heard) < maxHeard {
		rs.heard[from] = true
	}
	if m.env.KnowsPeers && !rs.allIn && len(rs.heard) >= rs.live {
		rs.look(m.in.Known) // perhaps the last one: settle after the answer gap only
	}
	switch d, waiting := rs.directWait(m.now); {
	case waiting:
		rs.settleAt = m.now.Add(d) // a direct advert's target has not answered yet
	case rs.held && !rs.allIn:
		rs.settleAt = m.now.Add(rs.gap) // waiting for the answers to stop: not at every one
	default:
		rs.settleAt = m.now.Add(rs.settleIn(m.now))
	}
}

// steer turns the schedule's own waits off while the job is feasible
// (radii then move on only when answered: a wider radius flooded while
// the last one's agents still answer reaches them again and slows their
// answers), and back on when it no longer is.
func (m *Machine) steer(on bool) {
	rs := m.res
	if rs.steering == on {
		return
	}
	rs.steering = on
	if on {
		rs.settleAt = m.now.Add(rs.settleIn(m.now))
		return
	}
	m.scheduleDue() // a wait that ended meanwhile floods the next radius now
}

// scheduleDue floods the next radius when the schedule's wait has passed
// and nothing holds it back; past the largest radius the flood has ended.
func (m *Machine) scheduleDue() {
	rs := m.res
	if rs.ended || rs.enough || rs.steering || rs.flooding != 0 || rs.growth.Radius() == 0 || m.now.Before(rs.growth.Due()) {
		return
	}
	if !m.floodNext() {
		m.floodEnded()
	}
}

// reservationTick acts on the reservation's timers that are due.
func (m *Machine) reservationTick() {
	rs := m.res
	steps := []struct {
		at time.Time
		do func()
	}{
		{rs.deadlineAt, m.onDeadline},
		{m.nextExpiry(), m.dropExpired},
		{rs.graceAt, m.onGrace},
		{rs.checkAt, m.check},
		{rs.settleAt, m.settle},
		{rs.growth.Due(), m.scheduleDue},
	}
	for _, s := range steps {
		if m.phase != reserving {
			return
		}
		if !s.at.IsZero() && !m.now.Before(s.at) {
			s.do()
		}
	}
}

// onGrace places the job once the offer grace has passed, unless offers
// withdrawn or expired meanwhile left it infeasible: it then looks on.
func (m *Machine) onGrace() {
	if !m.feasible() {
		m.res.graceAt = time.Time{}
		return
	}
	m.place()
}

func (m *Machine) onDeadline() {
	if m.feasible() {
		m.place()
		return
	}
	m.notEnough("")
}

// check looks whether waiting can help a job that cannot be placed yet
// (Hopeless), once the answers of the radius flooded last are in.
func (m *Machine) check() {
	rs := m.res
	feasible := m.feasible()
	m.steer(feasible)
	// A radius that brought no answer at all, long enough after the last
	// one: the flood has reached every agent it can.
	unheard := m.env.KnowsPeers && !rs.heardAll(m.in.Known) // a live peer the agent knows has not answered
	quiet := m.answers() == rs.answers && len(m.arriving) == 0 && m.now.Sub(rs.last) >= m.quietWait(unheard)
	rs.answers = m.answers()
	if Hopeless(quiet, feasible, m.declined.counts()) {
		m.notEnough("the flood reached every agent it could")
		return
	}
	// Some agents are busy: keep what is held and wait. A busy agent
	// queues the advert and offers the moment its slots free; a contested
	// host asks the later of two jobs to give it back (DeclineYield).
	next := rs.growth.Due().Add(rs.grace)
	if _, more := rs.growth.Next(); !more || rs.ended || !next.After(m.now) {
		next = m.now.Add(max(rs.grace, m.cfg.QuietAfter))
	}
	rs.checkAt = next
}

// quietWait is how long after the last answer the flood counts as having
// reached every agent, unheard telling whether a live peer the agent
// knows has not answered.
func (m *Machine) quietWait(unheard bool) time.Duration {
	if unheard {
		return m.cfg.QuietUnheard
	}
	return m.cfg.QuietAfter
}

// settle acts once the radius flooded last counts as answered.
func (m *Machine) settle() {
	rs := m.res
	rs.settleAt = time.Time{}
	if rs.extraOut {
		return // the extra radius's flood re-arms it
	}
	measuring := len(m.arriving) > 0
	if measuring && (rs.enough || m.now.Before(rs.decideBy())) {
		rs.settleAt = m.now.Add(rs.settleIn(m.now))
		return
	}
	if d, waiting := rs.directWait(m.now); waiting {
		rs.settleAt = m.now.Add(d)
		return
	}
	switch m.answeredStep(measuring) {
	case stepSchedule:
		m.steer(false) // no longer feasible (an offer withdrawn): the schedule's waits again
	case stepNext:
		m.floodOnAnswer()
	case stepLater:
		rs.held = true
		rs.settleAt = m.now.Add(rs.laterIn(m.now))
	case stepDirect:
		m.direct()
	case stepExtra:
		m.floodExtra()
	case stepPlace:
		log.Debugw("placing", "job", m.rec.ID, "answers", len(rs.heard), "offers", len(m.rlist))
		m.place()
	}
}

// floodOnAnswer moves the flood on to the next radius at once: the last
// one is answered. A flood still going out is the move already.
func (m *Machine) floodOnAnswer() {
	rs := m.res
	if rs.flooding != 0 {
		return
	}
	if !m.floodNext() {
		m.floodEnded()
	}
	// The radius asked for, counted from now: its Flooded resets these.
	rs.flooded(rs.radius+1, m.now)
	rs.settleAt = m.now.Add(rs.wait())
}

// floodExtra floods one radius beyond enough, where a closer host may be.
func (m *Machine) floodExtra() {
	rs := m.res
	rs.extra--
	if rs.flooding != 0 {
		return
	}
	r, ok := rs.growth.Next()
	if !ok {
		m.place()
		return
	}
	rs.flooding, rs.extraOut = r, true
	m.emit(Flood{Key: rs.key, Body: rs.body, Issued: m.rec.Created, Radius: r})
}

// direct sends the advert to the known peers that have not answered
// instead of a wider radius. Their answers are waited for as long as the
// last radius that brought answers took to bring its last: one hop is no
// slower than that.
func (m *Machine) direct() {
	rs := m.res
	for _, p := range rs.targets {
		rs.sent[p] = true
	}
	rs.held = true
	rs.directBy = m.now.Add(max(rs.wait(), rs.took))
	rs.settleAt = rs.directBy
	m.emit(Direct{Key: rs.key, Body: rs.body, Issued: m.rec.Created, Peers: slices.Clone(rs.targets)})
	log.Debugw("advert sent directly", "job", m.rec.ID, "radius", rs.radius, "peers", len(rs.targets))
}

// answeredStep gathers what nextStep needs once the radius flooded last
// has been answered, and decides.
func (m *Machine) answeredStep(measuring bool) step {
	rs, d := m.res, m.rec.Desc
	if m.env.KnowsPeers {
		rs.look(m.in.Known) // now: a young overlay is still learning its peers
	}
	a := answered{
		enough:    rs.enough,
		extra:     rs.enough && rs.extra > 0 && rs.radius < m.env.FloodLimit,
		more:      !rs.enough && !rs.ended && rs.radius < m.env.FloodLimit,
		feasible:  m.feasible(),
		measuring: measuring,
		trickling: m.now.Sub(rs.last) < rs.gap,
		allKnown:  rs.heardAll(rs.known),
		stable:    rs.start != nil && !Learnt(rs.start, rs.known),
		fresh:     len(rs.heard) - rs.before,
		quiet:     rs.radius - rs.lastFresh,
		since:     m.now.Sub(rs.floodedAt),
		empty:     max(rs.wait(), rs.grace),
		took:      rs.took,
	}
	if a.fresh > 0 {
		rs.lastFresh, a.quiet = rs.radius, 0
		rs.took = rs.last.Sub(rs.floodedAt)
	}
	var far time.Duration
	heard := func(p peer.ID) bool { return rs.heard[p] }
	if a.enough {
		plan, err := m.placeOn(m.rlist)
		far = plan.Farthest()
		a.worth = err == nil && ExtraWorthFor(d.Prefer, far, rs.known, heard)
	}
	rs.targets = directTargets(d.Prefer, a.enough, far, rs.known, heard)
	a.direct = canDirect(rs.targets, rs.sent, m.env.DirectLimit, a.stable)
	s := nextStep(a)
	log.Debugw("radius answered", "job", m.rec.ID, "radius", rs.radius, "answers", len(rs.heard), "fresh", a.fresh,
		"offers", len(m.rlist), "enough", a.enough, "worth", a.worth, "step", s)
	return s
}

// answers counts the agents that answered the flood so far.
func (m *Machine) answers() int { return len(m.rlist) + len(m.declined.by) }

// notEnough fails the job with what the flood found: the slots offered
// against those needed, and why the agents that declined did.
func (m *Machine) notEnough(why string) {
	d := m.rec.Desc
	m.rec.Offers = slices.Clone(m.rlist)
	m.rec.Declines = m.declined.counts()
	m.cancelLeases(m.rlist)
	lo, _ := m.rec.RestartRange()
	msg := fmt.Sprintf("not enough resources (got %d of %d process slots)", m.slots(), lo*d.Replicas)
	if why != "" {
		msg += ": " + why
	}
	if seen := job.SeenSummary(m.rlist, m.rec.Declines); seen != "" {
		msg += "; " + seen
	}
	m.res = nil
	m.finish(fatal(msg))
}

// sample records where the reservation stands, in the record and for the
// watchers: radius is the one flooded last.
func (m *Machine) sample(radius int) {
	d := m.rec.Desc
	_, hi := m.rec.RestartRange()
	s := job.FloodSample{At: m.now, Match: m.rec.Matches, Radius: max(radius, 1), // radius 1 goes out at once
		Offers: len(m.rlist), Slots: m.slots(), Need: hi * d.Replicas}
	m.rec.Flood = job.AppendSample(m.rec.Flood, s)
	m.emit(Notify{job.Update{Kind: "progress", Flood: &s}})
}

// encodeYielding encodes need for an advert with the jobs it yields to
// (Need.YieldTo, YieldWith): the first always, the rest as far as the
// advert's bound (MaxNeedSize) allows, dropped from the end. They are a
// courtesy to hosts whose own plan came too late: the hosts whose plan
// swapped the job out know the whole set already.
func encodeYielding(need proto.Need, yieldTo []job.ID) ([]byte, error) {
	if len(yieldTo) > 0 {
		need.YieldTo, need.YieldWith = yieldTo[0], yieldTo[1:]
	}
	for {
		b, err := proto.EncodeNeed(need)
		if err == nil || len(need.YieldWith) == 0 {
			return b, err
		}
		need.YieldWith = need.YieldWith[:len(need.YieldWith)-1]
	}
}

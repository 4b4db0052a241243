package job

import (
	"context"
	"errors"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/flood"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// maxHeard bounds the peers a reservation remembers having answered.
const maxHeard = 1 << 16

// defaultAnswerGap is the answer gap of a SubmitterConfig that leaves it
// unset.
const defaultAnswerGap = 150 * time.Millisecond

// reservation is the state of one reserve loop, owned by the session's
// goroutine: the radius flooded last and what it brought.
type reservation struct {
	radius    int       // flooded last (extra radii too)
	floodedAt time.Time // when
	before    int       // answers before it
	heard     map[peer.ID]bool
	known     []PeerRTT        // the agent's peers when the radius was answered
	start     map[peer.ID]bool // the peers the agent knew, alive or dead, when the flood began (nil: no Knower); a live one not in it means the overlay is still learning
	live      int              // live peers known at the last look
	allIn     bool             // every live known peer has answered and the overlay learnt none since the start
	lastFresh int              // the last radius that brought answers
	took      time.Duration    // how long after its flood that radius's last answer came
	gap       time.Duration    // answer gap
	lag       time.Duration    // the longest a radius took to bring its first answer
	last      time.Time        // when the last answer came (a repeated one too)
	held      bool             // the radius was looked at and is waited for (stepLater): an answer waits the gap again, not less
	grace     time.Duration    // the offer grace: bounds the wait for a radius's answers
	extra     int              // extra radii still allowed once enough
	enough    bool             // Enough held: the loop is stopped, the offers are collected
	steering  bool             // the loop is held (flood.Steer.Hold): the job is feasible and its radii move on only when answered
	ended     bool             // the flood loop has returned: no radius is left
	targets   []peer.ID        // known peers that have not answered, as of the last look (directTargets)
	sent      map[peer.ID]bool // peers sent the advert directly
	directBy  time.Time        // until when the answers to the direct advert are waited for
}

// wait is how long without an answer counts as the radius answered: the
// answer gap, or longer when answers are slow to start (a loaded network
// spaces them out as much as it delays the first).
// The offer grace bounds it.
// Once every peer the agent knows has answered, only the answer gap is
// waited: no answer is late any more.
func (rs *reservation) wait() time.Duration {
	if rs.allIn {
		return rs.gap
	}
	return max(rs.gap, min(rs.lag, rs.grace))
}

// decideBy is when the radius flooded last is answered at the latest,
// however its answers trickle in: on a loaded network they came a few a
// second for 5-9 s, each one putting the decision off again, and the
// flood fell back on the schedule's backoff (radius 6 of the simulation
// at 6.2 s). Answers still coming count for the next radius.
func (rs *reservation) decideBy() time.Time {
	return rs.floodedAt.Add(max(rs.wait(), rs.grace))
}

// settleIn is how long from now until the radius flooded last counts as
// answered if no answer comes meanwhile: the answer wait, but not past
// decideBy while the offers are not enough. Once they are, every answer
// may still tell that no closer host is silent (no extra radius to
// flood), and the offer grace bounds the wait.
func (rs *reservation) settleIn(now time.Time) time.Duration {
	if rs.enough {
		return rs.wait()
	}
	return max(0, min(rs.wait(), rs.decideBy().Sub(now)))
}

// laterIn is how long from now until a radius looked at too early
// (stepLater) is looked at again: once its answers have stopped for the
// answer wait when they are still coming (the offers of agents already
// heard, finishing their measurement: traced at full size, a feasible
// job otherwise sat out the rest of the offer grace, 0.5-0.8 s a radius,
// with every answer in); once it is as old as the last radius that
// brought answers took, when it brought nobody yet; else at the empty
// bound after its flood.
func (rs *reservation) laterIn(now time.Time) time.Duration {
	if now.Sub(rs.last) < rs.gap {
		return rs.wait()
	}
	since := now.Sub(rs.floodedAt)
	if rs.lastFresh < rs.radius && since < rs.took {
		return rs.took - since // a radius that brought nobody yet: as long as the last one took (nextStep)
	}
	return max(rs.gap, max(rs.wait(), rs.grace)-since)
}

// heardAll reports whether every live peer of known has answered.
func (rs *reservation) heardAll(known []PeerRTT) bool {
	return AllKnownHeard(known, func(p peer.ID) bool { return rs.heard[p] })
}

// look takes the agent's known peers again and says whether all of them
// have answered.
func (rs *reservation) look(k Knower) {
	rs.known = k.Known()
	rs.live = 0
	for _, p := range rs.known {
		if !p.Dead {
			rs.live++
		}
	}
	rs.allIn = rs.heardAll(rs.known) && !Learnt(rs.start, rs.known)
}

// encodeYielding encodes need for an advert with the jobs it yields to
// (Need.YieldTo, YieldWith): the first always, the rest as far as the
// advert's bound (MaxNeedSize) allows, dropped from the end. They are a
// courtesy to hosts whose own plan came too late: the hosts whose plan
// swapped the job out know the whole set already.
func encodeYielding(need proto.Need, yieldTo []ID) ([]byte, error) {
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

// reserve floods the advert with a growing radius and collects offers.
// Each time a radius is answered it decides (nextStep) to flood the next
// one at once, to flood the extra radius, or to place; the offer grace
// once enough bounds the wait for the extra radius. When the flood runs
// out of radii or the scheduling deadline comes first, a feasible job is
// placed with the offers in hand; otherwise it fails.
func (ss *session) reserve() (Plan, error) {
	if ss.rec.State != Reserving { // a restart entered it before its backoff
		ss.setState(Reserving, ss.takeNote())
	}
	d := ss.sub.Desc
	need := d.Need(ss.id)
	need.Deadline = ss.deadline() // the hosts keep their offers as long as the job may look
	body, err := encodeYielding(need, ss.yieldTo)
	if err != nil {
		return Plan{}, err
	}
	ctx, cancel := context.WithCancel(ss.ctx)
	defer cancel()
	enough, next, floodedR := make(chan int, 1), make(chan int, 1), make(chan int)
	hold := make(chan bool, 1)
	flooded := make(chan error, 1)
	// Issued is the job's submission, the same in every advert of it: the
	// job's Priority on contested hosts is how long it has waited.
	adv := flood.Advert{Job: proto.FloodKey(ss.id, ss.rec.Matches), Submitter: ss.s.h.ID(), Addrs: ss.s.h.Addrs(),
		Body: body, Issued: ss.rec.Created}
	ss.reserving.Store(true)
	defer ss.reserving.Store(false)
	st := flood.Steer{Enough: enough, Answered: next, Flooded: floodedR, Hold: hold}
	go func() { flooded <- ss.s.flood.Steered(ctx, adv, st, ss.s.cfg.Schedule) }()
	rs := &reservation{heard: map[peer.ID]bool{}, sent: map[peer.ID]bool{}, gap: ss.s.cfg.AnswerGap, extra: ss.s.cfg.Schedule.Extra,
		floodedAt: time.Now(), grace: ss.s.cfg.OfferGrace}
	knower, _ := ss.s.ping.(Knower)
	if knower != nil {
		rs.start = map[peer.ID]bool{}
		for _, p := range knower.Known() {
			rs.start[p.ID] = true
			if !p.Dead {
				rs.live++
			}
		}
	}
	if rs.gap <= 0 {
		rs.gap = defaultAnswerGap
	}
	deadline := time.NewTimer(ss.deadline())
	defer deadline.Stop()
	var grace <-chan time.Time
	settle := time.NewTimer(time.Hour)
	defer settle.Stop()
	// A job that cannot be placed looks at each radius's offers whether
	// waiting can help (Hopeless) and gives back what it holds meanwhile.
	radii := newRadiusClock(ss.s.cfg.Schedule, ss.s.cfg.OfferGrace, time.Now())
	check := time.NewTimer(radii.next(time.Now()))
	defer check.Stop()
	answers, began := 0, time.Now()
	rs.last = began
	for drained := false; !drained; { // news of an earlier match's offers
		select {
		case <-ss.arrivals:
		default:
			drained = true
		}
	}
	ss.sample(rs.radius)
	// Once the job is feasible the answers decide when the next radius
	// goes (stepNext), not the schedule's waits: a wait of 200-800 ms
	// ended while 350 agents were still answering the radius before, and
	// the next one, a full flood to agents that all had the advert,
	// slowed their answers (traced at full size).
	//
	// While the loop is held, only this loop's word moves it on, so
	// turning the hold on arms the settle timer: the offer that made the
	// job feasible may come from an agent heard before (it declined as
	// busy and offers now that its slots freed), which heard leaves the
	// timer alone for, and a stepSchedule before it left the timer
	// disarmed. Without this the job sat out its whole scheduling deadline
	// (2 min) with enough offers in hand (a restart after a host loss,
	// traced).
	steer := func(on bool) {
		if rs.steering == on {
			return
		}
		rs.steering = on
		select { // the loop has not taken the last one yet: this one replaces it
		case <-hold:
		default:
		}
		hold <- on
		if on {
			settle.Reset(rs.settleIn(time.Now()))
		}
	}
	heard := func(from peer.ID) {
		rs.last = time.Now()
		if from == ss.s.h.ID() || rs.heard[from] {
			return // its own worker answers at once: no sign the radius is answering
		}
		if len(rs.heard) == rs.before {
			rs.lag = max(rs.lag, time.Since(rs.floodedAt))
		}
		if len(rs.heard) < maxHeard {
			rs.heard[from] = true
		}
		if knower != nil && !rs.allIn && len(rs.heard) >= rs.live {
			rs.look(knower) // perhaps the last one: settle after the answer gap only
		}
		if d, waiting := rs.directWait(time.Now()); waiting {
			settle.Reset(d) // a direct advert's target has not answered yet
		} else if rs.held && !rs.allIn {
			settle.Reset(rs.gap) // waiting for the answers to stop: not at every one
		} else {
			settle.Reset(rs.settleIn(time.Now()))
		}
	}
	for {
		select {
		case r := <-floodedR:
			rs.radius, rs.floodedAt, rs.before, rs.held = r, time.Now(), len(rs.heard), false
			settle.Reset(rs.wait())
			ss.sample(rs.radius)
			log.Debugw("radius flooded", "job", ss.id, "radius", r, "at", time.Since(began), "answers", len(rs.heard))
		case <-settle.C:
			if ss.pending.Load() > 0 && (rs.enough || time.Now().Before(rs.decideBy())) {
				settle.Reset(rs.settleIn(time.Now()))
				continue
			}
			if d, waiting := rs.directWait(time.Now()); waiting {
				settle.Reset(d)
				continue
			}
			switch ss.answeredStep(rs, time.Since(began), ss.pending.Load() > 0) {
			case stepSchedule:
				steer(false) // no longer feasible (an offer withdrawn): the schedule's waits again
			case stepNext:
				select { // a stale radius the loop has not taken yet goes
				case <-next:
				default:
				}
				next <- rs.radius
				// The radius the loop is asked for, counted from now: its
				// Flooded resets these, unless it has no radius left.
				rs.radius, rs.floodedAt, rs.before, rs.held = rs.radius+1, time.Now(), len(rs.heard), false
				settle.Reset(rs.wait())
			case stepLater:
				rs.held = true
				settle.Reset(rs.laterIn(time.Now()))
			case stepDirect:
				ss.direct(ctx, adv, rs)
				settle.Reset(max(0, time.Until(rs.directBy)))
			case stepExtra:
				rs.extra--
				if err := ss.s.flood.Flood(ctx, adv, rs.radius+1); err != nil {
					log.Infow("extra radius not flooded", "job", ss.id, "err", err)
					return ss.place()
				}
				rs.radius, rs.floodedAt, rs.before, rs.held = rs.radius+1, time.Now(), len(rs.heard), false
				settle.Reset(rs.wait())
				ss.sample(rs.radius)
			case stepPlace:
				log.Debugw("placing", "job", ss.id, "at", time.Since(began), "answers", len(rs.heard), "offers", len(ss.rlist))
				return ss.place()
			}
		case <-check.C:
			feasible := ss.feasible()
			steer(feasible)
			// A radius that brought no answer at all, long enough after the
			// last one: the flood has reached every agent it can.
			unheard := knower != nil && !rs.heardAll(knower.Known()) // a live peer the agent knows has not answered
			quiet := ss.answers() == answers && ss.pending.Load() == 0 && time.Since(rs.last) >= quietWait(unheard)
			answers = ss.answers()
			if Hopeless(quiet, feasible, ss.declined.counts()) {
				return Plan{}, ss.notEnough("the flood reached every agent it could")
			}
			// Some agents are busy: keep what is held and wait. A busy
			// agent queues the advert and offers the moment its slots
			// free (worker/waitq.go); a contested host asks the later of
			// two jobs to give it back (DeclineYield).
			check.Reset(radii.next(time.Now()))
		case from := <-ss.arrivals:
			heard(from) // an offer being measured: its sender has answered
		case dc := <-ss.declines:
			if dc.msg.Code == proto.DeclineYield {
				ss.yield(dc.from)
				continue
			}
			ss.declined.add(dc.from, dc.msg)
			heard(dc.from)
		case o := <-ss.offers:
			heard(o.from)
			ss.takeOffer(o)
			ss.sample(rs.radius)
			if !rs.steering && ss.feasible() {
				steer(true)
			}
			if !rs.enough && Enough(d.Strategy, ss.rlist, d.Nodes, d.Replicas) {
				// The loop floods nothing more; the extra radius, if worth
				// it, is flooded once this one is answered.
				rs.enough = true
				enough <- 0
				grace = time.After(ss.s.cfg.OfferGrace)
			}
		case err := <-flooded:
			log.Debugw("flood loop ended", "job", ss.id, "at", time.Since(began), "err", err, "answers", len(rs.heard))
			rs.ended = true
			if err != nil && !errors.Is(err, flood.ErrMaxRadius) && ctx.Err() == nil {
				log.Infow("advertising failed", "job", ss.id, "err", err)
			}
			if !rs.enough && ss.feasible() && grace == nil {
				grace = time.After(ss.s.cfg.OfferGrace) // the reachable network has offered all it will
			}
		case <-grace:
			log.Debugw("offer grace over", "job", ss.id, "at", time.Since(began), "answers", len(rs.heard), "offers", len(ss.rlist))
			return ss.place()
		case <-deadline.C:
			if ss.feasible() {
				return ss.place()
			}
			return Plan{}, ss.notEnough("")
		case why := <-ss.cancel:
			ss.cancelLeases(ss.rlist)
			return Plan{}, errCancelled{why}
		case e := <-ss.events:
			e.release()
			log.Debugw("report outside a run", "job", ss.id, "from", e.from)
		case <-ss.ctx.Done():
			ss.cancelLeases(ss.rlist)
			return Plan{}, errCancelled{"agent shutting down"}
		}
	}
}

// answeredStep gathers what nextStep needs once the radius flooded last
// has been answered.
func (ss *session) answeredStep(rs *reservation, at time.Duration, measuring bool) step {
	d := ss.sub.Desc
	if k, ok := ss.s.ping.(Knower); ok {
		rs.look(k) // now: a young overlay is still learning its peers
	}
	a := answered{
		enough:    rs.enough,
		extra:     rs.enough && rs.extra > 0 && rs.radius < maxRadius(ss.s.cfg.Schedule),
		more:      !rs.enough && !rs.ended && rs.radius < maxRadius(ss.s.cfg.Schedule),
		feasible:  ss.feasible(),
		measuring: measuring,
		trickling: time.Since(rs.last) < rs.gap,
		allKnown:  rs.heardAll(rs.known),
		stable:    rs.start != nil && !Learnt(rs.start, rs.known),
		fresh:     len(rs.heard) - rs.before,
		quiet:     rs.radius - rs.lastFresh,
		since:     time.Since(rs.floodedAt),
		empty:     max(rs.wait(), rs.grace),
		took:      rs.took,
	}
	if a.fresh > 0 {
		rs.lastFresh, a.quiet = rs.radius, 0
		rs.took = rs.last.Sub(rs.floodedAt)
	}
	var far time.Duration
	if a.enough {
		plan, err := Place(d.Strategy, ss.rlist, d.Nodes, d.Replicas)
		far = farthest(plan)
		a.worth = err == nil && ExtraWorthFor(d.Prefer, far, rs.known, func(p peer.ID) bool { return rs.heard[p] })
	}
	rs.targets = directTargets(d.Prefer, a.enough, far, rs.known, func(p peer.ID) bool { return rs.heard[p] })
	a.direct = canDirect(rs.targets, rs.sent, ss.s.directLimit(), a.stable)
	s := nextStep(a)
	log.Debugw("radius answered", "job", ss.id, "at", at, "radius", rs.radius, "known", len(rs.known), "since", a.since, "answers", len(rs.heard), "fresh", a.fresh,
		"offers", len(ss.rlist), "enough", a.enough, "worth", a.worth, "all known", a.allKnown, "stable", a.stable, "quiet", a.quiet, "step", s, "unheard", unheard(rs), "direct", a.direct)
	return s
}

// unheard counts the known peers that have not answered, for the debug log.
func unheard(rs *reservation) int {
	n := 0
	for _, p := range rs.known {
		if !p.Dead && !rs.heard[p.ID] {
			n++
		}
	}
	return n
}

// maxRadius is the largest radius the schedule lets the flood reach: its
// MaxRadius, or the largest any flooder takes when it sets none.
func maxRadius(s flood.Schedule) int {
	if s.MaxRadius > 0 {
		return s.MaxRadius
	}
	return flood.HardMaxTTL
}

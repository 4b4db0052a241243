package job

import (
	"context"
	"errors"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/flood"
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
	known     []PeerRTT     // the agent's peers when the radius was answered
	first     int           // how many peers the agent knew when the flood began (-1: no Knower); knowing more since means it is still learning
	lastFresh int           // the last radius that brought answers
	gap       time.Duration // answer gap
	lag       time.Duration // the longest a radius took to bring its first answer
	grace     time.Duration // the offer grace: bounds the wait for a radius's answers
	extra     int           // extra radii still allowed once enough
	enough    bool          // Enough held: the loop is stopped, the offers are collected
}

// wait is how long without an answer counts as the radius answered: the
// answer gap, or longer when answers are slow to start (a loaded network
// spaces them out as much as it delays the first).
// The offer grace bounds it.
func (rs *reservation) wait() time.Duration { return max(rs.gap, min(rs.lag, rs.grace)) }

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
	body, err := EncodeNeed(d.Need(ss.id))
	if err != nil {
		return Plan{}, err
	}
	ctx, cancel := context.WithCancel(ss.ctx)
	defer cancel()
	enough, next, floodedR := make(chan int, 1), make(chan int, 1), make(chan int)
	flooded := make(chan error, 1)
	// Issued is the job's submission, the same in every advert of it: the
	// job's Priority on contested hosts is how long it has waited.
	adv := flood.Advert{Job: FloodKey(ss.id, ss.rec.Matches), Submitter: ss.s.h.ID(), Addrs: ss.s.h.Addrs(),
		Body: body, Issued: ss.rec.Created}
	ss.reserving.Store(true)
	defer ss.reserving.Store(false)
	st := flood.Steer{Enough: enough, Answered: next, Flooded: floodedR}
	go func() { flooded <- ss.s.flood.Steered(ctx, adv, st, ss.s.cfg.Schedule) }()
	rs := &reservation{heard: map[peer.ID]bool{}, gap: ss.s.cfg.AnswerGap, extra: ss.s.cfg.Schedule.Extra,
		floodedAt: time.Now(), grace: ss.s.cfg.OfferGrace, first: -1}
	if k, ok := ss.s.ping.(Knower); ok {
		rs.first = len(k.Known())
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
	answers, lastAnswer := 0, time.Now()
	ss.sample(rs.radius)
	heard := func(from peer.ID) {
		lastAnswer = time.Now()
		if from == ss.s.h.ID() || rs.heard[from] {
			return // its own worker answers at once: no sign the radius is answering
		}
		if len(rs.heard) == rs.before {
			rs.lag = max(rs.lag, time.Since(rs.floodedAt))
		}
		if len(rs.heard) < maxHeard {
			rs.heard[from] = true
		}
		settle.Reset(rs.wait())
	}
	for {
		select {
		case r := <-floodedR:
			rs.radius, rs.floodedAt, rs.before = r, time.Now(), len(rs.heard)
			settle.Reset(rs.wait())
			ss.sample(rs.radius)
		case <-settle.C:
			if ss.pending.Load() > 0 {
				settle.Reset(rs.wait())
				continue
			}
			switch ss.answeredStep(rs) {
			case stepNext:
				select { // a stale radius the loop has not taken yet goes
				case <-next:
				default:
				}
				next <- rs.radius
				// The radius the loop is asked for, counted from now: its
				// Flooded resets these, unless it has no radius left.
				rs.radius, rs.floodedAt, rs.before = rs.radius+1, time.Now(), len(rs.heard)
				settle.Reset(rs.wait())
			case stepLater:
				settle.Reset(max(rs.gap, max(rs.wait(), rs.grace)-time.Since(rs.floodedAt)))
			case stepExtra:
				rs.extra--
				if err := ss.s.flood.Flood(ctx, adv, rs.radius+1); err != nil {
					log.Infow("extra radius not flooded", "job", ss.id, "err", err)
					return ss.place()
				}
				rs.radius, rs.floodedAt, rs.before = rs.radius+1, time.Now(), len(rs.heard)
				settle.Reset(rs.wait())
				ss.sample(rs.radius)
			case stepPlace:
				return ss.place()
			}
		case <-check.C:
			feasible := ss.feasible()
			// A radius that brought no answer at all, long enough after the
			// last one: the flood has reached every agent it can.
			quiet := ss.answers() == answers && ss.pending.Load() == 0 && time.Since(lastAnswer) >= quietAfter
			answers = ss.answers()
			if Hopeless(quiet, feasible, ss.declined.counts()) {
				return Plan{}, ss.notEnough("the flood reached every agent it could")
			}
			// Some agents are busy: keep what is held and wait. A busy
			// agent queues the advert and offers the moment its slots
			// free (worker/waitq.go); a contested host asks the later of
			// two jobs to give it back (DeclineYield).
			check.Reset(radii.next(time.Now()))
		case dc := <-ss.declines:
			if dc.msg.Code == DeclineYield {
				ss.yield(dc.from)
				continue
			}
			ss.declined.add(dc.from, dc.msg)
			heard(dc.from)
		case o := <-ss.offers:
			heard(o.from)
			ss.takeOffer(o)
			ss.sample(rs.radius)
			if !rs.enough && Enough(d.Strategy, ss.rlist, d.Nodes, d.Replicas) {
				// The loop floods nothing more; the extra radius, if worth
				// it, is flooded once this one is answered.
				rs.enough = true
				enough <- 0
				grace = time.After(ss.s.cfg.OfferGrace)
			}
		case err := <-flooded:
			if err != nil && !errors.Is(err, flood.ErrMaxRadius) && ctx.Err() == nil {
				log.Infow("advertising failed", "job", ss.id, "err", err)
			}
			if !rs.enough && ss.feasible() && grace == nil {
				grace = time.After(ss.s.cfg.OfferGrace) // the reachable network has offered all it will
			}
		case <-grace:
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
func (ss *session) answeredStep(rs *reservation) step {
	d := ss.sub.Desc
	if k, ok := ss.s.ping.(Knower); ok {
		rs.known = k.Known() // now: a young overlay is still learning its peers
	}
	a := answered{
		enough:   rs.enough,
		extra:    rs.enough && rs.extra > 0 && (ss.s.cfg.Schedule.MaxRadius == 0 || rs.radius < ss.s.cfg.Schedule.MaxRadius),
		feasible: ss.feasible(),
		allKnown: AllKnownHeard(rs.known, func(p peer.ID) bool { return rs.heard[p] }),
		stable:   len(rs.known) <= rs.first && rs.first >= 0,
		fresh:    len(rs.heard) - rs.before,
		quiet:    rs.radius - rs.lastFresh,
		since:    time.Since(rs.floodedAt),
		empty:    max(rs.wait(), rs.grace),
	}
	if a.fresh > 0 {
		rs.lastFresh, a.quiet = rs.radius, 0
	}
	if a.enough {
		plan, err := Place(d.Strategy, ss.rlist, d.Nodes, d.Replicas)
		a.worth = err == nil && ExtraWorthFor(d.Prefer, farthest(plan), rs.known, func(p peer.ID) bool { return rs.heard[p] })
	}
	s := nextStep(a)
	log.Debugw("radius answered", "job", ss.id, "radius", rs.radius, "answers", len(rs.heard), "fresh", a.fresh,
		"offers", len(ss.rlist), "enough", a.enough, "worth", a.worth, "all known", a.allKnown, "stable", a.stable, "quiet", a.quiet, "step", s)
	return s
}

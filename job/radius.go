package job

import (
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/flood"
)

// What a growing-radius flood does once the answers to the radius it
// flooded last have stopped coming in: the pure rules of the reservation
// loop. A radius is answered when no offer or decline has come for the
// answer gap and no offer is still being measured; the loop then moves on
// at once instead of sleeping out the schedule's wait, and floods the
// extra radius only where it may hold closer hosts than those found.

// PeerRTT is a peer the agent's overlay knows, with its smoothed RTT (0
// until measured).
type PeerRTT struct {
	ID  peer.ID
	RTT time.Duration
	// Dead is a peer the overlay knows but has stopped counting on for a
	// while (a probe or a flood went unanswered): it is not waited for,
	// and its coming back is not the overlay learning a new peer.
	Dead bool
}

// Knower is a Pinger that also lists the live peers its agent knows (not
// itself). With it the submitter knows when its flood has been answered
// by every peer it knows of, and whether an extra radius can bring a host
// closer than those it holds; without it, the extra radius is always
// flooded and the reachable network is known to be in only once a radius
// brings no answer.
type Knower interface {
	Known() []PeerRTT
}

// step is what the reservation loop does once a radius is answered.
type step int

const (
	stepLater    step = iota // the radius may still be answered: look again at the empty-radius bound
	stepNext                 // flood the next radius now
	stepPlace                // the offers are in: place the job
	stepSchedule             // nothing to gain by hurrying: leave it to the schedule's waits
	stepExtra                // enough: flood the extra radius, then place
	stepDirect               // send the advert to the few known peers that have not answered, instead of a wider radius
)

// answered is what the loop knows when a radius's answers have stopped.
type answered struct {
	enough    bool // Enough holds: the offers can be placed as the strategy wants
	extra     bool // an extra radius beyond this one is allowed and not flooded yet
	worth     bool // a known host closer than the plan's farthest has not answered (ExtraWorth)
	feasible  bool // the offers in hand can hold the job
	measuring bool // an offer has come and its sender is still being measured
	trickling bool // an answer came within the answer gap: the radius is answered by the bound, not by silence
	more      bool // the flood has a radius left beyond this one
	allKnown  bool // every peer the agent knows has answered this flood
	stable    bool // the agent knows the same peers as when the flood began
	direct    bool // the known peers that have not answered (that matter, once enough) can have the advert directly (canDirect)
	fresh     int  // answers the radius brought
	quiet     int  // radii flooded since the last one that brought answers
	since     time.Duration
	empty     time.Duration // how long after its flood a radius without any answer counts as empty
	took      time.Duration // how long after its flood the last answer of the last radius that brought answers came
}

// nextStep decides what an answered radius leads to. Enough offers are
// placed, after the extra radius when it is worth flooding; while a known
// host closer than the plan's farthest has not answered even that, the
// offer grace is waited out for it. A feasible job whose flood has
// reached every agent it can is placed with what it has, as spread does
// when the network holds fewer hosts than processes: at once when every
// live peer the overlay knows has answered and either the overlay knew
// them all when the flood began (an agent it does not know is farther
// than all of them: a wider radius cannot bring a closer host) or the
// radius brought nobody new (the flood has stopped growing). A feasible
// job whose radius is answered only by the bound, its answers still
// coming, waits for them: they are the answers of the agents it has
// reached, and a wider radius flooded meanwhile reaches the same agents
// again and slows their answers (traced at full size: radii 5 and 6
// flooded to a network that radius 4 had covered, each a full flood).
// Otherwise a radius that brought answers calls for the next one at once
// (its hosts may be the ones missing). A feasible job whose radius
// brought nobody floods its next radius at once, once it has had as long
// as the last radius that brought answers took to bring its last (traced
// at full size: the far agents of radius 4 answered 0.2-0.7 s after its
// flood, and a look after the 150 ms answer gap sent radius 5, a full
// flood, for nothing): a known peer that has
// not answered (the overlay still learning) gets the advert again with a
// wider radius, and the job is placed once two radii in a row brought
// nobody, or once its last radius brought nobody within the empty bound,
// instead of sleeping out the schedule's backoff (3 and 6 s at radii 5
// and 6 of the simulation) for nothing. A job that cannot be placed yet
// waits on the schedule's backoff: its flood is for discovery, and
// hurrying it would only send adverts sooner.
//
// An offer still being measured has come: the job is not placed without
// it (looked at again after the answer gap), whatever else holds.
//
// Where it would flood a wider radius to reach the known peers that have
// not answered (the next radius, the extra one, or the offer grace for a
// closer host still silent), it sends them the advert directly when it
// can (direct), unless the radius's answers are still coming: they are
// its own agents, and one of them may be the silent peer.
func nextStep(a answered) step {
	s := decide(a)
	switch {
	case s == stepPlace && a.measuring:
		return stepLater
	case a.direct && !a.trickling && (s == stepNext || s == stepExtra || (s == stepSchedule && a.enough && a.worth)):
		return stepDirect
	}
	return s
}

func decide(a answered) step {
	switch {
	case a.enough && a.extra && a.worth:
		return stepExtra
	case a.enough && a.worth:
		return stepSchedule // a closer host may still answer: the offer grace ends the wait
	case a.enough:
		return stepPlace
	case a.feasible && a.allKnown && (a.stable || a.fresh == 0):
		return stepPlace
	case a.feasible && a.trickling && !a.allKnown:
		return stepLater
	case a.fresh > 0:
		return stepNext
	case a.feasible && a.quiet >= 2:
		return stepPlace
	case a.feasible && a.quiet == 1 && a.since < a.took:
		return stepLater // a wider radius takes as long as a narrower one to answer at least
	case a.feasible && a.more:
		return stepNext
	case a.since < a.empty:
		return stepLater
	case a.feasible && !a.more:
		return stepPlace
	}
	return stepSchedule
}

// ExtraWorth reports whether flooding one more radius may change the
// placement: some peer the agent knows, measured and not yet heard from
// in this flood, is closer than the farthest host the plan uses (by more
// than closeMargin, so that two hosts of one site measured a little apart
// do not count). Knowing no peer at all, it cannot tell, and the extra
// radius is flooded as the schedule says.
func ExtraWorth(farthest time.Duration, known []PeerRTT, heard func(peer.ID) bool) bool {
	if len(known) == 0 {
		return true
	}
	for _, p := range known {
		if !p.Dead && closerThan(p, farthest) && !heard(p.ID) {
			return true
		}
	}
	return false
}

// ExtraWorthFor is ExtraWorth for a job's rank preference: the RTT is
// what orders hosts only under PreferRTT. Under another preference
// (cores, memory) any peer not yet heard from may outrank the plan's
// hosts, so the extra radius is worth it while some known peer has not
// answered (or when no peer is known).
func ExtraWorthFor(p Preference, farthest time.Duration, known []PeerRTT, heard func(peer.ID) bool) bool {
	if p == "" || p == PreferRTT {
		return ExtraWorth(farthest, known, heard)
	}
	return !AllKnownHeard(known, heard)
}

// closerThan reports whether a known peer was measured closer than the
// plan's farthest host: one that may change a placement by RTT.
func closerThan(k PeerRTT, farthest time.Duration) bool {
	return k.RTT > 0 && closer(k.RTT, farthest)
}

// closer reports whether a is closer than b beyond the noise of a
// measurement: by 5% of b and 200 µs more (10.5 ms is closer than 11.6 ms,
// 1.1 ms is not closer than 1.3 ms).
func closer(a, b time.Duration) bool {
	return a < b-b/20-200*time.Microsecond
}

// AllKnownHeard reports whether every live peer of known has answered
// (and there is one at least).
func AllKnownHeard(known []PeerRTT, heard func(peer.ID) bool) bool {
	live := 0
	for _, p := range known {
		if p.Dead {
			continue
		}
		live++
		if !heard(p.ID) {
			return false
		}
	}
	return live > 0
}

// Learnt reports whether known holds a live peer that was not in before
// at all, alive or dead: the overlay is still learning peers, and some
// agent it does not know yet may not have had the advert. A peer that
// was dead and answers again is not new.
func Learnt(before map[peer.ID]bool, known []PeerRTT) bool {
	for _, p := range known {
		if !p.Dead && !before[p.ID] {
			return true
		}
	}
	return false
}

// farthest is the largest RTT of the plan's hosts.
func farthest(p Plan) time.Duration {
	var d time.Duration
	for _, h := range p.Hosts {
		d = max(d, h.Offer.RTT)
	}
	return d
}

// radiusClock tells when the offers of each radius of a growing-radius
// flood are in: radius k is flooded once the waits of radii 1..k-1 have
// passed, and its offers arrive within the grace after that. The loop
// looks then whether a job that cannot be placed is hopeless.
type radiusClock struct {
	sched flood.Schedule
	grace time.Duration
	start time.Time
}

func newRadiusClock(s flood.Schedule, grace time.Duration, start time.Time) radiusClock {
	return radiusClock{sched: s, grace: grace, start: start}
}

// next returns how long from now until the offers of the next radius to be
// flooded after now are in. The waits grow by the schedule's factor, so the
// loop ends after a few dozen radii at most.
func (c radiusClock) next(now time.Time) time.Duration {
	at, wait := c.start, c.sched.First
	for i := 0; i < 64; i++ {
		if d := at.Add(c.grace).Sub(now); d > 0 {
			return d
		}
		at = at.Add(wait)
		wait = time.Duration(float64(wait) * max(c.sched.Factor, 1))
	}
	return time.Hour
}

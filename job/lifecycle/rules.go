package lifecycle

import (
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// What a growing-radius flood does once the answers to the radius it
// flooded last have stopped coming in: the pure rules of the reservation.
// A radius is answered when no offer or decline has come for the answer
// gap and no offer is still being measured; the machine then moves on at
// once instead of sleeping out the schedule's wait, and floods the extra
// radius only where it may hold closer hosts than those found.

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
func ExtraWorth(farthest time.Duration, known []job.PeerRTT, heard func(peer.ID) bool) bool {
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
func ExtraWorthFor(p job.Preference, farthest time.Duration, known []job.PeerRTT, heard func(peer.ID) bool) bool {
	if p == "" || p == job.PreferRTT {
		return ExtraWorth(farthest, known, heard)
	}
	return !AllKnownHeard(known, heard)
}

// closerThan reports whether a known peer was measured closer than the
// plan's farthest host: one that may change a placement by RTT.
func closerThan(k job.PeerRTT, farthest time.Duration) bool {
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
func AllKnownHeard(known []job.PeerRTT, heard func(peer.ID) bool) bool {
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
func Learnt(before map[peer.ID]bool, known []job.PeerRTT) bool {
	for _, p := range known {
		if !p.Dead && !before[p.ID] {
			return true
		}
	}
	return false
}

// directTargets is whom the advert may go to directly once a radius is
// answered: the live peers the overlay knows that have not answered and,
// once the offers are enough, only those that can change the placement
// (ExtraWorthFor's: closer than the plan's farthest host under PreferRTT,
// any under another preference).
func directTargets(p job.Preference, enough bool, farthest time.Duration, known []job.PeerRTT, heard func(peer.ID) bool) []peer.ID {
	byRTT := p == "" || p == job.PreferRTT
	var out []peer.ID
	for _, k := range known {
		switch {
		case k.Dead || heard(k.ID):
		case enough && byRTT && !closerThan(k, farthest):
		default:
			out = append(out, k.ID)
		}
	}
	return out
}

// canDirect reports whether the targets may have the advert directly
// instead of a wider flood: there are some, at most limit, none has had
// it directly before (a target that did not answer that is left to the
// flood), and the overlay knew every peer it knows when the flood began
// (stable): a peer it does not know is then farther than all it knows,
// and a wider radius can bring no closer host than the targets.
func canDirect(targets []peer.ID, sent map[peer.ID]bool, limit int, stable bool) bool {
	if !stable || len(targets) == 0 || len(targets) > limit {
		return false
	}
	for _, p := range targets {
		if sent[p] {
			return false
		}
	}
	return true
}

// MaxHeld bounds the offers a job holds while it collects them: P2P-MPI's
// overbooking of n x r hosts (a placement never uses more), plus the
// spares kept for a host that fails its commit. A closer offer that comes
// later replaces the farthest one held.
func MaxHeld(n, r, spares int) int { return n*r + spares }

// transient reports whether a decline may go away if the job waits: the
// agent is busy, has no free slot or memory now, or is stopping, or the
// job gave its offer there back to an earlier job (DeclineYield: the agent
// offers again when it can). A policy refusal or a requirement the agent
// does not have never does.
func transient(c proto.DeclineCode) bool {
	switch c {
	case proto.DeclineBusy, proto.DeclineSlots, proto.DeclineMemory, proto.DeclineDraining, proto.DeclineYield:
		return true
	}
	return false
}

// Hopeless reports whether waiting cannot make a job placeable: a whole
// radius brought no new answer (the flood reached every agent it can),
// the offers in hand cannot hold the job, and no agent declined for a
// reason that passes. Such a job fails at once instead of holding its
// offers until its deadline.
func Hopeless(quiet, feasible bool, declined []job.DeclineCount) bool {
	if !quiet || feasible {
		return false
	}
	for _, c := range declined {
		if transient(c.Code) {
			return false
		}
	}
	return true
}

// ShouldYield is a reserving job's answer to a worker saying that an
// earlier job wants the slots this job holds there: give them back, unless
// the job can already be placed (it is about to commit or cancel, which
// frees them as soon). It is the whole of the rule a submitter applies;
// the worker orders the jobs before asking.
func ShouldYield(feasible bool) bool { return !feasible }

package lifecycle

import (
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/flood"
	"github.com/zorilla-p2p/zorilla/job"
)

// maxHeard bounds the peers a reservation remembers having answered.
const maxHeard = 1 << 16

// reservation is the state of one match: the flood's growth, what each
// radius brought, and the timers that end the waits.
type reservation struct {
	key    string // the flood's key (job.FloodKey of this match)
	body   []byte // the advert's body
	growth flood.Growth

	radius    int       // flooded last (extra radii too), or the one the flood was moved on to
	floodedAt time.Time // when
	before    int       // answers before it
	heard     map[peer.ID]bool
	known     []job.PeerRTT    // the agent's peers when the radius was answered
	start     map[peer.ID]bool // the peers the agent knew, alive or dead, when the flood began (nil: no overlay view)
	live      int              // live peers known at the last look
	allIn     bool             // every live known peer has answered and the overlay learnt none since the start
	lastFresh int              // the last radius that brought answers
	took      time.Duration    // how long after its flood that radius's last answer came
	lag       time.Duration    // the longest a radius took to bring its first answer
	last      time.Time        // when the last answer came (a repeated one too)
	burst     time.Time        // when the answers coming now began (after a gap without any)
	held      bool             // the radius was looked at and is waited for (stepLater)
	extra     int              // extra radii still allowed once enough
	enough    bool             // the offers are enough: the schedule floods nothing more
	steering  bool             // the job is feasible: radii move on only when answered
	dueHeld   bool             // the schedule's wait ended while steering: the next radius goes when it stops
	ended     bool             // the schedule has no radius left
	flooding  int              // the radius being flooded (0: none)
	extraOut  bool             // the radius being flooded is the extra one
	targets   []peer.ID        // known peers that have not answered, as of the last look
	sent      map[peer.ID]bool // peers sent the advert directly
	lapsed    map[peer.ID]bool // hosts whose offers expired while the job held them
	directBy  time.Time        // until when the answers to the direct advert are waited for
	answers   int              // answers at the last hopeless check

	gap, grace time.Duration

	// Timers; the zero time is unarmed.
	deadlineAt time.Time // the scheduling deadline
	graceAt    time.Time // the offer grace once enough (or once the flood ended feasible)
	settleAt   time.Time // when the radius flooded last counts as answered
	checkAt    time.Time // the next look whether waiting can help
}

func (rs *reservation) timers() []time.Time {
	return []time.Time{rs.deadlineAt, rs.graceAt, rs.settleAt, rs.checkAt, rs.scheduleAt()}
}

// scheduleAt is when the schedule wants the next radius, while it runs
// on its own.
func (rs *reservation) scheduleAt() time.Time {
	if rs.ended || rs.enough || rs.flooding != 0 || rs.steering || rs.growth.Radius() == 0 {
		return time.Time{}
	}
	return rs.growth.Due()
}

// wait is how long without an answer counts as the radius answered: the
// answer gap, or longer when answers are slow to start (a loaded network
// spaces them out as much as it delays the first). The offer grace bounds
// it. Once every peer the agent knows has answered, only the answer gap
// is waited: no answer is late any more.
func (rs *reservation) wait() time.Duration {
	if rs.allIn {
		return rs.gap
	}
	return max(rs.gap, min(rs.lag, rs.grace))
}

// decideBy is when the radius flooded last is answered at the latest,
// however its answers trickle in: on a loaded network they came a few a
// second for 5-9 s, each one putting the decision off again. Answers
// still coming count for the next radius.
func (rs *reservation) decideBy() time.Time {
	return rs.floodedAt.Add(max(rs.wait(), rs.grace))
}

// settleIn is how long from now until the radius flooded last counts as
// answered if no answer comes meanwhile: the answer wait, but not past
// decideBy while the offers are not enough. Once they are, every answer
// may still tell that no closer host is silent (no extra radius to
// flood), and the offer grace bounds the wait. Answers also come in
// bursts that no radius brought (the slots of several busy hosts free at
// once, and each offers): a burst is waited out for the answer gap after
// its last answer, but not past the offer grace from its first.
func (rs *reservation) settleIn(now time.Time) time.Duration {
	if rs.enough {
		return rs.wait()
	}
	d := max(0, min(rs.wait(), rs.decideBy().Sub(now)))
	burst := min(rs.last.Add(rs.gap).Sub(now), rs.burst.Add(rs.grace).Sub(now))
	return max(d, burst)
}

// laterIn is how long from now until a radius looked at too early
// (stepLater) is looked at again: once its answers have stopped for the
// answer wait when they are still coming; once it is as old as the last
// radius that brought answers took, when it brought nobody yet; else at
// the empty bound after its flood.
func (rs *reservation) laterIn(now time.Time) time.Duration {
	if now.Sub(rs.last) < rs.gap {
		return rs.wait()
	}
	since := now.Sub(rs.floodedAt)
	if rs.lastFresh < rs.radius && since < rs.took {
		return rs.took - since
	}
	return max(rs.gap, max(rs.wait(), rs.grace)-since)
}

// heardAll reports whether every live peer of known has answered.
func (rs *reservation) heardAll(known []job.PeerRTT) bool {
	return AllKnownHeard(known, func(p peer.ID) bool { return rs.heard[p] })
}

// look takes the agent's known peers again and says whether all of them
// have answered.
func (rs *reservation) look(known []job.PeerRTT) {
	rs.known = known
	rs.live = 0
	for _, p := range known {
		if !p.Dead {
			rs.live++
		}
	}
	rs.allIn = rs.heardAll(known) && !Learnt(rs.start, known)
}

// directWait is how long from now the answers to the direct advert are
// still waited for: until directBy, unless every target has answered.
func (rs *reservation) directWait(now time.Time) (time.Duration, bool) {
	if !now.Before(rs.directBy) {
		return 0, false
	}
	for _, p := range rs.targets {
		if !rs.heard[p] {
			return rs.directBy.Sub(now), true
		}
	}
	return 0, false
}

// flooded notes that radius r went out now.
func (rs *reservation) flooded(r int, now time.Time) {
	rs.radius, rs.floodedAt, rs.before, rs.held = r, now, len(rs.heard), false
}

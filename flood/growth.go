package flood

import "time"

// Growth is where a growing-radius flood stands: the radius flooded last,
// when, and the schedule's wait before the next. It is a pure value that
// Advertise's loop and a job's submitter both step, so the schedule
// (First, then each wait Factor times the one before, up to the largest
// radius) is computed in one place and read the same way by both.
type Growth struct {
	s      Schedule
	limit  int           // the largest radius (Schedule.Limit)
	radius int           // flooded last; 0 before the first
	at     time.Time     // when
	wait   time.Duration // the schedule's wait after radius
}

// NewGrowth starts a flood on schedule s whose largest radius is limit
// (Schedule.Limit).
func NewGrowth(s Schedule, limit int) Growth { return Growth{s: s, limit: max(limit, 0)} }

// Limit is the largest radius schedule s floods on a Flooder whose MaxTTL
// is maxTTL: its MaxRadius, unless that is unset or larger.
func (s Schedule) Limit(maxTTL int) int {
	if s.MaxRadius > 0 && s.MaxRadius < maxTTL {
		return s.MaxRadius
	}
	return maxTTL
}

// Radius is the radius flooded last (0: none yet).
func (g Growth) Radius() int { return g.radius }

// Next is the radius to flood next; false once the largest was flooded.
func (g Growth) Next() (int, bool) {
	if g.radius >= g.limit {
		return 0, false
	}
	return g.radius + 1, true
}

// Wait is the schedule's wait after the radius flooded last.
func (g Growth) Wait() time.Duration { return g.wait }

// Due is when the schedule floods the next radius, or, after the largest,
// when the flood has waited its last wait and is over: the last flood
// plus its wait. Before the first flood it is the zero time: radius 1
// goes at once.
func (g Growth) Due() time.Time {
	if g.radius == 0 {
		return time.Time{}
	}
	return g.at.Add(g.wait)
}

// Over reports whether the largest radius has been flooded and its wait
// has passed at now: the flood has nothing more to do.
func (g Growth) Over(now time.Time) bool {
	_, more := g.Next()
	return !more && g.radius > 0 && !now.Before(g.Due())
}

// Flooded is the growth once radius r went out at now: the wait after it
// is First after the first radius and Factor times the last wait after
// each further one, whether it came on the schedule or earlier.
func (g Growth) Flooded(r int, now time.Time) Growth {
	if g.radius == 0 {
		g.wait = g.s.First
	} else {
		g.wait = g.s.next(g.wait)
	}
	g.radius, g.at = r, now
	return g
}

package job

import (
	"time"

	"github.com/zorilla-p2p/zorilla/flood"
)

// radiusClock tells when the offers of each radius of a growing-radius
// flood are in: radius k is flooded once the waits of radii 1..k-1 have
// passed, and its offers arrive within the grace after that.
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

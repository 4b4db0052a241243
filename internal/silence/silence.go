// Package silence counts how long a peer has not been heard from, check by
// check, for the liveness rules of the MPI routers' links, the submitter's
// report streams and the workers' report sinks.
//
// None of them lets a timer decide: a read deadline is a timer, and when
// this process or the whole machine did not run for seconds (a VM stalled
// 9-24 s under swap here: BENCHMARKS.md, "Links silent while their agents
// live"), every deadline fires at once on resumption, before the readers
// have taken what the peer sent meanwhile, and live peers were counted
// lost. Instead the readers stamp the peer at every arrival and a checker
// counts its silence at regular checks, where a check that comes late
// adds at most one step: a stall of this process is not blamed on the
// peer, while a peer that really fell silent reaches its limit within the
// limit and one check.
package silence

import "time"

// Count is one peer's silence as its checker sees it; it belongs to the
// checker. Since starts one at a known stamp; a zero Count, met at a
// check, counts from the peer's stamp then, a step at most.
type Count struct {
	heard   time.Time     // the peer's stamp at the previous check
	checked time.Time     // when the previous check ran
	counted time.Duration // silence counted so far
}

// Since starts a count at t, the peer counting as heard then.
func Since(t time.Time) *Count { return &Count{heard: t, checked: t} }

// Check returns the silence counted at now, the peer last heard at heard.
// Time since the previous check counts at most maxStep: a check that comes
// late because this process stalled does not blame the peer for the stall.
// A stamp newer than the previous check's starts the count again from it.
func (c *Count) Check(now, heard time.Time, maxStep time.Duration) time.Duration {
	step := min(max(now.Sub(c.checked), 0), maxStep)
	if heard.After(c.heard) {
		c.heard = heard
		c.counted = min(max(now.Sub(heard), 0), step)
	} else {
		c.counted += step
	}
	c.checked = now
	return c.counted
}

package overlay

import (
	"math/rand/v2"
	"strings"
	"time"
)

// rdvLoop is the state of the rendezvous loop, owned by its goroutine.
type rdvLoop struct {
	look LookupState // Last, Attempts and Failures; the rest is observed
	u    float64     // spreads the wait before the next lookup

	looked           bool // a lookup has ended
	found, foundBase int  // what the last one found (ProvideState)

	providing    bool
	provided     time.Time // last announcement
	provideAt    time.Time // no announcement before (after a failed one)
	provideFails int
	err          error // the last failure, until a try succeeds
}

// run looks up when NextLookup says, announces when ShouldProvide says,
// and otherwise looks at the overlay every Check, until Close.
func (r *Rendezvous) run() {
	defer close(r.done)
	var l rdvLoop
	for r.ctx.Err() == nil {
		now := r.clock.Now()
		l.look.Providing = l.providing
		s, settled := r.observe(l.look)
		l.look = s
		due := r.cfg.NextLookup(s, l.u)
		if !now.Before(due) {
			r.lookupRound(&l, s)
			continue
		}
		r.maybeProvide(&l, s, settled, now)
		r.publish(&l, s, due)
		select {
		case <-r.clock.After(min(due.Sub(now), r.cfg.Check)):
		case <-r.ctx.Done():
		}
	}
}

// observe completes the loop's LookupState with what the overlay knows
// now (LookupState.Observe), and says whether its size estimate has
// settled.
func (r *Rendezvous) observe(s LookupState) (LookupState, bool) {
	peers := r.ov.Peers()
	live := 0
	for _, p := range peers {
		if !p.Dead {
			live++
		}
	}
	estimate, settled := r.ov.Estimate()
	return s.Observe(len(peers), live, r.ov.cfg.K+r.ov.cfg.Random, estimate), settled
}

// lookupRound looks the key up and keeps what the next decisions need: a
// try that failed counts towards the failure backoff, a lookup that found
// a new agent ends the hungry backoff, one that did not while the agent
// was hungry lengthens it.
func (r *Rendezvous) lookupRound(l *rdvLoop, s LookupState) {
	res, err := r.round(s.Estimate)
	l.look.Last, l.u = r.clock.Now(), rand.Float64()
	if err != nil {
		l.look.Failures++
		l.err = err
		log.Infow("public rendezvous failed; trying again", "err", err)
		return
	}
	l.look.Failures, l.err = 0, nil
	l.looked, l.found, l.foundBase = true, res.found, res.foundBase
	switch {
	case res.fresh > 0:
		l.look.Attempts = 0
	case s.Hungry():
		l.look.Attempts++
	default:
		l.look.Attempts = 0
	}
}

// maybeProvide announces the agent when ShouldProvide says so and its
// record is due (never made, or Provide old); a failed announcement is
// tried again after a doubling backoff.
func (r *Rendezvous) maybeProvide(l *rdvLoop, s LookupState, settled bool, now time.Time) {
	l.providing = r.cfg.ShouldProvide(ProvideState{
		Dialable: r.cfg.Dialable == nil || r.cfg.Dialable(), Draw: r.draw,
		Estimate: s.Estimate, Settled: settled,
		Looked: l.looked, Found: l.found, FoundBase: l.foundBase,
	})
	if !l.providing || now.Before(l.provideAt) || (!l.provided.IsZero() && now.Sub(l.provided) < r.cfg.Provide) {
		return
	}
	if err := r.provide(); err != nil {
		l.provideFails++
		l.provideAt = now.Add(doubled(r.cfg.Backoff, l.provideFails-1, r.cfg.MaxBackoff))
		l.err = err
		log.Infow("public rendezvous: announcing failed; trying again", "at", l.provideAt, "err", err)
		return
	}
	l.provideFails, l.provideAt, l.provided = 0, time.Time{}, r.clock.Now()
	if l.look.Failures == 0 {
		l.err = nil
	}
}

// publish makes the loop's state what Status reports.
func (r *Rendezvous) publish(l *rdvLoop, s LookupState, due time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := &r.status
	st.Providing, st.Provided, st.Estimate = l.providing, l.provided, s.Estimate
	st.NextLookup, st.Hungry = due, s.Hungry()
	st.Error, st.Retry = "", time.Time{}
	if l.err != nil {
		st.Error = strings.Join(strings.Fields(l.err.Error()), " ") // one line, for zorilla id
		st.Retry = due
		if l.provideFails > 0 && (l.look.Failures == 0 || l.provideAt.Before(due)) {
			st.Retry = l.provideAt
		}
	}
}

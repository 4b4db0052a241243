package worker

import (
	"context"
	"math"
	"time"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

// The waiting line's I/O side: its one goroutine, which offers free slots
// to the jobs listed (waitq.go holds the table and its rules).

// serveWaiting is the line's one goroutine: each time slots free (or a
// lease or an advert expires), it offers the free slots to the waiting
// jobs, earliest first.
func (s *Service) serveWaiting() {
	defer s.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.leases.Freed():
		case <-timer.C:
			s.leases.Expire() // a lazy expiry signals Freed
		}
		s.thawFrozen()
		s.offerWaiting()
		timer.Reset(s.nextWake(time.Now()))
	}
}

// yields says whether job j, swapped out here for another job, still
// leaves its place to it: until that job runs here (waitLine.yielding).
func (s *Service) yields(j proto.JobID) bool { return s.waiting.yielding(j, s.leases.Runs) }

// holds says whether job j holds a lease here.
func (s *Service) holds(j proto.JobID) bool {
	_, ok := s.leases.ByJob(j)
	return ok
}

// nextWake is how long until a lease or a listed advert expires.
func (s *Service) nextWake(now time.Time) time.Duration {
	wake := now.Add(time.Hour)
	if t, ok := s.leases.NextExpiry(); ok && t.Before(wake) {
		wake = t
	}
	if t, ok := s.waiting.nextExpiry(); ok && t.Before(wake) {
		wake = t
	}
	return max(wake.Sub(now), time.Millisecond)
}

// offerWaiting offers free slots to the listed jobs in order, skipping
// those that hold a lease here or do not fit now. A job whose submitter
// does not keep the offer needs nothing more here: it leaves the line.
func (s *Service) offerWaiting() {
	if s.draining.Load() {
		return
	}
	blocked := math.MinInt // no job of lower priority than a waiting one goes ahead of it
	for _, e := range s.waiting.ordered(time.Now()) {
		if s.ctx.Err() != nil {
			return
		}
		if _, held := s.leases.ByJob(e.need.Job); held || e.honoured < blocked || s.yields(e.need.Job) {
			continue
		}
		d, l, err := s.leases.Admit(e.advert.Submitter, e.need, leaseTTL(e.need))
		if err != nil || !d.Accept {
			// Listed, and not yielding (skipped above); told already when
			// its advert came.
			step := afterRefusal(d, err, true, false)
			if step.Drop {
				s.waiting.drop(e.need.Job) // the policy changed: it never will
			}
			if step.Contend {
				blocked = max(blocked, e.honoured)
				// A later job may have taken the room meanwhile (its advert
				// came as it freed): it gives it back if it cannot start.
				s.askYield(Contender{Submitter: e.advert.Submitter, Need: e.need, Since: e.prio, Honoured: e.honoured})
			}
			continue
		}
		if !s.abuse.allowOffer(e.advert.Submitter, time.Now()) {
			s.endLease(l.Key)
			continue
		}
		ctx, cancel := context.WithTimeout(s.ctx, s.cfg.Wait.OfferTimeout)
		kept := s.sendOffer(ctx, e.advert, e.need, l)
		cancel()
		if !kept {
			s.waiting.drop(e.need.Job)
		}
	}
}

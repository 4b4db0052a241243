package worker

import "time"

// Expiry is lazy: every call of the table first drops what expired
// (sweep); Freed tells who waits for slots that some came back, and
// NextExpiry when to look again.

// Expire drops the leases whose time has passed and returns them. Every
// other method does the same silently; an owner that wants to log expiries
// calls Expire on a timer.
func (l *Leases) Expire() []Lease {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sweep()
}

func (l *Leases) sweep() []Lease {
	now := l.now()
	var gone []Lease
	for _, ls := range l.byKey {
		if !ls.Committed && !now.Before(ls.Expires) {
			l.remove(ls)
			gone = append(gone, *ls)
			log.Debugf("lease for job %s expired, %d slots back", ls.Job, ls.Slots)
		}
	}
	return gone
}

func (l *Leases) remove(ls *Lease) {
	delete(l.used, ls.Job)
	delete(l.byKey, ls.Key)
	delete(l.byJob, ls.Job)
	l.signalFreed()
}

func (l *Leases) signalFreed() {
	select {
	case l.freed <- struct{}{}:
	default: // one pending signal says it all
	}
}

// Freed receives a value after slots came back (a lease released,
// expired or shrunk) since the last receive. Expiry is lazy: call Expire
// at NextExpiry to have it noticed.
func (l *Leases) Freed() <-chan struct{} { return l.freed }

// NextExpiry is when the first uncommitted lease expires; false when none
// will.
func (l *Leases) NextExpiry() (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var first time.Time
	for _, ls := range l.byKey {
		if !ls.Committed && (first.IsZero() || ls.Expires.Before(first)) {
			first = ls.Expires
		}
	}
	return first, !first.IsZero()
}

package npb

import "time"

// Timer is NPB's wall-clock timer (timer_clear/start/stop/read): it adds up
// the time between each Start and the following Stop. The zero value is a
// cleared timer reading the system's monotonic clock.
type Timer struct {
	// Now is the clock; nil means time.Now. Tests inject their own.
	Now func() time.Time

	started time.Time
	total   time.Duration
	running bool
}

// Start starts a lap. Starting a running timer restarts its lap.
func (t *Timer) Start() {
	t.started = t.now()
	t.running = true
}

// Stop ends the lap and adds it to the total. Stopping a stopped timer
// does nothing.
func (t *Timer) Stop() {
	if !t.running {
		return
	}
	t.total += t.now().Sub(t.started)
	t.running = false
}

// Clear stops the timer and sets its total to zero.
func (t *Timer) Clear() {
	t.total = 0
	t.running = false
}

// Seconds returns the total of the finished laps, plus the running one.
func (t *Timer) Seconds() float64 {
	d := t.total
	if t.running {
		d += t.now().Sub(t.started)
	}
	return d.Seconds()
}

func (t *Timer) now() time.Time {
	if t.Now == nil {
		return time.Now()
	}
	return t.Now()
}

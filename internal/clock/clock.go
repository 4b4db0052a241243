// Package clock provides time sources for components whose schedules tests
// control: the system clock, and Jump, the system clock plus an offset a
// test moves forward, so that a schedule of hours runs in a test of
// seconds while the rest of the program keeps real time.
package clock

import (
	"sync"
	"time"
)

// System is the system clock: Now and After are time's.
type System struct{}

func (System) Now() time.Time                         { return time.Now() }
func (System) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Jump is real time plus an offset that only grows. A wait started with
// After ends when real time reaches it or when Advance jumps past it,
// whichever comes first. The zero Jump is real time.
type Jump struct {
	mu      sync.Mutex
	offset  time.Duration
	waiting map[*wait]bool
}

type wait struct {
	at    time.Time // in the clock's time
	fire  chan time.Time
	timer *time.Timer
}

// Now is real time plus the offset.
func (c *Jump) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// After fires once, d from now in the clock's time.
func (c *Jump) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.waiting == nil {
		c.waiting = map[*wait]bool{}
	}
	w := &wait{at: time.Now().Add(c.offset + d), fire: make(chan time.Time, 1)}
	c.waiting[w] = true
	w.timer = time.AfterFunc(d, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.end(w)
	})
	return w.fire
}

// Advance moves the clock d forward and ends the waits it jumps past.
func (c *Jump) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
	now := time.Now().Add(c.offset)
	for w := range c.waiting {
		if !w.at.After(now) {
			w.timer.Stop()
			c.end(w)
		}
	}
}

// Waiting is how many After waits have not fired yet: a test advances once
// every loop it drives is waiting again.
func (c *Jump) Waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiting)
}

// end fires w unless it fired already; c.mu is held.
func (c *Jump) end(w *wait) {
	if !c.waiting[w] {
		return
	}
	delete(c.waiting, w)
	w.fire <- time.Now().Add(c.offset)
}

package gang

import "time"

// FrozenClock counts the time the rotation held one job frozen on this
// host, for the job's time accounting: the worker reports the total to the
// submitter at most once per report interval (Due), not once per slice, so
// short slices do not flood the report stream. The zero value is a job
// not frozen, with nothing counted. It is plain data: the worker keeps one
// per job under the lock that serialises the job's freezes and thaws.
type FrozenClock struct {
	since    time.Time     // when the rotation froze the job; zero while it runs
	total    time.Duration // the frozen intervals closed so far
	reported time.Duration // the total last reported
	sentAt   time.Time     // when it was reported
}

// Freeze records that the rotation froze the job at at; a job already
// frozen stays frozen since its first freeze.
func (c *FrozenClock) Freeze(at time.Time) {
	if c.since.IsZero() {
		c.since = at
	}
}

// Thaw records that the job runs again from at (the rotation thawed it,
// or something else took it over: preemption's freeze, its end), closing
// the frozen interval. A job not frozen is left as it is.
func (c *FrozenClock) Thaw(at time.Time) {
	if c.since.IsZero() {
		return
	}
	if d := at.Sub(c.since); d > 0 {
		c.total += d
	}
	c.since = time.Time{}
}

// Frozen says whether the clock counts the job frozen now.
func (c *FrozenClock) Frozen() bool { return !c.since.IsZero() }

// Total is the time frozen up to at, a current interval counted to at.
func (c *FrozenClock) Total(at time.Time) time.Duration {
	t := c.total
	if !c.since.IsZero() && at.After(c.since) {
		t += at.Sub(c.since)
	}
	return t
}

// Due says whether the total up to at is to be reported now, and marks it
// reported: when it grew since the last report and either every is past
// since then or final is set (the job ends here: the last total goes out
// before the job's end). Only closed intervals are reported, so a total
// never counts a freeze that a later preemption or end would cut short.
func (c *FrozenClock) Due(at time.Time, every time.Duration, final bool) (time.Duration, bool) {
	if c.total <= c.reported || (!final && at.Sub(c.sentAt) < every) {
		return 0, false
	}
	c.reported, c.sentAt = c.total, at
	return c.total, true
}

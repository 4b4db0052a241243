package job

import "time"

// Time accounting. A job's life on its hosts is split into
// phases: running (its processes run), frozen (stopped in place, memory
// kept), swapped (stopped by a checkpoint, memory freed, until it runs
// again), and the rest (waiting for hosts, starting, ended), which counts
// in none. Each switch is recorded with its time and why; the totals
// survive the list's bound.

// Phase is what a job's processes are doing, for time accounting.
type Phase string

const (
	PhaseRunning Phase = "running"
	PhaseFrozen  Phase = "frozen"
	PhaseSwapped Phase = "swapped"
	PhaseOther   Phase = "other" // waiting, starting or ended: counted in none
)

// Switch is one change of phase.
type Switch struct {
	At  time.Time `json:"at"`
	To  Phase     `json:"to"`
	Why string    `json:"why,omitempty"`
}

// TimeUse is the time a job spent in each counted phase.
type TimeUse struct {
	Running time.Duration `json:"running,omitempty"`
	Frozen  time.Duration `json:"frozen,omitempty"`
	Swapped time.Duration `json:"swapped,omitempty"`
	// Sliced is the part of Frozen that gang rotations held the job
	// frozen, outside its time slices (RepSliced). It is counted apart,
	// from the hosts' totals, not as switches: slices of 0.5 s would
	// flood the list. Record.Time keeps it apart from Running; TimeAt
	// moves it from Running to Frozen.
	Sliced time.Duration `json:"sliced,omitempty"`
}

// MaxSwitches bounds the switches a record lists (the latest are kept;
// the totals count every one).
const MaxSwitches = 64

// add counts d in phase p's bucket.
func (t TimeUse) add(p Phase, d time.Duration) TimeUse {
	if d <= 0 {
		return t
	}
	switch p {
	case PhaseRunning:
		t.Running += d
	case PhaseFrozen:
		t.Frozen += d
	case PhaseSwapped:
		t.Swapped += d
	}
	return t
}

// Phase is the job's current phase: its last switch's.
func (r Record) Phase() Phase {
	if len(r.Switches) == 0 {
		return PhaseOther
	}
	return r.Switches[len(r.Switches)-1].To
}

// TimeAt is the job's time in each phase up to now, the current phase
// counted until now; the time frozen by time slices counts as frozen, not
// running.
func (r Record) TimeAt(now time.Time) TimeUse {
	t := r.Time
	if n := len(r.Switches); n > 0 {
		last := r.Switches[n-1]
		t = t.add(last.To, now.Sub(last.At))
	}
	sliced := min(t.Sliced, t.Running)
	t.Running -= sliced
	t.Frozen += sliced
	return t
}

// AddSliced takes a host's RepSliced: total is the time its rotation held
// the job frozen in the current run. A run's sliced time is the most any
// of its hosts reports (their slices are aligned, so they are frozen at
// once; totals only grow, so reports taken twice or out of order change
// nothing), and never more than the run has lasted at now (a host's bad
// figure cannot cancel the job's running time). Pure: it returns the new
// record.
func AddSliced(r Record, total time.Duration, now time.Time) Record {
	n := len(r.Runs)
	if n == 0 || total <= 0 {
		return r
	}
	run := r.Runs[n-1]
	total = min(total, max(now.Sub(run.Started), 0))
	if total <= run.Sliced {
		return r
	}
	r.Time.Sliced += total - run.Sliced
	run.Sliced = total
	r.Runs = append(r.Runs[:n-1:n-1], run)
	return r
}

// SwitchPhase records a change to phase p at at; a switch to the current
// phase changes nothing. Pure: it returns the new record.
func SwitchPhase(r Record, p Phase, at time.Time, why string) Record {
	if p == r.Phase() {
		return r
	}
	if len(why) > MaxReasonLen {
		why = why[:MaxReasonLen]
	}
	next := r
	if n := len(r.Switches); n > 0 {
		last := r.Switches[n-1]
		next.Time = r.Time.add(last.To, at.Sub(last.At))
	}
	sw := make([]Switch, 0, min(len(r.Switches)+1, MaxSwitches))
	if len(r.Switches)+1 > MaxSwitches {
		sw = append(sw, r.Switches[len(r.Switches)+1-MaxSwitches:]...)
	} else {
		sw = append(sw, r.Switches...)
	}
	next.Switches = append(sw, Switch{At: at, To: p, Why: why})
	return next
}

// phaseOf is the phase a job enters with state to, from phase cur: a
// job that stops with a checkpoint is swapped out until it runs again; a
// job waiting or starting after it ran (a restart) counts in none, but a
// swapped job stays swapped until it runs.
func phaseOf(cur Phase, to State) (Phase, bool) {
	switch {
	case to == Running:
		return PhaseRunning, true
	case to == Stopped:
		return PhaseSwapped, true
	case to.Terminal():
		return PhaseOther, cur != PhaseOther
	case cur == PhaseRunning || cur == PhaseFrozen:
		return PhaseOther, true
	}
	return cur, false
}

// RemainingTimeout is what is left of the job's wall-clock limit at now:
// the limit less the time it ran; frozen and swapped time do not count.
// It is never below a second, so a run is never started already out of
// time by rounding.
func (r Record) RemainingTimeout(now time.Time) time.Duration {
	return max(r.Desc.Timeout-r.TimeAt(now).Running, time.Second)
}

package submitter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zorilla-p2p/zorilla/internal/clock"
	"github.com/zorilla-p2p/zorilla/internal/gang"
	"github.com/zorilla-p2p/zorilla/job"
)

// Swap is the hybrid technique for one job: whole sets of jobs
// take turns on long time slices, switched by coordinated checkpoint. The
// job belongs to set Set, a column of Rotation: in that column's slices it
// runs (co-scheduled with the rest of its set), at their end it is stopped
// with a checkpoint (Stop: its processes end, their memory is free), and at
// its next slice it is resumed from that checkpoint (Resume). Each job's
// submitter drives its own job from its clock: there is no master, only
// the shared Rotation, as in the hosts' gang scheduling (internal/gang).
type Swap struct {
	// Rotation has long slices: a switch costs a checkpoint and a
	// restart (seconds), so a slice must be many times that.
	Rotation gang.Config
	Set      int
	Policy   gang.Policy
	// Gap is, with the sequential policy, how long after its slice begins
	// the incoming set waits before it resumes: the time the outgoing set
	// has to checkpoint and end. The overlapped policy resumes at once.
	Gap time.Duration
	// StopTimeout bounds each stop's wait for the program's next
	// checkpoint (Stop's timeout).
	StopTimeout time.Duration
	// Poll is how often the driver reads the job's record while it waits
	// for the job to end within a slice.
	Poll time.Duration
}

// Validate reports a Swap no driver can follow.
func (w Swap) Validate() error {
	if err := w.Rotation.Validate(); err != nil {
		return err
	}
	if w.Set < 0 || w.Set >= w.Rotation.Columns {
		return fmt.Errorf("job: swap set %d outside the rotation's %d", w.Set, w.Rotation.Columns)
	}
	if w.Gap < 0 || w.Gap >= w.Rotation.Slice || w.StopTimeout <= 0 || w.Poll <= 0 {
		return fmt.Errorf("job: swap gap %v (want 0 <= gap < slice %v), stop timeout %v, poll %v (want > 0)",
			w.Gap, w.Rotation.Slice, w.StopTimeout, w.Poll)
	}
	return nil
}

// SwapStep is one stop or resume the swap driver made, for status and
// figures.
type SwapStep struct {
	At     time.Time
	Action string // "stop" or "resume"
	Err    string `json:",omitempty"`
}

// RunSwapped drives job id through sw's rotation until it ends (done,
// failed or cancelled) or ctx ends, and returns its last record and the
// switches made. The job must have been submitted with checkpoints (its
// program calls mpi's job.Checkpoint): a stop waits for the next one.
func (s *Submitter) RunSwapped(ctx context.Context, id job.ID, sw Swap) (job.Record, []SwapStep, error) {
	if err := sw.Validate(); err != nil {
		return job.Record{}, nil, err
	}
	var events []SwapStep
	for {
		rec, err := s.Get(id)
		if err != nil {
			return rec, events, err
		}
		if rec.State.Terminal() && rec.State != job.Stopped {
			return rec, events, nil
		}
		now := time.Now()
		own := sw.Rotation.Current(now) == sw.Set || sw.Rotation.Columns == 1
		switch {
		case own && rec.State == job.Stopped:
			if wait := swapResumeAt(sw, now).Sub(now); wait > 0 {
				if err := clock.Sleep(ctx, wait); err != nil {
					return rec, events, err
				}
				continue
			}
			err := s.Resume(id, false)
			events = append(events, swapStep("resume", err))
			// The record leaves job.Stopped once the new run's session has
			// it; a failed resume is not tried again before the next slice.
			if err := s.awaitLeave(ctx, id, job.Stopped, sw.Rotation.NextSwitch(now), sw.Poll, err != nil); err != nil {
				return rec, events, err
			}
		case own || rec.State == job.Stopped:
			next := sw.Rotation.NextSwitch(now)
			if err := s.awaitEndOr(ctx, id, next, sw.Poll); err != nil {
				return rec, events, err
			}
		case rec.State == job.Running:
			sctx, cancel := context.WithTimeout(ctx, sw.StopTimeout+time.Minute)
			err := s.Stop(sctx, id, sw.StopTimeout)
			cancel()
			if err != nil && ctx.Err() != nil {
				return rec, events, ctx.Err()
			}
			events = append(events, swapStep("stop", err))
			if errors.Is(err, job.ErrNotStoppable) {
				err = clock.Sleep(ctx, sw.Poll) // ended meanwhile, or not running yet
			}
		default: // starting after a resume that came late: stop it once it runs
			if err := clock.Sleep(ctx, sw.Poll); err != nil {
				return rec, events, err
			}
		}
	}
}

// swapResumeAt is when a job whose slice holds now resumes under sw.
func swapResumeAt(sw Swap, now time.Time) time.Time {
	start := time.Unix(0, sw.Rotation.Slot(now)*int64(sw.Rotation.Slice))
	if sw.Policy == gang.Sequential {
		return start.Add(sw.Gap)
	}
	return start
}

func swapStep(action string, err error) SwapStep {
	e := SwapStep{At: time.Now(), Action: action}
	if err != nil {
		e.Err = err.Error()
	}
	return e
}

// awaitEndOr waits until the job is over (done, failed, cancelled) or
// until, whichever comes first.
func (s *Submitter) awaitEndOr(ctx context.Context, id job.ID, until time.Time, poll time.Duration) error {
	return s.pollUntil(ctx, id, until, poll, func(rec job.Record) bool { return rec.State.Terminal() && rec.State != job.Stopped })
}

// awaitLeave waits until the job is no longer in state st, or until;
// always until with whole.
func (s *Submitter) awaitLeave(ctx context.Context, id job.ID, st job.State, until time.Time, poll time.Duration, whole bool) error {
	return s.pollUntil(ctx, id, until, poll, func(rec job.Record) bool { return !whole && rec.State != st })
}

// pollUntil looks at the job's record every poll until done says so, the
// record cannot be read (its error), or until comes (nil).
func (s *Submitter) pollUntil(ctx context.Context, id job.ID, until time.Time, poll time.Duration, done func(job.Record) bool) error {
	t := time.NewTimer(time.Until(until))
	defer t.Stop()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return nil
		case <-tick.C:
			if rec, err := s.Get(id); err != nil || done(rec) {
				return err
			}
		}
	}
}

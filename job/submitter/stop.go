package submitter

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/lifecycle"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// Stop and resume. `zorilla stop JOB --checkpoint` stops a running job at
// its next checkpoint (the machine asks rank 0's host for one and ends the
// run once it is complete), keeping that checkpoint's files; `zorilla
// resume JOB` floods again and restarts the job from that checkpoint on
// whatever hosts it finds, as a restart after a loss does.
//
// Stopped is a state of its own rather than Cancelled with a flag: it is
// over (nothing runs, nothing is held) but not final, and whoever reads a
// status or waits for a job's end must be able to tell the two apart.

// DefaultStopTimeout is how long a stop waits for the program's next
// checkpoint when the caller gives no timeout: two minutes, long enough
// for a program that checkpoints every minute.
const DefaultStopTimeout = 2 * time.Minute

// Stop stops a running job with a checkpoint: it returns once the job is
// Stopped, or with why not (the job then goes on as it was).
func (s *Submitter) Stop(ctx context.Context, id job.ID, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = DefaultStopTimeout
	}
	ss := s.session(id)
	if ss == nil {
		rec, err := s.store.Get(id)
		if err != nil {
			return fmt.Errorf("%w: %s", job.ErrUnknownJob, id)
		}
		return fmt.Errorf("%w: job %s is %s, not running", job.ErrNotStoppable, id, rec.State)
	}
	return ss.stopAt(ctx, timeout, nil)
}

// Resume starts a stopped job again from its checkpoint; elsewhere keeps
// it off the hosts of the run that was stopped.
func (s *Submitter) Resume(id job.ID, elsewhere bool) error {
	return s.resumeStopped(id, elsewhere, false, nil)
}

// resumeStopped resumes a stopped job; a job swapped out for another
// (preempted) looks for hosts at least DefaultPreemptWait, and its adverts
// ask its hosts to serve the jobs of yieldTo first (Need.YieldTo and
// YieldWith).
func (s *Submitter) resumeStopped(id job.ID, elsewhere, preempted bool, yieldTo []job.ID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss := s.sessions[id]; ss != nil {
		return fmt.Errorf("%w: job %s is %s here, not stopped", job.ErrNotResumable, id, ss.m.Record().State)
	}
	rec, err := s.store.Get(id)
	if err != nil {
		return fmt.Errorf("%w: %s", job.ErrUnknownJob, id)
	}
	if _, err := resumable(rec, s.blobs); err != nil {
		return err
	}
	st := lifecycle.Start{Record: rec, YieldTo: yieldTo}
	if elsewhere && len(rec.Runs) > 0 {
		st.Avoid = rec.Runs[len(rec.Runs)-1].Hosts
	}
	if preempted {
		st.MinDeadline = DefaultPreemptWait
	}
	ss, err := s.newSession(st)
	if err != nil {
		return err
	}
	s.finished = slices.DeleteFunc(s.finished, func(f *session) bool { return f.id == id }) // feedOf finds the new feed
	s.sessions[id] = ss
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ss.run(lifecycle.Begin{})
	}()
	return nil
}

// resumable says whether rec can be resumed, with the checkpoint it
// resumes from: it is stopped, has its files and a complete checkpoint
// whose files this agent still holds.
func resumable(rec job.Record, blobs *blob.Store) (job.Checkpoint, error) {
	if rec.State != job.Stopped {
		return job.Checkpoint{}, fmt.Errorf("%w: job %s is %s; only a job stopped with `zorilla stop --checkpoint` can be resumed", job.ErrNotResumable, rec.ID, rec.State)
	}
	c, ok := rec.LastComplete()
	if !ok {
		return job.Checkpoint{}, fmt.Errorf("%w: job %s has no complete checkpoint", job.ErrNotResumable, rec.ID)
	}
	if rec.Program == nil {
		return job.Checkpoint{}, fmt.Errorf("%w: job %s: the record lost its program", job.ErrNotResumable, rec.ID)
	}
	for _, f := range append([]proto.FileRef{*rec.Program}, rec.Inputs...) {
		if h, err := blob.ParseHash(f.Hash); err != nil || !blobs.Has(h) {
			return job.Checkpoint{}, fmt.Errorf("%w: job %s: its file %s is no longer on this agent", job.ErrNotResumable, rec.ID, f.Name)
		}
	}
	for _, f := range c.Files {
		h, err := blob.ParseHash(f.Hash)
		if err != nil || !blobs.Has(h) {
			return job.Checkpoint{}, fmt.Errorf("%w: job %s: rank %d's file of checkpoint %d is no longer on this agent", job.ErrNotResumable, rec.ID, f.Rank, c.Num)
		}
	}
	return c, nil
}

// cancelStopped cancels a stopped job: it will not be resumed, so its
// checkpoint's files go. It reports whether id was a stopped job.
func (s *Submitter) cancelStopped(id job.ID, why string) bool {
	s.mu.Lock()
	if s.sessions[id] != nil {
		s.mu.Unlock()
		return false // resumed meanwhile: cancelled as any running job
	}
	rec, err := s.store.Get(id)
	if err != nil || rec.State != job.Stopped || rec.Program == nil {
		s.mu.Unlock()
		return false
	}
	ss, err := s.newSession(lifecycle.Start{Record: rec})
	if err != nil {
		s.mu.Unlock()
		log.Warnw("stopped job not cancelled", "job", id, "err", err)
		return false
	}
	s.sessions[id] = ss
	s.mu.Unlock()
	ss.run(lifecycle.Cancel{Why: why})
	return true
}

// Reattach is used by New for the jobs an agent that stopped left running.
func (s *Submitter) reattach(rec job.Record) error {
	st, err := replayJournal(s.store.Dir(rec.ID))
	if err != nil {
		return err
	}
	ss, err := s.newSession(lifecycle.Start{Record: rec,
		Journal: lifecycle.Journal{Seq: st.seq, Done: st.done, Ready: st.ready}})
	if err != nil {
		return err
	}
	s.launch(ss, lifecycle.Begin{})
	return nil
}

var _ = peer.ID("")

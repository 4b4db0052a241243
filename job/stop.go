package job

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// Stop and resume (issue 16). `zorilla stop JOB --checkpoint` asks rank 0's
// host to make rank 0's next Checkpoint call take one whatever
// --checkpoint-every says (OpCheckpoint, then the CHECKPOINTNOW frame of
// mpi/PROTOCOL.md: the decision is rank 0's), waits until a checkpoint
// newer than the last complete one at the request is complete in the
// manifest, then ends every process, frees the hosts, and moves the job to
// Stopped, keeping that checkpoint's files. When the program calls no
// Checkpoint within the timeout, the stop gives up and the job runs on.
// `zorilla resume JOB` floods again and restarts the job from that
// checkpoint on whatever hosts it finds, as a restart after a loss does.
//
// Stopped is a state of its own rather than Cancelled with a flag: it is
// over (nothing runs, nothing is held) but not final, and whoever reads a
// status or waits for a job's end must be able to tell the two apart.

// ErrNotStoppable and ErrNotResumable are wrapped by refused stops and
// resumes: the job is not in a state that allows it.
var (
	ErrNotStoppable = errors.New("job cannot be stopped with a checkpoint")
	ErrNotResumable = errors.New("job cannot be resumed")
)

// DefaultStopTimeout is how long a stop waits for the program's next
// checkpoint when the caller gives no timeout.
const DefaultStopTimeout = 2 * time.Minute

// stopReq is a stop handed to a session's run loop; reply gets nil once the
// job is stopped, or why it was not.
type stopReq struct {
	timeout time.Duration
	reply   chan error
	by      *preemptBy // a host's preemption (preempt.go); nil: the user's stop
}

// stopping is a stop under way in the watch loop.
type stopping struct {
	req   stopReq
	base  uint64 // the last complete checkpoint when the stop came: the next one ends the job
	timer *time.Timer
}

// errStopped ends a run stopped with checkpoint num.
type errStopped struct {
	num   uint64
	reply chan error
	why   string // a preemption's reason; empty: the user's stop
}

func (e errStopped) Error() string {
	if e.why != "" {
		return fmt.Sprintf("swapped out with checkpoint %d: %s", e.num, e.why)
	}
	return fmt.Sprintf("stopped with checkpoint %d", e.num)
}

// Stop stops a running job with a checkpoint: it returns once the job is
// Stopped, or with why not (the job then goes on as it was).
func (s *Submitter) Stop(ctx context.Context, id ID, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = DefaultStopTimeout
	}
	ss := s.session(id)
	if ss == nil {
		rec, err := s.store.Get(id)
		if err != nil {
			return fmt.Errorf("%w: %s", ErrUnknownJob, id)
		}
		return fmt.Errorf("%w: job %s is %s, not running", ErrNotStoppable, id, rec.State)
	}
	req := stopReq{timeout: timeout, reply: make(chan error, 1)}
	select {
	case ss.stopReq <- req:
	case <-ss.ctx.Done():
		return fmt.Errorf("%w: job %s ended meanwhile", ErrNotStoppable, id)
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-req.reply:
		return err
	case <-ctx.Done():
		return fmt.Errorf("job %s: no answer to the stop yet (%w); see `zorilla status`", id, ctx.Err())
	}
}

// refuseStop answers a stop that comes while the job is not running.
func (ss *session) refuseStop(r stopReq) {
	r.reply <- fmt.Errorf("%w: job %s is %s; try again once it runs", ErrNotStoppable, ss.id, ss.rec.State)
}

// beginStop starts a stop in the watch loop: rank 0's host is asked for a
// checkpoint now.
func (ss *session) beginStop(w *watchState, r stopReq) {
	d := ss.sub.Desc
	switch {
	case w.stop != nil:
		r.reply <- fmt.Errorf("%w: job %s: a stop is already under way", ErrNotStoppable, ss.id)
		return
	case ss.checkPreemptBy(r.by) != nil:
		r.reply <- ss.checkPreemptBy(r.by)
		return
	case d.Replicas > 1 || d.PMI:
		r.reply <- fmt.Errorf("%w: job %s takes no checkpoints (replicated or --pmi); cancel it instead", ErrNotStoppable, ss.id)
		return
	case !w.released:
		r.reply <- fmt.Errorf("%w: job %s is %s but not every rank is in mpi.Init yet (a program without the Zorilla MPI library never is); try again once it runs",
			ErrNotStoppable, ss.id, ss.rec.State)
		return
	}
	var host peer.ID
	var lease string
	for p, h := range ss.hosts {
		for _, pr := range h.plan.Procs {
			if pr.Rank == 0 && !h.done {
				host, lease = p, h.plan.Offer.Lease
			}
		}
	}
	if host == "" {
		r.reply <- fmt.Errorf("%w: job %s: rank 0 runs nowhere now", ErrNotStoppable, ss.id)
		return
	}
	if _, err := ss.s.lease(ss.ctx, host, proto.LeaseRequest{Op: proto.OpCheckpoint, Job: ss.id, Lease: lease}); err != nil {
		r.reply <- fmt.Errorf("job %s: rank 0's host %s was not told to checkpoint: %w", ss.id, shortPeer(host), err)
		return
	}
	base := uint64(0)
	if c, ok := ss.rec.LastComplete(); ok {
		base = c.Num
	}
	w.stop = &stopping{req: r, base: base, timer: time.NewTimer(r.timeout)}
	line := "stopping: the job ends at its next checkpoint"
	if r.by != nil {
		line = "swapping out at the next checkpoint: " + r.by.why
	}
	ss.feed.append(Update{Kind: "output", Rank: -1, Stream: "stderr", Line: line})
}

// stopTimer is the channel of the stop's timeout, nil without a stop.
func (w *watchState) stopTimer() <-chan time.Time {
	if w.stop == nil {
		return nil
	}
	return w.stop.timer.C
}

// stopTimedOut gives up a stop: the program took no checkpoint in time.
func (ss *session) stopTimedOut(w *watchState) {
	w.stop.req.reply <- fmt.Errorf("job %s: the program took no checkpoint within %v (does it call Comm.Checkpoint?); it keeps running",
		ss.id, w.stop.req.timeout)
	w.stop = nil
	ss.feed.append(Update{Kind: "output", Rank: -1, Stream: "stderr", Line: "stop given up: no checkpoint in time; the job runs on"})
}

// stopIfCheckpointed ends the run once the stop's checkpoint is complete.
func (ss *session) stopIfCheckpointed(w *watchState) error {
	if w.stop == nil {
		return nil
	}
	c, ok := ss.rec.LastComplete()
	if !ok || c.Num <= w.stop.base {
		return nil
	}
	st := errStopped{num: c.Num, reply: w.stop.req.reply}
	if by := w.stop.req.by; by != nil {
		st.why = by.why
	}
	w.stop.timer.Stop()
	w.stop = nil
	ss.killAll(st.Error())
	return st
}

// endStop answers a stop still under way when the run ends otherwise.
func (ss *session) endStop(w *watchState, err error) {
	if w.stop == nil {
		return
	}
	w.stop.timer.Stop()
	why := "it ended"
	if err != nil {
		why = err.Error()
	}
	w.stop.req.reply <- fmt.Errorf("%w: job %s ended before its next checkpoint: %s", ErrNotStoppable, ss.id, why)
	w.stop = nil
}

// Resume starts a stopped job again from its checkpoint; elsewhere keeps
// it off the hosts of the run that was stopped.
func (s *Submitter) Resume(id ID, elsewhere bool) error {
	return s.resumeStopped(id, elsewhere, "", nil)
}

// resumeStopped resumes a stopped job; a job swapped out for another
// (preempted: why says by what) looks for hosts at least
// DefaultPreemptWait, and its adverts ask its hosts to serve the jobs of
// yieldTo first (Need.YieldTo and YieldWith).
func (s *Submitter) resumeStopped(id ID, elsewhere bool, preempted string, yieldTo []ID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss := s.sessions[id]; ss != nil {
		return fmt.Errorf("%w: job %s is %s here, not stopped", ErrNotResumable, id, ss.rec.State)
	}
	rec, err := s.store.Get(id)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrUnknownJob, id)
	}
	c, err := resumable(rec, s.blobs)
	if err != nil {
		return err
	}
	ss := s.newSession(rec.ID, rec.Key, Submission{Desc: rec.Desc, Program: *rec.Program, Inputs: rec.Inputs})
	ss.rec = rec
	s.finished = slices.DeleteFunc(s.finished, func(f *session) bool { return f.id == id }) // feedOf finds the new feed
	j, err := openJournal(s.store.Dir(id))
	if err != nil {
		ss.stop()
		return fmt.Errorf("job %s: %w", id, err)
	}
	ss.journal = j
	if err := ss.dropOutputs(); err != nil {
		log.Warnw("output files of the stopped run not removed", "job", id, "err", err)
	}
	if elsewhere && len(rec.Runs) > 0 {
		ss.avoidHosts(rec.Runs[len(rec.Runs)-1].Hosts)
	}
	if preempted != "" {
		ss.minDeadline = DefaultPreemptWait
	}
	ss.yieldTo = yieldTo
	ss.grantCheckpoints()
	ss.note = fmt.Sprintf("resumed from checkpoint %d", c.Num)
	ss.feed.append(Update{Kind: "output", Rank: -1, Stream: "stderr",
		Line: fmt.Sprintf("resuming from checkpoint %d (taken %s, %d bytes)", c.Num, c.Taken.Format(time.TimeOnly), c.Bytes())})
	s.sessions[id] = ss
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ss.run(false)
	}()
	return nil
}

// resumable says whether rec can be resumed, with the checkpoint it
// resumes from: it is stopped, has its files and a complete checkpoint
// whose files this agent still holds.
func resumable(rec Record, blobs *blob.Store) (Checkpoint, error) {
	if rec.State != Stopped {
		return Checkpoint{}, fmt.Errorf("%w: job %s is %s; only a job stopped with `zorilla stop --checkpoint` can be resumed", ErrNotResumable, rec.ID, rec.State)
	}
	c, ok := rec.LastComplete()
	if !ok {
		return Checkpoint{}, fmt.Errorf("%w: job %s has no complete checkpoint", ErrNotResumable, rec.ID)
	}
	if rec.Program == nil {
		return Checkpoint{}, fmt.Errorf("%w: job %s: the record lost its program", ErrNotResumable, rec.ID)
	}
	for _, f := range append([]proto.FileRef{*rec.Program}, rec.Inputs...) {
		if h, err := blob.ParseHash(f.Hash); err != nil || !blobs.Has(h) {
			return Checkpoint{}, fmt.Errorf("%w: job %s: its file %s is no longer on this agent", ErrNotResumable, rec.ID, f.Name)
		}
	}
	for _, f := range c.Files {
		h, err := blob.ParseHash(f.Hash)
		if err != nil || !blobs.Has(h) {
			return Checkpoint{}, fmt.Errorf("%w: job %s: rank %d's file of checkpoint %d is no longer on this agent", ErrNotResumable, rec.ID, f.Rank, c.Num)
		}
	}
	return c, nil
}

// finishStopped records a run stopped with a checkpoint: the job is
// Stopped and keeps that checkpoint's files (only), for a resume.
func (ss *session) finishStopped(st errStopped) {
	ss.setState(Stopped, st.Error())
	ss.dropIncomplete()
	ss.grants.set(nil)
	ss.save()
	rec := ss.rec
	ss.feed.append(Update{Kind: "output", Rank: -1, Stream: "stderr",
		Line: fmt.Sprintf("%s; `zorilla resume %s` starts it again from there", st.Error(), ss.id)})
	ss.feed.append(Update{Kind: "end", State: rec.State, Record: &rec})
	ss.closeOutputs()
	ss.s.forget(ss.id)
	st.reply <- nil
}

// cancelStopped cancels a stopped job: it will not be resumed, so its
// checkpoint's files go. It reports whether id was a stopped job.
func (s *Submitter) cancelStopped(id ID, why string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions[id] != nil {
		return false // resumed meanwhile: cancelled as any running job
	}
	rec, err := s.store.Get(id)
	if err != nil || rec.State != Stopped || rec.Program == nil {
		return false
	}
	ss := s.newSession(rec.ID, rec.Key, Submission{Desc: rec.Desc, Program: *rec.Program, Inputs: rec.Inputs})
	defer ss.stop()
	ss.rec = rec
	ss.dropCheckpoints()
	ss.setState(Cancelled, why)
	return true
}

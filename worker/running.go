package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/worker/pmi"
	"github.com/zorilla-p2p/zorilla/worker/proc"
)

// running is one committed job on this worker. Its run goroutine owns the
// processes and the job folder; kill and release may be called from any
// goroutine.
type running struct {
	svc       *Service
	id        proto.JobID
	lease     string
	submitter peer.ID
	c         proto.Commit
	dir       string
	sandbox   *proc.Sandbox  // owned by run; nil before stage
	res       proc.Resources // the sandbox's limits

	ctx       context.Context
	cancel    context.CancelFunc
	done      chan struct{} // closed when run has cleaned up and ended the lease
	fenceKick chan struct{} // the processes started: the fence looks again (fence.go)
	// keepLease (guarded by svc.mu) leaves the lease held when the run
	// ends: a retry renews it for the next start (stopKeepingLease).
	keepLease bool

	held []blob.Hash // the blobs stage acquired; run's end releases them
	ck   *ckptSender // sends the ranks' checkpoint files (checkpoint.go)

	mu       sync.Mutex // guards mpi, sink, procs and why
	mpi      MPIJob
	fence    *pmi.Fence // a PMI job's KVS here (instead of mpi)
	sink     *sink      // the report stream, once open
	why      string
	released sync.Once
	running  atomic.Bool    // phase two came: the ranks were released
	procs    []proc.Process // guarded by mu: the copies here, once all started (gangloop.go, memuse.go)
	pre      preemptState
	// releasedAt is when the ranks here were released (Unix ns; 0
	// before): the start of the job's swap slice (Holder.Ran).
	releasedAt atomic.Int64
}

// start commits the lease of a commit checked against it (commitRefusal)
// and runs the job in the background.
func (s *Service) start(from peer.ID, id proto.JobID, lease string, c proto.Commit) error {
	if err := s.leases.Commit(lease, id); err != nil {
		return fmt.Errorf("commit %s: %w", id, err)
	}
	s.leases.CommitMemory(lease, len(c.Procs))
	ctx, cancel := context.WithCancel(s.ctx)
	r := &running{svc: s, id: id, lease: lease, submitter: from, c: c,
		dir: filepath.Join(s.cfg.JobsDir, string(id)), ctx: ctx, cancel: cancel, done: make(chan struct{}),
		fenceKick: make(chan struct{}, 1), ck: newCkptSender()}
	s.mu.Lock()
	if _, dup := s.jobs[id]; dup {
		s.mu.Unlock()
		cancel()
		return fmt.Errorf("commit %s: already running here", id)
	}
	s.jobs[id] = r
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		r.run()
	}()
	return nil
}

// checkCommit refuses a commit that could escape the job folder or ask for
// more than a job may.
func checkCommit(c proto.Commit) error {
	if c.Key == "" || len(c.Procs) == 0 || c.N < 1 || c.R < 1 || c.Attempt < 0 {
		return errors.New("incomplete commit")
	}
	for _, f := range append([]proto.FileRef{c.Program}, c.Inputs...) {
		if err := plainName(f.Name); err != nil {
			return err
		}
	}
	for _, o := range c.Outputs {
		if !filepath.IsLocal(o) {
			return fmt.Errorf("output %q is not inside the job folder", o)
		}
	}
	if c.Fence < 0 || c.Fence > 0 && c.Fence < minFence {
		return fmt.Errorf("fence %v: want 0 (none) or at least %v", c.Fence, minFence)
	}
	for _, p := range c.Procs {
		if p.Rank < 0 || p.Rank >= c.N || p.Replica < 0 || p.Replica >= c.R {
			return fmt.Errorf("process %d.%d outside n=%d r=%d", p.Rank, p.Replica, c.N, c.R)
		}
	}
	if err := c.RankTable.Check(c.N, c.R); err != nil {
		return err
	}
	return nil
}

// plainName accepts a file name that stays inside the job folder.
func plainName(name string) error {
	if name == "" || name == "." || name == ".." || filepath.Base(name) != name {
		return fmt.Errorf("file name %q is not a plain name", name)
	}
	return nil
}

func (r *running) kill(why string) {
	r.mu.Lock()
	if r.why == "" {
		r.why = why
	}
	r.mu.Unlock()
	r.cancel()
}

// release lets the job's ranks here go; at is when its submitter
// released it (releaseTime), from which its swap slice is counted.
func (r *running) release(at time.Time) {
	if f := r.pmiFence(); f != nil {
		r.released.Do(func() {
			r.releasedAt.Store(at.UnixNano())
			r.running.Store(true)
			f.Release()
			r.svc.kickGang()
			r.svc.afterRelease()
		})
	}
	if m := r.mpiJob(); m != nil {
		r.released.Do(func() {
			r.releasedAt.Store(at.UnixNano())
			r.running.Store(true)
			m.Release()
			r.svc.kickGang()
			r.svc.afterRelease()
			r.svc.afterSwapSlice(r)
		})
	}
}

// afterRelease looks again, in the background, whether a job of higher
// priority waiting for this host may preempt the job just released.
func (s *Service) afterRelease() {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if s.ctx.Err() == nil {
			s.preemptForWaiting()
		}
	}()
}

// run stages, starts, watches and cleans up the job here. Whatever happens,
// no process and no job folder outlives it, and the lease ends (unless
// a retry keeps it).
func (r *running) run() {
	s := r.svc
	defer r.cleanup()
	k, st, err := openSink(r.ctx, s.ep, proto.ReportHello{Job: r.id, Key: r.c.Key, Lease: r.lease}, r.submitter,
		FenceBeat(s.cfg.Heartbeat, r.c.Fence), s.cfg.SubmitterGrace)
	if err != nil {
		log.Warnw("cannot report to submitter; job not started", "job", r.id, "err", err)
		return
	}
	go k.run(r.ctx, st)
	defer func() { <-k.done }()
	fctx, endFence := context.WithCancel(r.ctx)
	fenced := make(chan struct{})
	go func() {
		defer close(fenced)
		r.guardFence(fctx, k)
	}()
	stopFence := func() { endFence(); <-fenced }
	defer stopFence()
	r.mu.Lock()
	r.sink = k
	r.mu.Unlock()

	if err := r.prepare(); err != nil {
		k.send(r.ctx, proto.Report{Kind: proto.RepFailed, Reason: err.Error()})
		k.send(r.ctx, proto.Report{Kind: proto.RepDone})
		return
	}
	go r.sendCheckpoints(k)
	procs, err := r.launch(k)
	if err != nil {
		rep := proto.Report{Kind: proto.RepFailed, Reason: err.Error()}
		if pe := (*proc.ProgramError)(nil); errors.As(err, &pe) {
			rep.Reason, rep.BadProgram = pe.Why, true
		}
		k.send(r.ctx, rep)
	} else {
		k.send(r.ctx, proto.Report{Kind: proto.RepStarted})
	}
	r.mu.Lock()
	r.procs = procs
	r.mu.Unlock()
	r.kickFence()
	r.svc.kickGang()
	r.watch(k, procs)
	stopFence() // the processes ended: nothing left to freeze
	r.svc.kickGang()
	r.endSlices()
	r.finishCheckpoints()
	if err == nil {
		r.sendOutputs(k)
	}
	k.send(r.ctx, proto.Report{Kind: proto.RepDone})
}

// cleanup ends what the run leaves: the job's MPI routes or PMI fence,
// its sandbox (and any process left in it), its folder, its blobs, its
// place in the job table and its lease (unless a retry keeps it).
func (r *running) cleanup() {
	s := r.svc
	r.cancel()
	if s.mpi != nil {
		s.mpi.RemoveJob(r.routeID())
	}
	if f := r.pmiFence(); f != nil {
		s.pmi.Leave(f)
	}
	if r.sandbox != nil {
		if err := r.sandbox.Close(); err != nil {
			log.Warnw("job sandbox not fully removed", "job", r.id, "err", err)
		}
	}
	if err := os.RemoveAll(r.dir); err != nil {
		log.Warnw("job folder not removed", "job", r.id, "dir", r.dir, "err", err)
	}
	s.releaseBlobs(r.held)
	s.mu.Lock()
	delete(s.jobs, r.id)
	keep := r.keepLease
	s.mu.Unlock()
	if !keep {
		s.endLease(r.lease)
	}
	close(r.done)
}

// launch registers the job with the MPI router and starts every local copy.
func (r *running) launch(k *sink) ([]proc.Process, error) {
	if r.c.PMI {
		return r.launchPMI(k)
	}
	s := r.svc
	var sock string
	if s.mpi != nil {
		m, err := s.mpi.AddJob(r.mpiSpec())
		if err != nil {
			return nil, fmt.Errorf("mpi router: %w", err)
		}
		r.mu.Lock()
		r.mpi = m
		r.mu.Unlock()
		sock = s.mpi.Socket()
		go r.followMPI(k, m)
	}
	var procs []proc.Process
	for _, p := range r.c.Procs {
		spec := proc.Spec{
			Job: r.routeID(), Rank: p.Rank, Replica: p.Replica, Size: r.c.N,
			Dir: r.rankDir(p), Program: filepath.Join(r.dir, r.c.Program.Name),
			Args: r.c.Args, Env: append(append(r.env(sock), r.checkpointEnv(p)...), r.c.Env...),
			Timeout: r.c.Timeout, Limits: s.cfg.Limits, Sandbox: r.sandbox,
		}
		out := func(stream string, line []byte) {
			k.send(r.ctx, proto.Report{Kind: proto.RepOutput, Rank: p.Rank, Replica: p.Replica, Stream: stream, Data: append([]byte(nil), line...)})
		}
		pr, err := s.runner.Start(r.ctx, spec, out)
		if err != nil {
			killAll(procs)
			return nil, fmt.Errorf("start rank %d.%d: %w", p.Rank, p.Replica, err)
		}
		procs = append(procs, pr)
	}
	return procs, nil
}

// killAll ends processes started and waits for them.
func killAll(procs []proc.Process) {
	for _, q := range procs {
		_ = q.Kill()
		q.Wait()
	}
}

func (r *running) env(sock string) []string {
	// proc sets ZORILLA_JOB, _RANK, _SIZE and _REPLICA from the spec.
	env := []string{
		"ZORILLA_KEY=" + r.c.Key,
		"ZORILLA_AGENT=" + r.svc.h.ID().String(),
	}
	if sock != "" {
		env = append(env, "ZORILLA_SOCKET="+sock)
	}
	return env
}

// routeID names this start of the job to the MPI router and to its ranks
// (ZORILLA_JOB): the job ID for the first start, "<job>.<n>" for the n-th,
// so that a retried start never meets the links, or the router's memory of
// ended jobs, of a start that was killed.
func (r *running) routeID() string {
	if r.c.Attempt <= 1 {
		return string(r.id)
	}
	return fmt.Sprintf("%s.%d", r.id, r.c.Attempt)
}

// watch reports each copy's end, and kills them all if the job is killed
// here or the submitter is lost.
func (r *running) watch(k *sink, procs []proc.Process) {
	var wg sync.WaitGroup
	for i, pr := range procs {
		p := r.c.Procs[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-pr.Done():
			case <-r.ctx.Done():
				_ = pr.Kill()
			case <-k.lost:
				_ = pr.Kill()
			}
			r.copyEnded(k, p, pr.Wait())
		}()
	}
	wg.Wait()
}

// copyEnded carries out decideCopyEnd and exitReports for copy p, which
// ended with x.
func (r *running) copyEnded(k *sink, p proto.Proc, x proc.Exit) {
	end := decideCopyEnd(p, x, r.res, r.c.R, r.running.Load())
	if end.Words != nil {
		log.Infow("job copy ended by its sandbox", "job", r.id, "rank", p.Rank, "replica", p.Replica, "why", sandboxWords(x, r.res))
		k.send(r.ctx, *end.Words)
	}
	if end.Fail != nil {
		r.failMPI(end.Fail)
	}
	if end.FailedStart != nil {
		k.send(r.ctx, *end.FailedStart)
	}
	for _, rep := range exitReports(p, x, failedOf(r.mpiFailure())) {
		k.send(r.ctx, rep)
	}
}

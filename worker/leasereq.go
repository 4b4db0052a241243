package worker

import (
	"bufio"
	"context"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/internal/rpc"
	"github.com/zorilla-p2p/zorilla/internal/wire"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// The lease protocol, the I/O side: decode a request, take a snapshot of
// what the worker knows of its lease (leaseView), let decideLease say what
// to do, and do it.

// leaseCallTimeout bounds one lease request, read to reply: a submitter
// waits for the reply about as long (its calls time out after 10 s).
const leaseCallTimeout = 10 * time.Second

// handleLease serves one LeaseRequest from a submitter.
func (s *Service) handleLease(ctx context.Context, from peer.ID, st rpc.Stream) {
	_ = st.SetDeadline(time.Now().Add(leaseCallTimeout))
	req, err := decodeLease(bufio.NewReader(st))
	if err != nil {
		s.abuse.refused.Add(RefusedBadLease)
		log.Debugw("bad lease request", "from", from, "err", err)
		_ = st.Reset()
		return
	}
	reply := proto.LeaseReply{OK: true}
	if reply.Lease, err = s.leaseRequest(ctx, from, req); err != nil {
		s.abuse.countLeaseError(err)
		reply = proto.LeaseReply{Error: err.Error()}
	}
	if err := wire.WriteJSON(st, reply); err != nil {
		_ = st.Reset()
		return
	}
	_ = st.Close()
}

// decodeLease reads one LeaseRequest within the protocol's size limit, as
// the worker acts on it: a kill with the Retry flag of older submitters
// is OpRetry.
func decodeLease(r *bufio.Reader) (proto.LeaseRequest, error) {
	var req proto.LeaseRequest
	if err := wire.ReadJSON(r, proto.MaxLeaseSize, &req); err != nil {
		return proto.LeaseRequest{}, err
	}
	return req.Normalize(), nil
}

// viewLease is what the worker knows of req's lease now, and the job
// running under it (nil when none).
func (s *Service) viewLease(req proto.LeaseRequest) (leaseView, *running) {
	l, ok := s.leases.Get(req.Lease)
	r := s.lookup(req.Job, req.Lease)
	return leaseView{Lease: l, Leased: ok, Runs: r != nil, Draining: s.draining.Load()}, r
}

// leaseRequest decides on req from peer from and carries it out; it
// returns a retry's new lease key.
func (s *Service) leaseRequest(ctx context.Context, from peer.ID, req proto.LeaseRequest) (string, error) {
	v, r := s.viewLease(req)
	act := decideLease(from, req, v)
	switch act.Do {
	case leaseRefuse:
		return "", act.Err
	case leaseCancel:
		log.Debugw("lease cancelled", "job", req.Job, "host", s.h.ID())
		s.waiting.cancelled(req.Job, req.Lease) // first: the freed slots go to who still waits
		s.endLease(req.Lease)
	case leaseCommit:
		return "", s.commit(from, req, v.Lease)
	case leaseRelease:
		r.release(releaseTime(req.ReleasedAt, time.Now()))
	case leaseResume:
		r.resume()
	case leaseCheckpoint:
		return "", r.checkpointNow()
	case leaseKill:
		r.kill(req.Reason)
	case leaseEnd:
		s.endLease(req.Lease)
	case leaseRetry, leaseRekey:
		return s.retry(ctx, req, r)
	}
	return "", nil
}

// commit admits a commit decideLease let through, checks it against its
// lease and starts the job.
func (s *Service) commit(from peer.ID, req proto.LeaseRequest, l Lease) error {
	c := *req.Commit
	if err := s.abuse.admitCommit(from, c, time.Now()); err != nil {
		return fmt.Errorf("commit %s: %w", req.Job, err)
	}
	if err := commitRefusal(c, l, s.cfg.Gang.Columns); err != nil {
		return fmt.Errorf("commit %s: %w", req.Job, err)
	}
	if err := s.start(from, req.Job, req.Lease, c); err != nil {
		return err
	}
	s.waiting.drop(req.Job)   // placed: it waits for nothing here
	s.waiting.served(req.Job) // it runs here: the jobs swapped out for it take their turn again
	return nil
}

// killStopWait bounds how long a retry waits for the job's processes and
// folder to go: within the submitter's 10 s call, and past proc's default
// 5 s kill grace.
const killStopWait = 8 * time.Second

// retry ends the job's run here (r, when it runs), waits until its
// processes and folder are gone, and keeps the lease's slots for the
// job's next start under a new key, which it returns. The slots never
// come free in between: another job cannot take them.
func (s *Service) retry(ctx context.Context, req proto.LeaseRequest, r *running) (string, error) {
	if r != nil {
		ctx, cancel := context.WithTimeout(ctx, killStopWait)
		defer cancel()
		if err := s.stopKeepingLease(ctx, r, req.Reason); err != nil {
			return "", fmt.Errorf("%s %s: %w", req.Op, req.Job, err)
		}
	}
	l, err := s.leases.Renew(req.Lease)
	if err != nil {
		return "", fmt.Errorf("%s %s: slots not kept for a retry: %w", req.Op, req.Job, err)
	}
	return l.Key, nil
}

// stopKeepingLease kills r and waits until its run has ended, the lease
// left held (committed) for the caller to renew. When ctx ends first, the
// run ends the lease itself when it ends.
func (s *Service) stopKeepingLease(ctx context.Context, r *running, why string) error {
	s.mu.Lock()
	r.keepLease = true
	s.mu.Unlock()
	r.kill(why)
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.jobs[r.id] != r {
		return nil // it ended as the wait did, the lease kept
	}
	r.keepLease = false
	return fmt.Errorf("processes still stopping after %v", killStopWait)
}

func (s *Service) lookup(id proto.JobID, lease string) *running {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.jobs[id]
	if r == nil || r.lease != lease {
		return nil
	}
	return r
}

package worker

import (
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

// leaseView is what the worker knows, when a lease request comes, of the
// lease it names: decideLease reads nothing else.
type leaseView struct {
	Lease    Lease // the live lease under the request's key
	Leased   bool  // there is one
	Runs     bool  // the job runs here under that lease
	Draining bool  // Drain was called: no new job starts
}

// leaseDo is what a lease request makes the worker do.
type leaseDo int

const (
	leaseRefuse     leaseDo = iota // answer Err, change nothing
	leaseCancel                    // give the unused lease back; the line learns of it first
	leaseCommit                    // admit the commit (abuse limits), check it, start the job
	leaseRelease                   // phase two: let the job's ranks go
	leaseResume                    // reopen the job's report stream at once
	leaseCheckpoint                // ask rank 0 here for a checkpoint
	leaseKill                      // end the job's processes; the run ends the lease
	leaseEnd                       // end a lease nothing runs under
	leaseRetry                     // end the job's processes, wait, keep the slots under a new key
	leaseRekey                     // keep the slots of a lease nothing runs under under a new key
)

var leaseDoNames = [...]string{"refuse", "cancel", "commit", "release", "resume", "checkpoint", "kill", "end", "retry", "rekey"}

func (d leaseDo) String() string {
	if int(d) < len(leaseDoNames) {
		return leaseDoNames[d]
	}
	return fmt.Sprintf("leaseDo(%d)", int(d))
}

// leaseAction is decideLease's answer: what to do, or the refusal.
type leaseAction struct {
	Do  leaseDo
	Err error // leaseRefuse
}

// decideLease decides what LeaseRequest req (normalized: a retry is
// OpRetry) from peer from does, given what the worker knows of its lease.
// Only the lease's submitter may act on it, and only for its job. Pure.
//
// A commit's further checks come after it, in order: the abuse limits
// (admitCommit, which takes one of the submitter's tokens, so only a
// commit that passes this is charged), the commit's shape against its
// lease (commitRefusal), and the lease table's own (a key is used once).
func decideLease(from peer.ID, req proto.LeaseRequest, v leaseView) leaseAction {
	if !v.Leased || v.Lease.Job != req.Job || v.Lease.Submitter != from {
		return refuseLease("%s %s: no such lease here (expired, released, or not yours)", req.Op, req.Job)
	}
	switch req.Op {
	case proto.OpCancel:
		if v.Runs {
			return refuseLease("cancel %s: already committed; kill it instead", req.Job)
		}
		return leaseAction{Do: leaseCancel}
	case proto.OpCommit:
		switch {
		case req.Commit == nil:
			return leaseAction{Err: errors.New("commit without a body")}
		case v.Draining:
			return leaseAction{Err: fmt.Errorf("commit %s: %w", req.Job, ErrDraining)}
		}
		return leaseAction{Do: leaseCommit}
	case proto.OpRelease:
		return ifRuns(v, leaseRelease, "job %s is not running here", req.Job)
	case proto.OpResume:
		return ifRuns(v, leaseResume, "resume %s: the job no longer runs here", req.Job)
	case proto.OpCheckpoint:
		return ifRuns(v, leaseCheckpoint, "checkpoint %s: the job no longer runs here", req.Job)
	case proto.OpKill:
		if v.Runs {
			return leaseAction{Do: leaseKill}
		}
		return leaseAction{Do: leaseEnd}
	case proto.OpRetry:
		if v.Runs {
			return leaseAction{Do: leaseRetry}
		}
		return leaseAction{Do: leaseRekey}
	}
	return refuseLease("unknown lease op %q", req.Op)
}

// ifRuns is do when the job runs here under the lease, else the refusal.
func ifRuns(v leaseView, do leaseDo, format string, j proto.JobID) leaseAction {
	if !v.Runs {
		return refuseLease(format, j)
	}
	return leaseAction{Do: do}
}

func refuseLease(format string, args ...any) leaseAction {
	return leaseAction{Err: fmt.Errorf(format, args...)}
}

// commitRefusal checks a commit against the job's limits and its lease:
// nothing that could escape the job folder, restore files of its own
// ranks, a gang column that exists (columns: the host's, 0 when it runs
// no rotation), no more processes than the lease's slots. Pure.
func commitRefusal(c proto.Commit, l Lease, columns int) error {
	if err := errors.Join(checkCommit(c), checkRestore(c), checkGangColumn(c.GangColumn, columns)); err != nil {
		return err
	}
	if len(c.Procs) > l.Slots {
		return fmt.Errorf("%d processes, the lease holds %d slots", len(c.Procs), l.Slots)
	}
	return nil
}

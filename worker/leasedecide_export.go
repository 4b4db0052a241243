package worker

import (
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

// LeaseView is what a worker knows, when a lease request comes, of the
// lease the request names: the live lease under its key (Leased: there is
// one), whether the job runs here under it, and whether the worker drains.
type LeaseView struct {
	Lease    Lease
	Leased   bool
	Runs     bool
	Draining bool
}

// DecideLease is the worker's decision on a lease request, for callers
// that model workers without a Service (a simulation of many agents): it
// names what the request does ("refuse", "cancel", "commit", "release",
// "resume", "checkpoint", "kill", "end", "retry", "rekey") or returns the
// refusal. A commit it accepts is then checked by CommitRefusal. Pure.
func DecideLease(from peer.ID, req proto.LeaseRequest, v LeaseView) (string, error) {
	a := decideLease(from, req.Normalize(), leaseView(v))
	if a.Err != nil {
		return leaseRefuse.String(), a.Err
	}
	return a.Do.String(), nil
}

// CommitRefusal checks a commit against the job's limits and its lease
// (columns: the host's gang columns, 0 when it runs no rotation); nil when
// it may start. Pure.
func CommitRefusal(c proto.Commit, l Lease, columns int) error { return commitRefusal(c, l, columns) }

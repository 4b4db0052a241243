package router

import (
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
)

// peerLost records that a remote agent of the job broke a stream or went
// silent. The job fails when a rank is left without a live copy, unless
// every local copy has already finalized (nothing here can block then).
func (j *Job) peerLost(p peer.ID, err error) {
	j.mu.Lock()
	if j.removed || j.err != nil || j.lost[p] || j.ended[p] {
		j.mu.Unlock()
		return
	}
	j.lost[p] = true
	j.emit(Event{Kind: EventPeerLost, Rank: -1, Replica: -1, Peer: p, Err: err})
	if !j.unfinishedLocked() {
		j.mu.Unlock()
		return
	}
	orphans := orphaned(j.spec.Hosts, j.lost, j.lostCopiesLocked())
	j.mu.Unlock()
	log.Infof("job %s: agent %s lost: %v", j.spec.ID, p.ShortString(), err)
	if len(orphans) > 0 {
		j.fail(&Failure{Cause: proto.CauseAgentLost, Rank: orphans[0],
			Reason: fmt.Sprintf("agent %s lost (%v): ranks %v have no copy left", p, err, orphans)})
	}
}

// remoteFail fails the job because another agent of it said so.
func (j *Job) remoteFail(p peer.ID, body []byte) {
	f, err := proto.DecodeFail(body)
	if err != nil {
		f = proto.Fail{Cause: proto.CauseFailed, Rank: -1, Reason: fmt.Sprintf("malformed failure notice: %v", err)}
	}
	if f.Cause == proto.CauseAborted {
		j.mu.Lock()
		if j.err == nil {
			j.emit(Event{Kind: EventAbort, Rank: int(f.Rank), Replica: -1, Code: int(f.Code), Peer: p})
		}
		j.mu.Unlock()
	}
	log.Infof("job %s: failure reported by agent %s", j.spec.ID, p.ShortString())
	j.fail(&Failure{Cause: f.Cause, Rank: int(f.Rank), Code: int(f.Code), Reason: f.Reason})
}

// remoteEnded records that a remote agent ended the job cleanly: its ranks
// all finalized, so later messages to them are dropped and its silence is
// not a failure.
func (j *Job) remoteEnded(p peer.ID) {
	j.mu.Lock()
	j.ended[p] = true
	l := j.links[p]
	j.mu.Unlock()
	if l != nil {
		l.markGone()
	}
}

package router

import (
	"errors"
	"fmt"
	"sync"

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
	// Its streams end here, so that if it lives it learns it was counted
	// lost: its link opens again and is refused as fenced.
	for in := range j.inbound {
		if in.peer == p {
			_ = in.s.Reset()
		}
	}
	if l := j.links[p]; l != nil {
		l.cut(fmt.Errorf("agent %s counted lost: %w", p.ShortString(), err))
	}
	j.tellLostLocked(p)
	if !j.unfinishedLocked() {
		j.mu.Unlock()
		j.hostGone(p)
		return
	}
	orphans := orphaned(j.hosts, j.lost, j.lostCopy)
	if len(orphans) == 0 {
		j.takeoversLocked()
	}
	j.mu.Unlock()
	j.hostGone(p)
	log.Infof("job %s: agent %s lost: %v", j.spec.ID, p.ShortString(), err)
	if len(orphans) > 0 {
		j.fail(&Failure{Cause: proto.CauseAgentLost, Rank: orphans[0], Peer: p,
			Reason: fmt.Sprintf("agent %s %s: ranks %v have no copy left", p.ShortString(), lossWords(err), orphans)})
	}
}

// errCountedLost is why an agent is lost that another agent of the job
// counted lost and told of.
var errCountedLost = errors.New("was counted lost by agent")

// lossWords says in words why an agent was counted lost, for the ranks'
// error and the user; the transport's own error (a stream reset, a dial
// error) stays in the log.
func lossWords(err error) string {
	switch {
	case errors.Is(err, errMismatch):
		return "broke the job's link protocol"
	case errors.Is(err, errGone):
		return "left the job"
	case errors.Is(err, errCountedLost):
		return err.Error()
	default:
		return "was unreachable for longer than the heartbeat timeout"
	}
}

// tellLostLocked tells every other agent of the job that p is lost, so
// that all count it lost even when only this one lost sight of it; j.mu is
// held.
func (j *Job) tellLostLocked(p peer.ID) {
	if j.removed {
		return
	}
	f := proto.EncodeAgentLost(string(p))
	for _, h := range j.remote {
		if h == p || j.lost[h] || j.ended[h] {
			continue
		}
		l := j.linkLocked(h)
		j.wg.Add(1)
		go func() { defer j.wg.Done(); l.control(f) }()
	}
}

// reportedLost handles another agent's word that agent id is lost: it is
// lost here too, and if it is this agent, this agent has left the job.
func (j *Job) reportedLost(from peer.ID, body []byte) error {
	id, err := proto.DecodeAgentLost(body)
	if err != nil {
		return err
	}
	p := peer.ID(id)
	switch {
	case p == j.self:
		j.fenced(from)
	case replicaOnAny(j.hosts, p):
		j.peerLost(p, fmt.Errorf("%w %s", errCountedLost, from.ShortString()))
	}
	return nil
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
	j.hostGone(p) // its copies finalized: nothing more reaches them
}

// Leave takes this agent out of the job before it stops (a drain). The
// job's other agents are told it is lost, as if they had counted it lost
// themselves, so that the other copies of its ranks take over at once
// instead of after the heartbeat timeout; then the job fails here (local
// ranks are told) without failing there. Leave returns once every other
// agent was told, or could not be within the link's open timeout.
func (j *Job) Leave(why string) {
	j.mu.Lock()
	if j.removed || j.err != nil {
		j.mu.Unlock()
		return
	}
	f := proto.EncodeAgentLost(string(j.self))
	var told sync.WaitGroup
	for _, h := range j.remote {
		if j.lost[h] || j.ended[h] {
			continue
		}
		l := j.linkLocked(h)
		told.Add(1)
		j.wg.Add(1)
		go func() {
			defer j.wg.Done()
			defer told.Done()
			l.control(f)
		}()
	}
	j.mu.Unlock()
	told.Wait()
	j.fail(&Failure{Cause: proto.CauseAgentLost, Rank: -1, gone: true, Reason: "this agent left the job: " + why})
}

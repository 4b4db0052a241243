package router

import (
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
)

// EventKind says what an Event reports.
type EventKind int

// Kinds of events. Each happens at most once per local copy (Init,
// Finalized, RankLost, and Abort of a local rank), once per remote agent
// (PeerLost), and once per job (Failed, and Abort relayed from a remote
// agent), so the events channel is sized never to drop any.
const (
	EventInit      EventKind = iota + 1 // a local copy called Init (phase 1)
	EventFinalized                      // a local copy called Finalize
	EventAbort                          // a rank called Abort (Rank, Code; Peer set when it ran elsewhere)
	EventRankLost                       // a local copy's connection ended without Finalize (Err)
	EventPeerLost                       // a remote agent of the job broke its stream or went silent (Peer, Err)
	EventFailed                         // the job failed here (Err is a *Failure); local ranks were told
)

func (k EventKind) String() string {
	names := map[EventKind]string{EventInit: "init", EventFinalized: "finalized", EventAbort: "abort",
		EventRankLost: "rank lost", EventPeerLost: "peer lost", EventFailed: "failed"}
	if s, ok := names[k]; ok {
		return s
	}
	return fmt.Sprintf("event(%d)", int(k))
}

// Event is something the agent may act on: report, kill the other processes,
// retry.
type Event struct {
	Kind    EventKind
	Rank    int // -1 when not about a rank
	Replica int
	Code    int     // Abort code
	Peer    peer.ID // the remote agent concerned, if any
	Err     error
}

// ErrFailed is matched by every *Failure: errors.Is(err, ErrFailed).
var ErrFailed = errors.New("router: job failed")

// Failure says why a job failed. It is what local ranks are told (as a Fail
// frame) and what is sent to the job's other agents.
type Failure struct {
	Cause  uint8 // proto.Cause*: failed, aborted, rank lost, agent lost
	Rank   int   // the rank concerned, or -1
	Code   int   // Abort code
	Reason string
	// Peer is the agent whose loss failed the job (CauseAgentLost, when
	// this agent counted it lost itself); it is not sent on the wire.
	Peer peer.ID

	// gone marks the failure of an agent that left the job because the
	// others counted it lost (fenced): it is not told to them, who carry
	// on, and a later link open hears that this agent is gone.
	gone bool
}

func (f *Failure) Error() string {
	causes := map[uint8]string{proto.CauseAborted: "aborted", proto.CauseRankLost: "rank lost",
		proto.CauseAgentLost: "agent lost"}
	c, ok := causes[f.Cause]
	if !ok {
		c = "failed"
	}
	s := "router: job " + c
	if f.Rank >= 0 {
		s += fmt.Sprintf(" (rank %d)", f.Rank)
	}
	return s + ": " + f.Reason
}

// Left reports whether the failure is this agent leaving a replicated job
// whose other agents carry on without its copies (they counted it lost,
// or it drained): its copies are lost copies, not the job's failure.
func (f *Failure) Left() bool { return f.gone }

// Is makes errors.Is(f, ErrFailed) true.
func (f *Failure) Is(target error) bool { return target == ErrFailed }

func (f *Failure) frame() proto.Frame {
	return proto.Fail{Cause: f.Cause, Rank: int32(f.Rank), Code: int32(f.Code), Reason: f.Reason}.Encode()
}

package lifecycle

import (
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// Input is one thing that happened to the job, as the machine is told it:
// when, what the agent's overlay knew then, when its hosts were last
// heard from, and the event itself.
type Input struct {
	Now time.Time
	// Known is the agent's overlay view when the input came, given while
	// the machine reserves (Machine.Reserving) on an agent that has one
	// (Env.KnowsPeers).
	Known []job.PeerRTT
	// Heard is when bytes of each current host last arrived, by lease,
	// given on a Tick while the machine watches a run (Machine.Watching).
	Heard map[string]time.Time
	Event Event
}

// Event is what happened: one of the types below.
type Event interface{ event() }

// Begin starts the machine: it floods for a new or resumed job, and asks
// the hosts of a job re-attached after its agent restarted whether they
// still run it.
type Begin struct{}

// Tick says time passed: the machine acts on the timers that are due
// (Machine.Deadline says when the next one is).
type Tick struct{}

// Flooded is a Flood effect done: radius went out, or Err says why not.
type Flooded struct {
	Radius int
	Err    error
}

// DirectFailed is a Direct effect that did not go out.
type DirectFailed struct{ Err error }

// Arrived is an offer that reached the submitter and whose sender is
// being measured: its sender has answered the flood. Exactly one Offer or
// OfferDropped with the same token follows.
type Arrived struct {
	Token uint64
	From  peer.ID
}

// Offer is a worker's offer, measured. It is answered by an AnswerOffer
// effect with the same token.
type Offer struct {
	Token uint64
	From  peer.ID
	Msg   proto.OfferMsg
	RTT   time.Duration
	// Addrs are where the submitter reaches the worker; Relayed is set
	// when it reaches it only through a relay.
	Addrs   []multiaddr.Multiaddr
	Relayed bool
}

// OfferDropped is an offer that arrived but will not be delivered (the
// agent is stopping).
type OfferDropped struct {
	Token uint64
	From  peer.ID
}

// Decline is a worker's decline of the job's advert.
type Decline struct {
	From peer.ID
	Msg  proto.DeclineMsg
}

// LeaseReply is the end of a Lease effect: the worker's reply, or Err when
// it was not delivered (or, for a give-back, not after every retry).
type LeaseReply struct {
	Host  peer.ID
	Op    proto.LeaseOp
	Lease string
	Reply proto.LeaseReply
	Err   error
}

// Report is one numbered report (or an unnumbered one) from a host's
// current report stream.
type Report struct {
	From   peer.ID
	Lease  string
	Report proto.Report
}

// StreamEnded is the end of a host's current report stream before its
// RepDone, in order after the reports it brought.
type StreamEnded struct {
	From  peer.ID
	Lease string
	Why   string
}

// CheckpointFiles are checkpoint files the submitter's writer finished:
// kept, or not (Err). Settled marks the answer to a SettleCheckpoints.
type CheckpointFiles struct {
	Files   []KeptFile
	Settled bool
}

// KeptFile is one rank's file of checkpoint Num, finished by the writer.
type KeptFile struct {
	Num  uint64
	File job.CheckpointFile // rank, size, hash and copies (the rank alone when Err)
	At   time.Time          // when its first chunk came
	Err  error
}

// Cancel is the user's cancel.
type Cancel struct{ Why string }

// Stop asks for a stop at the job's next checkpoint: the user's (`zorilla
// stop --checkpoint`), or a host's preemption (By set). It is answered by
// an AnswerStop effect with the same token.
type Stop struct {
	Token   uint64
	Timeout time.Duration
	By      *PreemptBy
}

// PreemptBy names the host that asks for a swap-out, the job's lease
// there, and the reason the record will give.
type PreemptBy struct {
	Host  peer.ID
	Lease string
	Why   string
}

// Shutdown says the agent is stopping: a running job is left to its hosts
// (re-attached when the agent starts again), any other is cancelled.
type Shutdown struct{}

func (Begin) event()           {}
func (Tick) event()            {}
func (Flooded) event()         {}
func (DirectFailed) event()    {}
func (Arrived) event()         {}
func (Offer) event()           {}
func (OfferDropped) event()    {}
func (Decline) event()         {}
func (LeaseReply) event()      {}
func (Report) event()          {}
func (StreamEnded) event()     {}
func (CheckpointFiles) event() {}
func (Cancel) event()          {}
func (Stop) event()            {}
func (Shutdown) event()        {}
func (GiveWay) event()         {}

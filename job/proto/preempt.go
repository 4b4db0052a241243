package proto

import (
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/zorilla-p2p/zorilla/internal/wire"
)

// PreemptProtocol: worker -> submitter, one PreemptMsg answered by a
// PreemptReply once the job is stopped (or why not). A host that gives
// itself to a job of higher priority asks the submitter of each job it
// swaps out to stop that job with a checkpoint. A host where a job waits
// for slots a malleable job holds asks it instead to give way
// (PreemptMsg.GiveWay): to shrink at its next quiet checkpoint, giving
// back this host; the answer comes at once.
const PreemptProtocol protocol.ID = "/zorilla/preempt/1.0.0"

// MaxPreemptSize bounds a PreemptMsg and a PreemptReply.
const MaxPreemptSize = 2 << 10

// PreemptStopTimeout is how long a submitter waits for a preempted job's
// next checkpoint before it refuses the swap (the job then runs on); the
// asking host waits that long and a margin for the answer.
const PreemptStopTimeout = 2 * time.Minute

// MaxLeaseKey bounds a lease key quoted by a peer (they are 22 characters).
const MaxLeaseKey = 64

// PreemptMsg asks a job's submitter to swap the job out.
type PreemptMsg struct {
	Job      JobID  `json:"job"`      // the job to swap out
	Lease    string `json:"lease"`    // its lease on the asking host
	For      JobID  `json:"for"`      // the job taking its place on the host
	Priority int    `json:"priority"` // that job's priority as the host honours it
	// With are the other jobs it yields to (the rest of the set let in
	// at that turn, then the jobs that waited with it): the resumed
	// job's adverts name them all (Need.YieldWith).
	With []JobID `json:"with,omitempty"`
	// GiveWay asks a malleable job to shrink rather than stop, for job
	// For of N processes (Min, its least size, when it is malleable).
	GiveWay bool `json:"give_way,omitempty"`
	N       int  `json:"n,omitempty"`
	Min     int  `json:"min,omitempty"`
}

// PreemptReply says whether the job was stopped with a checkpoint, or,
// asked to give way, whether it will.
type PreemptReply struct {
	Stopped   bool   `json:"stopped"`
	GivingWay bool   `json:"giving_way,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// Validate checks a PreemptMsg from a peer.
func (m PreemptMsg) Validate() error {
	if _, err := ParseJobID(string(m.Job)); err != nil {
		return fmt.Errorf("preempt: job: %w", err)
	}
	if _, err := ParseJobID(string(m.For)); err != nil {
		return fmt.Errorf("preempt: for: %w", err)
	}
	if m.Lease == "" || len(m.Lease) > MaxLeaseKey {
		return fmt.Errorf("preempt: lease: 1..%d characters, got %d", MaxLeaseKey, len(m.Lease))
	}
	if err := checkYieldSet("preempt: with", true, m.With); err != nil {
		return err
	}
	if m.GiveWay && (m.N < 1 || m.N > MaxProcs || m.Min < 0 || m.Min > m.N) {
		return fmt.Errorf("preempt: give way for a job of n=%d min=%d", m.N, m.Min)
	}
	return CheckPriority(m.Priority)
}

// DecodePreemptMsg reads a PreemptMsg strictly and checks it.
func DecodePreemptMsg(b []byte) (PreemptMsg, error) {
	var m PreemptMsg
	if len(b) > MaxPreemptSize {
		return m, fmt.Errorf("preempt: %d bytes exceed %d", len(b), MaxPreemptSize)
	}
	if err := wire.DecodeJSON(b, &m); err != nil {
		return m, fmt.Errorf("preempt: %w", err)
	}
	return m, m.Validate()
}

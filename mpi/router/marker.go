package router

import (
	"fmt"

	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
)

// Checkpoints. The Chandy-Lamport markers of a checkpoint are messages of
// their own context (proto.CtxCheckpoint) that the router carries like any
// other: in order in each (source, destination) channel, which is all the
// algorithm asks of the channels. What the router adds is the end of a
// rank's part: the Saved frame a rank sends once its file is written, which
// it hands to the agent (JobSpec.OnSaved) to hash-check, copy and record.

// Saved reports that a local rank wrote its file of checkpoint Num: Size
// bytes with sha256 Sum; Quiet when its channels were empty at the cut.
type Saved struct {
	Rank, Replica int
	Num           uint64
	Size          int64
	Sum           [32]byte
	Quiet         bool
}

// saved handles a Saved frame of a local copy. A replicated copy never
// checkpoints (its copies already survive hosts): one that says it did
// breaks the protocol.
func (j *Job) saved(pr *proc, body []byte) error {
	m, err := proto.DecodeSaved(body)
	if err != nil {
		return err
	}
	if j.spec.Replicas > 1 {
		return fmt.Errorf("rank %d copy %d saved a checkpoint in a replicated job", pr.Rank, pr.Replica)
	}
	if m.Size > 1<<62 {
		return fmt.Errorf("rank %d: checkpoint %d of %d bytes", pr.Rank, m.Num, m.Size)
	}
	if j.spec.OnSaved != nil {
		j.spec.OnSaved(Saved{Rank: pr.Rank, Replica: pr.Replica, Num: m.Num, Size: int64(m.Size), Sum: m.Sum, Quiet: m.Quiet})
	}
	return nil
}

// CheckpointNow asks the job's rank 0, when it runs here, to take a
// checkpoint at its next Checkpoint call whatever --checkpoint-every says
// (a CHECKPOINTNOW frame). It reports whether rank 0 runs here and was
// told; rank 0 decides for every rank, so no other rank needs the frame.
func (j *Job) CheckpointNow() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.removed || j.err != nil || len(j.local) == 0 {
		return false
	}
	pr := j.local[0]
	if pr == nil || pr.state != procRunning {
		return false
	}
	pr.q.control(proto.CheckpointNow())
	return true
}

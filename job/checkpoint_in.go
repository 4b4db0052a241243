package job

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// The submitter's intake of checkpoint files: RepCheckpoint chunks checked
// against the session's state, written to a temporary file and hashed as
// they come by the session's writer (checkpoint_write.go), checked whole
// against what the rank announced, kept in the blob store, then added to
// the manifest (checkpoint.go) by the session.

// checkpointChunk takes one chunk of a rank's checkpoint file: checked
// here against the session's state, then written by the session's
// ckptWriter. A file whose bytes do not hash to what its rank announced is
// dropped, and so is its checkpoint (it can never be complete).
func (ss *session) checkpointChunk(from peer.ID, e proto.Report) {
	if err := ss.checkChunk(from, e); err != nil {
		ss.notKept(e.Rank, err)
		if e.Ckpt != nil {
			ss.dropIn(e.Rank, e.Ckpt.Num)
		}
		return
	}
	if ss.ckw == nil {
		ss.ckw = newCkptWriter(ss.ctx, ss.checkpointDir(), ss.s.blobs, ss.s.ckpt, ss.id, ss.s.h.ID())
	}
	ss.ckw.send(ss.ctx, ckptOp{chunk: &ckptChunk{from: from, rank: e.Rank, part: *e.Ckpt, data: e.Data, eof: e.EOF}})
}

// checkChunk checks what the session knows of a chunk: whose it is, and
// that its checkpoint can still be complete.
func (ss *session) checkChunk(from peer.ID, e proto.Report) error {
	p := e.Ckpt
	switch {
	case p == nil || p.Num == 0:
		return errors.New("no checkpoint number")
	case e.Rank < 0 || e.Rank >= ss.sub.Desc.Nodes:
		return fmt.Errorf("rank %d of a job of %d", e.Rank, ss.sub.Desc.Nodes)
	case ss.sub.Desc.Replicas > 1:
		return errors.New("a replicated job takes no checkpoints")
	case !ss.runsRank(from, e.Rank):
		return fmt.Errorf("host %s does not run rank %d", shortPeer(from), e.Rank)
	case p.Size < 0 || p.Size > proto.MaxCheckpointFile:
		return fmt.Errorf("%d bytes, at most %d kept", p.Size, int64(proto.MaxCheckpointFile))
	}
	if last, ok := ss.rec.LastComplete(); ok && p.Num <= last.Num {
		return fmt.Errorf("checkpoint %d is older than complete checkpoint %d", p.Num, last.Num)
	}
	return nil
}

func (ss *session) notKept(rank int, err error) {
	ss.feed.append(Update{Kind: "output", Rank: -1, Stream: "stderr",
		Line: fmt.Sprintf("checkpoint file of rank %d not kept: %v", rank, err)})
}

// takeKept adds to the record the files the writer kept (saved at once),
// and says why others were not.
func (ss *session) takeKept(done []ckptResult) {
	for _, r := range done {
		if r.err != nil {
			ss.notKept(r.file.Rank, r.err)
			continue
		}
		ss.rec.Checkpoints = addFile(ss.rec.Checkpoints, r.num, ss.rec.Attempts, ss.sub.Desc.Nodes, r.file, r.at, time.Now())
		if c, ok := ss.rec.LastComplete(); ok && c.Num == r.num {
			ss.prune()
			log.Infow("checkpoint complete", "job", ss.id, "num", c.Num, "bytes", c.Bytes())
		}
		ss.save()
	}
}

// checkpointsReady is where the writer says it finished files: nil while
// the session has no writer.
func (ss *session) checkpointsReady() <-chan struct{} {
	if ss.ckw == nil {
		return nil
	}
	return ss.ckw.ready
}

// settleCheckpoints finishes the files whose last chunk was taken, drops
// the others still arriving, and adds the kept ones to the record: the
// run ended, what it sent is all there will be.
func (ss *session) settleCheckpoints() {
	if ss.ckw != nil {
		ss.takeKept(ss.ckw.settle(ss.ctx))
	}
}

// copiesOf lists where a file is: its host, the agents it says hold a
// copy (at most two), and this submitter.
func copiesOf(in *ckptIn, self peer.ID) []peer.ID {
	out := []peer.ID{in.from, self}
	for _, p := range in.part.Copies[:min(len(in.part.Copies), 2)] {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// runsRank reports whether host p runs rank in the current attempt.
func (ss *session) runsRank(p peer.ID, rank int) bool {
	h := ss.hosts[p]
	return h != nil && slices.ContainsFunc(h.plan.Procs, func(q proto.Proc) bool { return q.Rank == rank })
}

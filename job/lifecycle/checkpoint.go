package lifecycle

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// Checkpoints, the submitter's side. A job's ranks take coordinated
// checkpoints through the mpi library (Comm.Checkpoint); each host sends
// each of its ranks' files back on the report stream, in chunks
// (RepCheckpoint), with the size and sha256 the rank announced. The
// machine checks each chunk against what it knows (the rank, the host,
// the number against the last complete checkpoint) and hands it to the
// executor's writer (WriteChunk), which checks the file whole and keeps
// it; the files it finished come back (CheckpointFiles) and go in the
// job's manifest (Record.Checkpoints). A checkpoint is complete once every
// rank's file is in; only then can a run restart from it, and the older
// ones are removed. A job with r = 1 that loses a host starts again from
// its last complete checkpoint: each new host stages its ranks' files like
// inputs (Commit.Restore).

// checkpointChunk takes one chunk of a rank's checkpoint file. A file
// whose chunks do not fit what the machine knows is dropped, and so is its
// checkpoint (it can never be complete).
func (m *Machine) checkpointChunk(from peer.ID, e proto.Report) {
	if err := m.checkChunk(from, e); err != nil {
		m.notKept(e.Rank, err)
		if e.Ckpt != nil {
			m.emit(DropChunks{Rank: e.Rank, Num: e.Ckpt.Num})
		}
		return
	}
	m.emit(WriteChunk{From: from, Rank: e.Rank, Part: *e.Ckpt, Data: e.Data, EOF: e.EOF})
}

// checkChunk checks what the machine knows of a chunk: whose it is, and
// that its checkpoint can still be complete.
func (m *Machine) checkChunk(from peer.ID, e proto.Report) error {
	p, d := e.Ckpt, m.rec.Desc
	switch {
	case p == nil || p.Num == 0:
		return errors.New("no checkpoint number")
	case e.Rank < 0 || e.Rank >= m.plan.N:
		return fmt.Errorf("rank %d of a job of %d", e.Rank, m.plan.N)
	case d.Replicas > 1:
		return errors.New("a replicated job takes no checkpoints")
	case !m.runsRank(from, e.Rank):
		return fmt.Errorf("host %s does not run rank %d", job.ShortPeer(from), e.Rank)
	case p.Size < 0 || p.Size > proto.MaxCheckpointFile:
		return fmt.Errorf("%d bytes, at most %d kept", p.Size, int64(proto.MaxCheckpointFile))
	}
	if last, ok := m.rec.LastComplete(); ok && p.Num <= last.Num {
		return fmt.Errorf("checkpoint %d is older than complete checkpoint %d", p.Num, last.Num)
	}
	return nil
}

// runsRank reports whether host p runs rank in the current attempt.
func (m *Machine) runsRank(p peer.ID, rank int) bool {
	h := m.run.hosts[p]
	return h != nil && slices.ContainsFunc(h.plan.Procs, func(q proto.Proc) bool { return q.Rank == rank })
}

func (m *Machine) notKept(rank int, err error) {
	m.notice(fmt.Sprintf("checkpoint file of rank %d not kept: %v", rank, err))
}

// onCheckpointFiles adds to the record the files the writer kept, says
// why others were not, and, when the writer settled at a run's end, goes
// on with that end.
func (m *Machine) onCheckpointFiles(e CheckpointFiles) {
	m.takeKept(e.Files)
	switch {
	case e.Settled && m.phase == settling:
		m.settled()
	case m.phase == watching:
		m.afterWatchEvent(nil) // the checkpoint a stop waits for may be complete
	}
}

func (m *Machine) takeKept(files []KeptFile) {
	for _, f := range files {
		if f.Err != nil {
			m.notKept(f.File.Rank, f.Err)
			continue
		}
		m.rec.Checkpoints = job.AddCheckpointFile(m.rec.Checkpoints, f.Num, m.rec.Attempts, m.plan.N, f.File, f.At, m.now)
		if c, ok := m.rec.LastComplete(); ok && c.Num == f.Num {
			m.prune()
			log.Infow("checkpoint complete", "job", m.rec.ID, "num", c.Num, "bytes", c.Bytes())
		}
		m.emit(Save{})
	}
}

// prune drops the checkpoints older than the newest complete one, and
// their files no kept checkpoint shares, and grants the kept ones' files.
func (m *Machine) prune() {
	kept, dropped := job.KeepCheckpoints(m.rec.Checkpoints)
	m.rec.Checkpoints = kept
	m.dropCopies(dropped)
	m.removeFiles(dropped, m.grantCheckpoints())
}

// removeFiles ends the job's hold on the files of cps, except the job's
// own files and those in keep.
func (m *Machine) removeFiles(cps []job.Checkpoint, keep []string) {
	done := map[string]bool{}
	for _, h := range keep {
		done[h] = true
	}
	var gone []string
	for _, c := range cps {
		for _, f := range c.Files {
			if done[f.Hash] || m.isJobFile(f.Hash) {
				continue
			}
			done[f.Hash] = true
			gone = append(gone, f.Hash)
		}
	}
	if len(gone) > 0 {
		m.emit(ReleaseFiles{Hashes: gone})
	}
}

// grantCheckpoints lets the job's hosts fetch the files of the
// checkpoints in the manifest, and returns their hashes.
func (m *Machine) grantCheckpoints() []string {
	var hashes []string
	for _, c := range m.rec.Checkpoints {
		for _, f := range c.Files {
			hashes = append(hashes, f.Hash)
		}
	}
	m.emit(GrantFiles{Hashes: hashes})
	return hashes
}

// dropCopies tells the holders of the files in cps, other than this
// agent, to drop them.
func (m *Machine) dropCopies(cps []job.Checkpoint) {
	byHolder := map[peer.ID][]string{}
	for _, c := range cps {
		for _, f := range c.Files {
			for _, p := range f.Copies {
				if p != m.env.Self {
					byHolder[p] = append(byHolder[p], f.Hash)
				}
			}
		}
	}
	if len(byHolder) > 0 {
		m.emit(DropCopies{ByHolder: byHolder})
	}
}

// isJobFile reports whether h is the program's or an input's.
func (m *Machine) isJobFile(h string) bool {
	if m.rec.Program != nil && m.rec.Program.Hash == h {
		return true
	}
	return slices.ContainsFunc(m.rec.Inputs, func(f proto.FileRef) bool { return f.Hash == h })
}

// dropCheckpoints removes the job's checkpoint files: it ended. The
// manifest stays in the record, for status.
func (m *Machine) dropCheckpoints() {
	m.emit(GrantFiles{})
	m.dropCopies(m.rec.Checkpoints)
	m.removeFiles(m.rec.Checkpoints, nil)
	m.emit(RemoveCheckpointDir{})
}

// dropIncomplete forgets the checkpoints a run that ended left
// incomplete: the next run takes those numbers again, for other cuts.
func (m *Machine) dropIncomplete() {
	var kept, gone []job.Checkpoint
	for _, c := range m.rec.Checkpoints {
		if c.Complete {
			kept = append(kept, c)
		} else {
			gone = append(gone, c)
		}
	}
	if len(gone) == 0 {
		return
	}
	m.rec.Checkpoints = kept
	m.dropCopies(gone)
	m.removeFiles(gone, m.grantCheckpoints())
}

// resumeFrom is the checkpoint the next run restarts from (0: scratch).
func (m *Machine) resumeFrom() uint64 {
	if c, ok := m.rec.LastComplete(); ok && m.rec.Desc.Replicas == 1 {
		return c.Num
	}
	return 0
}

// restoreFor are the checkpoint files of procs for a run of plan, and
// for a run at another size than the checkpoint's, that size (every old
// rank's file is then staged on every host).
func (m *Machine) restoreFor(plan job.Plan, procs []proto.Proc) ([]proto.Restore, int) {
	c, ok := m.rec.LastComplete()
	if !ok || m.rec.Desc.Replicas != 1 {
		return nil, 0
	}
	if c.Size > 0 && c.Size != plan.N {
		return job.RestoresAll(c, m.env.Self), c.Size
	}
	return job.Restores(c, procs, m.env.Self), 0
}

// restartWords says where the next run starts from.
func (m *Machine) restartWords() string {
	c, ok := m.rec.LastComplete()
	if !ok || m.rec.Desc.Replicas != 1 {
		return "from scratch (no complete checkpoint)"
	}
	return fmt.Sprintf("from checkpoint %d (taken %s, %d bytes)", c.Num, c.Taken.Format(time.TimeOnly), c.Bytes())
}

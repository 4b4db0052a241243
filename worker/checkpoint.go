package worker

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/mpi"
	"github.com/zorilla-p2p/zorilla/mpi/router"
)

// Checkpoints, the host's side. Each rank of an r = 1 job gets
// its working folder as checkpoint folder (ZORILLA_CHECKPOINT_DIR), and the
// file of the checkpoint it restarts from, staged like an input and
// verified by hash, in ZORILLA_RESTORE. When a rank says it wrote its part
// of a checkpoint (the router's OnSaved), the host sends the file to the
// submitter on the report stream (RepCheckpoint chunks; the submitter
// checks the sha256 the rank announced), keeps it until the rank's next
// one is sent, and removes it with the job folder. A file over the owner's
// staging bounds (Config.MaxStage per file, Abuse.MaxJobStage for the job)
// is neither kept nor sent: it could never be staged back.

// ckptQueue bounds the files waiting to be sent; beyond it a checkpoint is
// dropped (it never becomes complete, so it is never used).
const ckptQueue = 64

// ckptSender sends a job's checkpoint files, one at a time, in order.
type ckptSender struct {
	q    chan router.Saved
	done chan struct{}

	mu     sync.Mutex // guards closed, and q against a send after close
	closed bool
	ending atomic.Bool // the processes ended: files not sent yet no longer matter
}

func newCkptSender() *ckptSender {
	return &ckptSender{q: make(chan router.Saved, ckptQueue), done: make(chan struct{})}
}

// saved is the router's OnSaved: it must not block.
func (r *running) saved(sv router.Saved) {
	if !r.pre.saved.Swap(true) {
		// Its first checkpoint here makes the job a candidate for a swap
		// (canSwap): a job waiting for it may be past its slice already.
		r.svc.afterRelease()
	}
	r.ck.mu.Lock()
	defer r.ck.mu.Unlock()
	if r.ck.closed {
		return // the job's processes ended: too late to matter
	}
	select {
	case r.ck.q <- sv:
	default:
		log.Warnw("checkpoint file not sent: too many waiting", "job", r.id, "rank", sv.Rank, "num", sv.Num)
	}
}

// sendCheckpoints sends the files the ranks announce until finish.
func (r *running) sendCheckpoints(k *sink) {
	defer close(r.ck.done)
	sent := map[int]uint64{} // rank -> last checkpoint sent
	for sv := range r.ck.q {
		if r.ctx.Err() != nil || r.ck.ending.Load() {
			continue
		}
		p := proto.Proc{Rank: sv.Rank, Replica: sv.Replica}
		path := filepath.Join(r.rankDir(p), mpi.CheckpointFile(sv.Num, sv.Rank))
		if err := r.sendCheckpoint(k, sv, path, sent); err != nil {
			_ = os.Remove(path)
			if r.ck.ending.Load() {
				continue
			}
			k.send(r.ctx, proto.Report{Kind: proto.RepOutput, Stream: "stderr", Rank: -1,
				Data: []byte(fmt.Sprintf("zorilla: checkpoint %d of rank %d not kept: %v", sv.Num, sv.Rank, err))})
			continue
		}
		if last, ok := sent[sv.Rank]; ok && last < sv.Num {
			_ = os.Remove(filepath.Join(r.rankDir(p), mpi.CheckpointFile(last, sv.Rank)))
		}
		sent[sv.Rank] = sv.Num
	}
}

// finishCheckpoints ends the sending once the processes ended: a
// checkpoint of a job whose processes all ended is of no use (one that
// ended done needs none; one that failed here is restarted from the last
// complete checkpoint), so the job's end does not wait for files queued.
func (r *running) finishCheckpoints() {
	r.ck.ending.Store(true)
	r.ck.mu.Lock()
	if !r.ck.closed {
		r.ck.closed = true
		close(r.ck.q)
	}
	r.ck.mu.Unlock()
	<-r.ck.done
}

// sendCheckpoint sends one rank's file as RepCheckpoint chunks.
func (r *running) sendCheckpoint(k *sink, sv router.Saved, path string, sent map[int]uint64) error {
	s := r.svc
	var kept int64 // this job's newest files, as they would be staged back
	for rank := range sent {
		if fi, err := os.Stat(filepath.Join(r.rankDir(proto.Proc{Rank: rank}), mpi.CheckpointFile(sent[rank], rank))); err == nil && rank != sv.Rank {
			kept += fi.Size()
		}
	}
	if sv.Size > s.cfg.MaxStage || kept+sv.Size > s.cfg.Abuse.MaxJobStage {
		return fmt.Errorf("%d bytes: this agent keeps at most %d per file and %d per job", sv.Size, s.cfg.MaxStage, s.cfg.Abuse.MaxJobStage)
	}
	f, err := openInJob(r.dir, path)
	if err != nil {
		return err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || fi.Size() != sv.Size {
		return errors.New("the file is not the one the rank announced")
	}
	part := &proto.CheckpointPart{Num: sv.Num, Size: sv.Size, Sum: hex.EncodeToString(sv.Sum[:]), Quiet: sv.Quiet}
	if holder := r.copyHolder(); holder != "" {
		if err := r.putCopyOn(holder, path, sv); err != nil {
			log.Infow("checkpoint file not copied to another agent", "job", r.id, "rank", sv.Rank, "num", sv.Num, "holder", holder, "err", err)
		} else {
			part.Copies = []peer.ID{holder}
		}
	}
	buf := make([]byte, proto.FileChunkSize)
	t0 := time.Now()
	for {
		n, err := io.ReadFull(f, buf)
		eof := err == io.EOF || err == io.ErrUnexpectedEOF
		if err != nil && !eof {
			return err
		}
		if r.ck.ending.Load() {
			return errors.New("the job's processes ended")
		}
		if !k.send(r.ctx, proto.Report{Kind: proto.RepCheckpoint, Rank: sv.Rank, Ckpt: part,
			Data: append([]byte(nil), buf[:n]...), EOF: eof}) {
			return errors.New("submitter lost")
		}
		if eof {
			log.Debugw("checkpoint file sent", "job", r.id, "rank", sv.Rank, "num", sv.Num, "bytes", sv.Size, "took", time.Since(t0))
			return nil
		}
	}
}

// checkpointEnv is the checkpoint environment of copy p.
func (r *running) checkpointEnv(p proto.Proc) []string {
	if r.c.R != 1 {
		return nil
	}
	env := []string{mpi.EnvCheckpointDir + "=" + r.rankDir(p)}
	if r.c.CheckpointEvery > 0 {
		env = append(env, mpi.EnvCheckpointEvery+"="+r.c.CheckpointEvery.String())
	}
	if r.c.RestoreSize > 0 && len(r.c.Restore) > 0 {
		// Restarted at another size: every old rank's file is in the job
		// folder, for any rank here to read.
		return append(env, mpi.EnvRestoreDir+"="+r.dir, fmt.Sprintf("%s=%d", mpi.EnvRestoreNum, r.c.Restore[0].Num),
			fmt.Sprintf("%s=%d", mpi.EnvRestoreSize, r.c.RestoreSize))
	}
	for _, rs := range r.c.Restore {
		if rs.Rank == p.Rank {
			env = append(env, mpi.EnvRestore+"="+filepath.Join(r.dir, rs.File.Name))
		}
	}
	return env
}

// checkRestore refuses restore files that are not one per rank of the
// commit's processes (or, for a restart at another size, one per rank of
// the old run, all of one checkpoint), each of a plain name.
func checkRestore(c proto.Commit) error {
	if len(c.Restore) > 0 && c.R != 1 {
		return errors.New("checkpoint files for a replicated job")
	}
	if c.RestoreSize < 0 || c.RestoreSize > proto.MaxProcs || c.RestoreSize > 0 && len(c.Restore) != c.RestoreSize {
		return fmt.Errorf("%d checkpoint files for a restart from a run of %d ranks", len(c.Restore), c.RestoreSize)
	}
	seen := map[int]bool{}
	for _, rs := range c.Restore {
		ours := slices.ContainsFunc(c.Procs, func(p proto.Proc) bool { return p.Rank == rs.Rank })
		if c.RestoreSize > 0 {
			ours = rs.Rank >= 0 && rs.Rank < c.RestoreSize && rs.Num == c.Restore[0].Num
		}
		if rs.Num == 0 || !ours || seen[rs.Rank] {
			return fmt.Errorf("checkpoint file of rank %d (checkpoint %d) is not one of this host's", rs.Rank, rs.Num)
		}
		seen[rs.Rank] = true
		if err := plainName(rs.File.Name); err != nil {
			return err
		}
	}
	if c.CheckpointEvery < 0 {
		return fmt.Errorf("checkpoint interval %v", c.CheckpointEvery)
	}
	return nil
}

// checkpointNow asks rank 0, which runs here, to take a checkpoint at its
// next Checkpoint call (`zorilla stop --checkpoint`).
func (r *running) checkpointNow() error {
	m := r.mpiJob()
	if m == nil {
		return fmt.Errorf("checkpoint %s: no MPI job here (not started, or --pmi)", r.id)
	}
	if !m.CheckpointNow() {
		return fmt.Errorf("checkpoint %s: rank 0 is not running here", r.id)
	}
	return nil
}

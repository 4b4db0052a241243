package job

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// Checkpoints (issue 16), the submitter's side. A job's ranks take
// coordinated checkpoints through the mpi library (Comm.Checkpoint); each
// host sends each of its ranks' files back on the report stream, in
// chunks (RepCheckpoint), with the size and sha256 the rank announced. The
// submitter checks the hash, keeps the file in its blob store, and records
// it in the job's manifest (Record.Checkpoints). A checkpoint is complete
// once every rank's file is in; only then can a run restart from it, and
// the older ones are removed. A job with r = 1 that loses a host starts
// again from its last complete checkpoint: each new host stages its ranks'
// files like inputs (verified by hash) and each rank finds its own in
// ZORILLA_RESTORE.

// CheckpointFile is one rank's file of a checkpoint in the manifest.
type CheckpointFile struct {
	Rank int    `json:"rank"`
	Size int64  `json:"size"`
	Hash string `json:"hash"` // sha256, hex: its name in the blob store
	// Copies are the agents known to hold the file: its host (while the
	// run lasts) and the submitting agent.
	Copies []peer.ID `json:"copies"`
}

// Checkpoint is one checkpoint in a job's manifest.
type Checkpoint struct {
	Num      uint64           `json:"num"`
	Taken    time.Time        `json:"taken"`   // when the first bytes of its files came in
	Attempt  int              `json:"attempt"` // the run that took it
	Files    []CheckpointFile `json:"files"`
	Complete bool             `json:"complete,omitempty"` // every rank's file is in
	Done     time.Time        `json:"done,omitzero"`      // when the last file came in
}

// Bytes is the size of the checkpoint's files.
func (c Checkpoint) Bytes() int64 {
	var n int64
	for _, f := range c.Files {
		n += f.Size
	}
	return n
}

// LastComplete is the newest complete checkpoint of r, if any.
func (r Record) LastComplete() (Checkpoint, bool) {
	for i := len(r.Checkpoints) - 1; i >= 0; i-- {
		if r.Checkpoints[i].Complete {
			return r.Checkpoints[i], true
		}
	}
	return Checkpoint{}, false
}

// restores are the files of checkpoint c for the ranks in procs.
func restores(c Checkpoint, procs []proto.Proc, submitter peer.ID) []proto.Restore {
	var out []proto.Restore
	for _, p := range procs {
		for _, f := range c.Files {
			if f.Rank == p.Rank {
				out = append(out, proto.Restore{Rank: p.Rank, Num: c.Num,
					File:   proto.FileRef{Name: proto.RestoreName(c.Num, p.Rank), Hash: f.Hash, Size: f.Size},
					Copies: slices.DeleteFunc(slices.Clone(f.Copies), func(q peer.ID) bool { return q == submitter })})
			}
		}
	}
	return out
}

// grants are the checkpoint files (by hash) the job's hosts may fetch from
// the submitter; the report loop adds, fetch handlers read.
type grants struct {
	mu sync.Mutex
	h  map[string]bool
}

func (g *grants) set(hashes []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.h = map[string]bool{}
	for _, h := range hashes {
		g.h[h] = true
	}
}

func (g *grants) has(h string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.h[h]
}

// addFile adds a rank's file, whose first bytes came at taken, to
// checkpoint num of cps (making it), marks it complete once it has size
// ranks' files, and returns the manifest. Pure: the table tests drive it.
func addFile(cps []Checkpoint, num uint64, attempt, size int, f CheckpointFile, taken, now time.Time) []Checkpoint {
	i := slices.IndexFunc(cps, func(c Checkpoint) bool { return c.Num == num })
	if i < 0 {
		cps = append(cps, Checkpoint{Num: num, Taken: taken, Attempt: attempt})
		slices.SortFunc(cps, func(a, b Checkpoint) int { return cmpNum(a.Num, b.Num) })
		i = slices.IndexFunc(cps, func(c Checkpoint) bool { return c.Num == num })
	}
	c := &cps[i]
	if c.Attempt != attempt { // a number the run that ended had used: its files are of another cut
		*c = Checkpoint{Num: num, Taken: taken, Attempt: attempt}
	}
	c.Files = slices.DeleteFunc(c.Files, func(g CheckpointFile) bool { return g.Rank == f.Rank })
	c.Files = append(c.Files, f)
	if taken.Before(c.Taken) {
		c.Taken = taken
	}
	slices.SortFunc(c.Files, func(a, b CheckpointFile) int { return a.Rank - b.Rank })
	c.Complete = len(c.Files) == size
	if c.Complete {
		c.Done = now
	}
	return cps
}

func cmpNum(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// keep is what the manifest keeps once a checkpoint is complete: the
// newest complete one, and any newer one still arriving. Pure.
func keep(cps []Checkpoint) (kept, dropped []Checkpoint) {
	last := -1
	for i, c := range cps {
		if c.Complete {
			last = i
		}
	}
	if last < 0 {
		return cps, nil
	}
	return append([]Checkpoint(nil), cps[last:]...), append([]Checkpoint(nil), cps[:last]...)
}

// prune drops the checkpoints older than the newest complete one, and
// their files no kept checkpoint shares, and grants the kept ones' files.
func (ss *session) prune() {
	kept, dropped := keep(ss.rec.Checkpoints)
	ss.rec.Checkpoints = kept
	ss.dropCopies(dropped)
	ss.removeFiles(dropped, ss.grantCheckpoints())
}

// removeFiles ends the job's hold on the files of cps, except the job's
// own files and those in keep; a file no other job holds leaves the blob
// store.
func (ss *session) removeFiles(cps []Checkpoint, keep []string) {
	done := map[string]bool{}
	for _, h := range keep {
		done[h] = true
	}
	for _, c := range cps {
		for _, f := range c.Files {
			if done[f.Hash] || ss.isJobFile(f.Hash) {
				continue
			}
			done[f.Hash] = true
			if h, err := blob.ParseHash(f.Hash); err == nil {
				ss.s.ckpt.release(ss.id, h)
			}
		}
	}
}

// grantCheckpoints lets the job's hosts fetch the files of the
// checkpoints in the manifest, holds them in the blob store, and returns
// their hashes.
func (ss *session) grantCheckpoints() []string {
	var hashes []string
	var held []blob.Hash
	for _, c := range ss.rec.Checkpoints {
		for _, f := range c.Files {
			hashes = append(hashes, f.Hash)
			if h, err := blob.ParseHash(f.Hash); err == nil {
				held = append(held, h)
			}
		}
	}
	ss.s.ckpt.holdKept(ss.id, held)
	ss.grants.set(hashes)
	return hashes
}

// isJobFile reports whether h is the program's or an input's.
func (ss *session) isJobFile(h string) bool {
	for _, f := range append([]proto.FileRef{ss.sub.Program}, ss.sub.Inputs...) {
		if f.Hash == h {
			return true
		}
	}
	return false
}

// dropCheckpoints removes the job's checkpoint files: it ended. The
// manifest stays in the record, for status.
func (ss *session) dropCheckpoints() {
	ss.settleCheckpoints()
	ss.grants.set(nil)
	ss.dropCopies(ss.rec.Checkpoints)
	ss.removeFiles(ss.rec.Checkpoints, nil)
	_ = os.RemoveAll(ss.checkpointDir())
}

// checkpointDir is where the job's checkpoint files arrive.
func (ss *session) checkpointDir() string {
	return filepath.Join(ss.s.store.Dir(ss.id), "checkpoints")
}

// dropIncomplete forgets the checkpoints a run that ended left incomplete,
// and the files still arriving from it: the next run takes those numbers
// again, for other cuts. The next run calls it before it starts.
func (ss *session) dropIncomplete() {
	ss.settleCheckpoints()
	var kept, gone []Checkpoint
	for _, c := range ss.rec.Checkpoints {
		if c.Complete {
			kept = append(kept, c)
		} else {
			gone = append(gone, c)
		}
	}
	if len(gone) == 0 {
		return
	}
	ss.rec.Checkpoints = kept
	ss.dropCopies(gone)
	ss.removeFiles(gone, ss.grantCheckpoints())
}

// dropIn forgets a file arriving.
func (ss *session) dropIn(rank int, num uint64) {
	if ss.ckw != nil {
		ss.ckw.send(ss.ctx, ckptOp{drop: ckKey(rank, num)})
	}
}

func ckKey(rank int, num uint64) string { return fmt.Sprintf("%d/%d", rank, num) }

// resumeFrom is the checkpoint the next run restarts from (0: scratch).
func (ss *session) resumeFrom() uint64 {
	if c, ok := ss.rec.LastComplete(); ok && ss.sub.Desc.Replicas == 1 {
		return c.Num
	}
	return 0
}

// restoreFor are the checkpoint files of procs for the next run.
func (ss *session) restoreFor(procs []proto.Proc) []proto.Restore {
	c, ok := ss.rec.LastComplete()
	if !ok || ss.sub.Desc.Replicas != 1 {
		return nil
	}
	return restores(c, procs, ss.s.h.ID())
}

// restartWords says where the next run starts from.
func (ss *session) restartWords() string {
	c, ok := ss.rec.LastComplete()
	if !ok || ss.sub.Desc.Replicas != 1 {
		return "from scratch (no complete checkpoint)"
	}
	return fmt.Sprintf("from checkpoint %d (taken %s, %d bytes)", c.Num, c.Taken.Format(time.TimeOnly), c.Bytes())
}

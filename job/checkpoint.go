package job

import (
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

// Checkpoints, the submitter's side. A job's ranks take
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
	// Quiet says the rank's channels were empty at the cut: it holds no
	// message sent and not yet received.
	Quiet bool `json:"quiet,omitempty"`
}

// Checkpoint is one checkpoint in a job's manifest.
type Checkpoint struct {
	Num      uint64           `json:"num"`
	Taken    time.Time        `json:"taken"`   // when the first bytes of its files came in
	Attempt  int              `json:"attempt"` // the run that took it
	Files    []CheckpointFile `json:"files"`
	Complete bool             `json:"complete,omitempty"` // every rank's file is in
	Done     time.Time        `json:"done,omitzero"`      // when the last file came in
	Size     int              `json:"size,omitempty"`     // the ranks of the run that took it
}

// Quiet reports whether the checkpoint is complete and no message was in
// flight at its cut: only then can a job restart from it at another size,
// each new rank reading the old ranks' state it needs.
func (c Checkpoint) Quiet() bool {
	if !c.Complete {
		return false
	}
	for _, f := range c.Files {
		if !f.Quiet {
			return false
		}
	}
	return true
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

// Restores are the files of checkpoint c for the ranks in procs.
func Restores(c Checkpoint, procs []proto.Proc, submitter peer.ID) []proto.Restore {
	var out []proto.Restore
	for _, p := range procs {
		for _, f := range c.Files {
			if f.Rank == p.Rank {
				out = append(out, restoreOf(c, f, submitter))
			}
		}
	}
	return out
}

// RestoresAll lists every rank's file of checkpoint c: a run restarting
// from it at another size, where any new rank may read any old rank's
// state.
func RestoresAll(c Checkpoint, submitter peer.ID) []proto.Restore {
	out := make([]proto.Restore, 0, len(c.Files))
	for _, f := range c.Files {
		out = append(out, restoreOf(c, f, submitter))
	}
	return out
}

func restoreOf(c Checkpoint, f CheckpointFile, submitter peer.ID) proto.Restore {
	return proto.Restore{Rank: f.Rank, Num: c.Num,
		File:   proto.FileRef{Name: proto.RestoreName(c.Num, f.Rank), Hash: f.Hash, Size: f.Size},
		Copies: slices.DeleteFunc(slices.Clone(f.Copies), func(q peer.ID) bool { return q == submitter })}
}

// AddCheckpointFile adds a rank's file, whose first bytes came at taken, to
// checkpoint num of cps (making it), marks it complete once it has size
// ranks' files, and returns the manifest. Pure: the table tests drive it.
func AddCheckpointFile(cps []Checkpoint, num uint64, attempt, size int, f CheckpointFile, taken, now time.Time) []Checkpoint {
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
	c.Size = size
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

// KeepCheckpoints is what the manifest keeps once a checkpoint is complete: the
// newest complete one, and any newer one still arriving. Pure.
func KeepCheckpoints(cps []Checkpoint) (kept, dropped []Checkpoint) {
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

package mpi

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
)

// A malleable job (zorilla submit -n MIN:MAX) changes size only at a
// checkpoint whose channels were empty: no message was in flight, so the
// ranks' files hold only what the program saved. It restarts at the new
// size with every old rank's file staged beside each new rank, and each
// new rank reads the old ranks' states it needs (RestoredRank): a rank of
// a block-split program reads the old blocks that overlap its own.

// Environment of a rank restarted at another size, set by the agent.
const (
	EnvRestoreDir  = "ZORILLA_RESTORE_DIR"  // folder holding every old rank's file of the checkpoint
	EnvRestoreNum  = "ZORILLA_RESTORE_NUM"  // the checkpoint's number
	EnvRestoreSize = "ZORILLA_RESTORE_SIZE" // the number of ranks of the run that took it
)

// resized is where a rank restarted at another size finds the old ranks'
// files.
type resized struct {
	dir  string
	num  uint64
	size int
}

// resizedEnv reads the resized-restart variables into o; all or none.
func (o *Options) resizedEnv() error {
	dir, num, size := os.Getenv(EnvRestoreDir), os.Getenv(EnvRestoreNum), os.Getenv(EnvRestoreSize)
	if dir == "" && num == "" && size == "" {
		return nil
	}
	n, err1 := strconv.ParseUint(num, 10, 64)
	s, err2 := strconv.Atoi(size)
	if dir == "" || err1 != nil || err2 != nil || n == 0 || s < 1 || s > proto.MaxRanks {
		return fmt.Errorf("%w: %s=%q, %s=%q, %s=%q: want a folder, a checkpoint number and a size",
			ErrArg, EnvRestoreDir, dir, EnvRestoreNum, num, EnvRestoreSize, size)
	}
	o.RestoreDir, o.RestoreNum, o.RestoreSize = dir, n, s
	return nil
}

// restoreResized takes a restart at another size: the checkpoint numbers
// go on from the old run's, and no state is this rank's own.
func (s *Session) restoreResized(o Options) {
	s.ck.resized = &resized{dir: o.RestoreDir, num: o.RestoreNum, size: o.RestoreSize}
	s.ck.restoredNum, s.ck.next = o.RestoreNum, o.RestoreNum+1
}

// RestoredSize is the number of ranks of the run whose checkpoint this
// process restarted from: Size() when the job restarted at the same size,
// another number when a malleable job was resized, 0 when it started from
// scratch.
func (s *Session) RestoredSize() int {
	switch {
	case s.ck.resized != nil:
		return s.ck.resized.size
	case s.ck.restored != nil:
		return s.size
	}
	return 0
}

// RestoredRank returns the state old rank r saved in the checkpoint this
// process restarted from. After a resize any rank may read any old rank's
// state (each file is opened anew, so reading one twice is fine); at the
// same size, only its own (what Restored returns). Call it after Init,
// before the first Checkpoint.
func (s *Session) RestoredRank(r int) (io.Reader, error) {
	rz := s.ck.resized
	if rz == nil {
		if st := s.ck.restored; st != nil && r == s.rank {
			f, off, n := st.Outer()
			return io.NewSectionReader(f, off, n), nil // a reader of its own, from the start
		}
		return nil, fmt.Errorf("mpi: restored rank %d: this process restarted from no checkpoint of it", r)
	}
	if r < 0 || r >= rz.size {
		return nil, fmt.Errorf("mpi: restored rank %d: the checkpoint's run had %d ranks", r, rz.size)
	}
	path := filepath.Join(rz.dir, CheckpointFile(rz.num, r))
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("mpi: restored rank %d: %w", r, err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("mpi: restored rank %d: %w", r, err)
	}
	h, msgs, state, err := readCheckpoint(f, fi.Size())
	switch {
	case err != nil:
	case h.Num != rz.num || int(h.Rank) != r || int(h.Size) != rz.size:
		err = fmt.Errorf("file of checkpoint %d, rank %d of %d", h.Num, h.Rank, h.Size)
	case len(msgs) > 0:
		err = fmt.Errorf("%d messages were in flight at its cut: the job cannot change size there", len(msgs))
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("mpi: restored rank %d from %s: %w", r, path, err)
	}
	s.ck.resizedFiles = append(s.ck.resizedFiles, f)
	return state, nil
}

// RestoredSize is Session.RestoredSize of the process's session.
func RestoredSize() int {
	if s := session(); s != nil {
		return s.RestoredSize()
	}
	return 0
}

// RestoredRank is Session.RestoredRank of the process's session.
func RestoredRank(r int) (io.Reader, error) {
	if s := session(); s != nil {
		return s.RestoredRank(r)
	}
	return nil, fmt.Errorf("mpi: restored rank %d: %w", r, ErrNotInit)
}

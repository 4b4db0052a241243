package mpi_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi"
	"github.com/zorilla-p2p/zorilla/mpi/internal/mpitest"
)

// TestCheckpointNow: with an interval that never passes, no call takes a
// checkpoint until rank 0's agent sends CHECKPOINTNOW (`zorilla stop
// --checkpoint`); then the next call takes one on every rank, and the one
// after does not (the request is used once).
func TestCheckpointNow(t *testing.T) {
	dir := t.TempDir()
	j, err := cluster.AddJob(3, mpitest.RoundRobin(len(cluster.Hosts)))
	if err != nil {
		t.Fatal(err)
	}
	for r := range j.Opts {
		j.Opts[r].CheckpointDir, j.Opts[r].CheckpointEvery = dir, time.Hour
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	nop := func(w io.Writer) error { _, err := io.WriteString(w, "state"); return err }
	errs := j.Run(ctx, func(c *mpi.Comm) error {
		if took, err := c.Checkpoint(ctx, nop); err != nil || took {
			return fmt.Errorf("first call: took %v, %v, before any request", took, err)
		}
		var b [1]byte
		if c.Rank() == 0 {
			if !j.Jobs[j.Host[0]].CheckpointNow() {
				return fmt.Errorf("CheckpointNow: rank 0 not told")
			}
			// The agent writes rank 0's frames in order: a message
			// arriving after the request means the request arrived.
			if err := mpi.Send(c, b[:], 1, 0); err != nil {
				return err
			}
			if _, err := mpi.Recv(c, b[:], 1, 0); err != nil {
				return err
			}
		} else if c.Rank() == 1 {
			if _, err := mpi.Recv(c, b[:], 0, 0); err != nil {
				return err
			}
			if err := mpi.Send(c, b[:], 0, 0); err != nil {
				return err
			}
		}
		if took, err := c.Checkpoint(ctx, nop); err != nil || !took {
			return fmt.Errorf("call after the request: took %v, %v", took, err)
		}
		if took, err := c.Checkpoint(ctx, nop); err != nil || took {
			return fmt.Errorf("second call after the request: took %v, %v", took, err)
		}
		return nil
	})
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
	for r := range 3 {
		if _, err := os.Stat(filepath.Join(dir, mpi.CheckpointFile(1, r))); err != nil {
			t.Errorf("rank %d's file of checkpoint 1: %v", r, err)
		}
	}
	if j.Jobs[j.Host[0]].CheckpointNow() {
		t.Error("CheckpointNow after the job ended: told rank 0")
	}
}

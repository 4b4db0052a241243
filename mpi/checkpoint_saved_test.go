package mpi_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi"
	"github.com/zorilla-p2p/zorilla/mpi/router"
)

// TestCheckpointSaved: every rank tells its own agent of each checkpoint
// it wrote, once, with the file's size and sha256; a replicated job takes
// none and says nothing.
func TestCheckpointSaved(t *testing.T) {
	var mu sync.Mutex
	var saved []router.Saved
	heard := map[int]int{} // rank -> agent that heard it
	cluster.OnSaved = func(a int, sv router.Saved) {
		mu.Lock()
		defer mu.Unlock()
		saved = append(saved, sv)
		heard[sv.Rank] = a
	}
	defer func() { cluster.OnSaved = nil }()
	dir := t.TempDir()
	prog := func(c *mpi.Comm) error {
		for i := range 2 {
			took, err := c.Checkpoint(context.Background(), func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "rank %d call %d", c.Rank(), i)
				return err
			})
			if err != nil || !took {
				return fmt.Errorf("call %d: %v %v", i, took, err)
			}
		}
		return nil
	}
	j, err := cluster.AddJob(3, func(r int) int { return r % 3 })
	if err != nil {
		t.Fatal(err)
	}
	for r := range j.Opts {
		j.Opts[r].CheckpointDir = dir
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for r, err := range j.Run(ctx, prog) {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(saved) != 6 {
		t.Fatalf("%d SAVED reports, want 2 per rank: %+v", len(saved), saved)
	}
	for _, sv := range saved {
		b, err := os.ReadFile(filepath.Join(dir, mpi.CheckpointFile(sv.Num, sv.Rank)))
		if err != nil || int64(len(b)) != sv.Size || sha256.Sum256(b) != sv.Sum {
			t.Errorf("rank %d checkpoint %d: %d bytes said, file of %d (%v), sum matches %v", sv.Rank, sv.Num, sv.Size, len(b), err, sha256.Sum256(b) == sv.Sum)
		}
		if heard[sv.Rank] != sv.Rank%3 {
			t.Errorf("rank %d's report heard by agent %d", sv.Rank, heard[sv.Rank])
		}
	}
	saved = nil
	mu.Unlock()
	rj, err := cluster.AddReplicatedJob(2, 2, func(rank, k int) int { return (rank + k) % 3 })
	if err != nil {
		t.Fatal(err)
	}
	rdir := t.TempDir()
	for i := range rj.Opts {
		rj.Opts[i].CheckpointDir = rdir
	}
	for i, err := range rj.Run(ctx, func(c *mpi.Comm) error {
		took, err := c.Checkpoint(context.Background(), func(io.Writer) error { return nil })
		if err != nil || took {
			return fmt.Errorf("replicated: took %v, %v", took, err)
		}
		return nil
	}) {
		if err != nil {
			t.Errorf("copy %d: %v", i, err)
		}
	}
	mu.Lock()
	if es, _ := os.ReadDir(rdir); len(saved) != 0 || len(es) != 0 {
		t.Errorf("a replicated job saved %+v, files %v", saved, es)
	}
}

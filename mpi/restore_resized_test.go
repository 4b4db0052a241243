package mpi_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi"
	"github.com/zorilla-p2p/zorilla/mpi/router"
)

// runResized runs fn on size ranks restarted from checkpoint num of a run
// of oldSize ranks whose files are in from.
func runResized(t *testing.T, size int, dir, from string, num uint64, oldSize int, fn func(c *mpi.Comm) error) []error {
	t.Helper()
	j, err := cluster.AddJob(size, func(r int) int { return r % len(cluster.Hosts) })
	if err != nil {
		t.Fatal(err)
	}
	for r := range j.Opts {
		j.Opts[r].CheckpointDir = dir
		j.Opts[r].RestoreDir, j.Opts[r].RestoreNum, j.Opts[r].RestoreSize = from, num, oldSize
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return j.Run(ctx, fn)
}

// blockState is what old rank r of a quiet checkpoint saved.
func blockState(r int) string { return fmt.Sprintf("block %d of the old run", r) }

// TestRestoreAtAnotherSize: a checkpoint taken with no message in flight
// is quiet on every rank, and a job restarted from it with fewer or more
// ranks reads every old rank's state from any new rank; Restored says
// false (the program's own state is gone), the numbers go on.
func TestRestoreAtAnotherSize(t *testing.T) {
	var mu sync.Mutex
	quiet := map[int]bool{}
	cluster.OnSaved = func(_ int, sv router.Saved) {
		mu.Lock()
		defer mu.Unlock()
		quiet[sv.Rank] = sv.Quiet
	}
	defer func() { cluster.OnSaved = nil }()
	first := t.TempDir()
	for r, err := range runCk(t, 4, nil, first, "", 0, 0, func(c *mpi.Comm) error {
		if err := c.Barrier(); err != nil { // messages that all arrive before the cut
			return err
		}
		took, err := c.Checkpoint(context.Background(), func(w io.Writer) error {
			_, err := io.WriteString(w, blockState(c.Rank()))
			return err
		})
		if err != nil || !took {
			return fmt.Errorf("checkpoint: %v %v", took, err)
		}
		return nil
	}) {
		if err != nil {
			t.Fatalf("first run, rank %d: %v", r, err)
		}
	}
	mu.Lock()
	if len(quiet) != 4 || !quiet[0] || !quiet[1] || !quiet[2] || !quiet[3] {
		t.Fatalf("quiet flags %v, want 4 ranks quiet", quiet)
	}
	mu.Unlock()
	for _, size := range []int{2, 6} {
		errs := runResized(t, size, t.TempDir(), first, 1, 4, func(c *mpi.Comm) error {
			s := c.Session()
			if _, ok := s.Restored(); ok || s.RestoredSize() != 4 || s.RestoredFrom() != 1 {
				return fmt.Errorf("restored size %d from %d", s.RestoredSize(), s.RestoredFrom())
			}
			for old := range 4 {
				st, err := s.RestoredRank(old)
				if err != nil {
					return err
				}
				if b, err := io.ReadAll(st); err != nil || string(b) != blockState(old) {
					return fmt.Errorf("old rank %d: %q %v", old, b, err)
				}
			}
			if _, err := s.RestoredRank(4); err == nil {
				return fmt.Errorf("old rank 4 of 4 read")
			}
			took, err := c.Checkpoint(context.Background(), func(w io.Writer) error { return nil })
			if err != nil || !took {
				return fmt.Errorf("checkpoint after the resize: %v %v", took, err)
			}
			return nil
		})
		for r, err := range errs {
			if err != nil {
				t.Errorf("%d ranks, rank %d: %v", size, r, err)
			}
		}
	}
}

// TestRestoreAtAnotherSizeRefusesInFlight: a checkpoint with messages in
// flight at its cut is not quiet, and a rank restarted at another size
// from it cannot read it (those messages would be lost).
func TestRestoreAtAnotherSizeRefusesInFlight(t *testing.T) {
	var mu sync.Mutex
	loud := 0
	cluster.OnSaved = func(_ int, sv router.Saved) {
		mu.Lock()
		defer mu.Unlock()
		if !sv.Quiet {
			loud++
		}
	}
	defer func() { cluster.OnSaved = nil }()
	first := t.TempDir()
	for r, err := range runCk(t, 4, nil, first, "", 0, 0, crossCut) {
		if err != nil {
			t.Fatalf("first run, rank %d: %v", r, err)
		}
	}
	mu.Lock()
	if loud != 4 {
		t.Fatalf("%d ranks not quiet, want 4", loud)
	}
	mu.Unlock()
	for r, err := range runResized(t, 2, t.TempDir(), first, 1, 4, func(c *mpi.Comm) error {
		_, err := c.Session().RestoredRank(c.Rank())
		if err == nil || !strings.Contains(err.Error(), "in flight") {
			return fmt.Errorf("read a loud checkpoint: %v", err)
		}
		return nil
	}) {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// TestResizedEnv: the agent's three variables come together and well
// formed, or the program is told what is wrong.
func TestResizedEnv(t *testing.T) {
	base := map[string]string{mpi.EnvSocket: "/tmp/s", mpi.EnvJob: "j1", mpi.EnvKey: "k",
		mpi.EnvRank: "0", mpi.EnvSize: "2", mpi.EnvReplica: "0"}
	cases := []struct {
		dir, num, size string
		ok             bool
	}{
		{"", "", "", true},
		{"/ckpt", "3", "4", true},
		{"/ckpt", "", "4", false},
		{"/ckpt", "0", "4", false},
		{"/ckpt", "3", "x", false},
		{"", "3", "4", false},
	}
	for _, c := range cases {
		for k, v := range base {
			t.Setenv(k, v)
		}
		t.Setenv(mpi.EnvRestoreDir, c.dir)
		t.Setenv(mpi.EnvRestoreNum, c.num)
		t.Setenv(mpi.EnvRestoreSize, c.size)
		o, err := mpi.OptionsFromEnv()
		if (err == nil) != c.ok {
			t.Errorf("%+v: %v", c, err)
		}
		if c.ok && c.dir != "" && (o.RestoreDir != c.dir || o.RestoreNum != 3 || o.RestoreSize != 4) {
			t.Errorf("%+v: options %+v", c, o)
		}
	}
}

package mpi_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi"
	"github.com/zorilla-p2p/zorilla/mpi/internal/mpitest"
)

// runCk runs fn on size ranks with a checkpoint folder (and, when from is
// set, each rank restoring its file of checkpoint num from that folder).
func runCk(t *testing.T, size int, place func(int) int, dir, from string, num uint64, every time.Duration, fn func(c *mpi.Comm) error) []error {
	t.Helper()
	if place == nil {
		place = mpitest.RoundRobin(len(cluster.Hosts))
	}
	j, err := cluster.AddJob(size, place)
	if err != nil {
		t.Fatal(err)
	}
	for r := range j.Opts {
		j.Opts[r].CheckpointDir, j.Opts[r].CheckpointEvery = dir, every
		if from != "" {
			j.Opts[r].Restore = filepath.Join(from, mpi.CheckpointFile(num, r))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return j.Run(ctx, fn)
}

// payload is the content of message what from src to dst: large ones span
// many fragments.
func payload(what string, src, dst, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + src*31 + dst*13 + len(what))
	}
	return append([]byte(what), b...)
}

// crossCut is a program that sends messages across its checkpoint on
// purpose: before the checkpoint every rank sends one small and one large
// message to the next rank and receives nothing; after it, each receives
// them, then the "after" message the previous rank sends after the
// checkpoint, then its "end". A restarted run (its state says the first
// part is done) skips the sends before the checkpoint: the messages they
// sent must come from the checkpoint's channel state, once.
func crossCut(c *mpi.Comm) error {
	ctx := context.Background()
	size, rank := c.Size(), c.Rank()
	next, prev := (rank+1)%size, (rank+size-1)%size
	st, restored := c.Session().Restored()
	if restored {
		b, err := io.ReadAll(st)
		if err != nil || string(b) != fmt.Sprintf("rank %d past the sends", rank) {
			return fmt.Errorf("restored state %q: %v", b, err)
		}
	} else {
		if err := mpi.Send(c, payload("small", rank, next, 10), next, 1); err != nil {
			return err
		}
		if err := mpi.Send(c, payload("large", rank, next, 300_000), next, 2); err != nil {
			return err
		}
		took, err := c.Checkpoint(ctx, func(w io.Writer) error {
			_, err := fmt.Fprintf(w, "rank %d past the sends", rank)
			return err
		})
		if err != nil || !took {
			return fmt.Errorf("checkpoint: took %v: %v", took, err)
		}
	}
	if err := mpi.Send(c, payload("after", rank, next, 5), next, 3); err != nil {
		return err
	}
	if err := mpi.Send(c, []byte("end"), next, 4); err != nil {
		return err
	}
	want := [][]byte{payload("small", prev, rank, 10), payload("large", prev, rank, 300_000),
		payload("after", prev, rank, 5), []byte("end")}
	for i, w := range want {
		buf := make([]byte, 400_000)
		st, err := mpi.Recv(c, buf, prev, mpi.AnyTag)
		if err != nil {
			return err
		}
		if st.Tag != i+1 || !bytes.Equal(buf[:st.Count], w) {
			return fmt.Errorf("message %d from rank %d: tag %d, %d bytes, want tag %d, %d bytes", i, prev, st.Tag, st.Count, i+1, len(w))
		}
	}
	if ok, st, err := c.Iprobe(mpi.AnySource, mpi.AnyTag); ok || err != nil {
		return fmt.Errorf("a message too many: from %d tag %d (%v)", st.Source, st.Tag, err)
	}
	return c.Barrier()
}

// TestCheckpointChannelState: messages sent before the checkpoint and
// received after it are in the checkpoint, delivered once on restart, in
// order with what follows; nothing sent after the cut is in it.
func TestCheckpointChannelState(t *testing.T) {
	for name, place := range placements {
		t.Run(name, func(t *testing.T) {
			first, second := t.TempDir(), t.TempDir()
			for r, err := range runCk(t, 4, place, first, "", 0, 0, crossCut) {
				if err != nil {
					t.Errorf("first run, rank %d: %v", r, err)
				}
			}
			for r, err := range runCk(t, 4, place, second, first, 1, 0, crossCut) {
				if err != nil {
					t.Errorf("restarted run, rank %d: %v", r, err)
				}
			}
		})
	}
}

// TestCheckpointNumbers: numbers are global and go on from the checkpoint
// a run restarted from; every call takes one without an interval, none
// before the interval has passed.
func TestCheckpointNumbers(t *testing.T) {
	dir, dir2 := t.TempDir(), t.TempDir()
	loop := func(c *mpi.Comm) error {
		for i := 0; i < 3; i++ {
			took, err := c.Checkpoint(context.Background(), func(w io.Writer) error { return nil })
			if err != nil || !took {
				return fmt.Errorf("call %d: took %v, %v", i, took, err)
			}
		}
		return nil
	}
	for r, err := range runCk(t, 3, nil, dir, "", 0, 0, loop) {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
	for r, err := range runCk(t, 3, nil, dir2, dir, 3, 0, loop) {
		if err != nil {
			t.Errorf("restarted, rank %d: %v", r, err)
		}
	}
	names := func(d string) []string {
		es, _ := os.ReadDir(d)
		var out []string
		for _, e := range es {
			out = append(out, e.Name())
		}
		slices.Sort(out)
		return out
	}
	var want []string
	for n := 4; n <= 6; n++ {
		for r := 0; r < 3; r++ {
			want = append(want, mpi.CheckpointFile(uint64(n), r))
		}
	}
	slices.Sort(want)
	if got := names(dir2); !slices.Equal(got, want) {
		t.Errorf("after restarting from 3: %v, want %v", got, want)
	}
	idle := func(c *mpi.Comm) error {
		took, err := c.Checkpoint(context.Background(), func(w io.Writer) error { return nil })
		if err != nil || took {
			return fmt.Errorf("took %v, %v, before the hour passed", took, err)
		}
		return nil
	}
	dir3 := t.TempDir()
	for r, err := range runCk(t, 3, nil, dir3, "", 0, time.Hour, idle) {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
	if got := names(dir3); len(got) != 0 {
		t.Errorf("files %v written before the interval", got)
	}
}

// TestCheckpointMisuse: a failed save fails the checkpoint on every rank;
// a pending receive and another communicator are refused.
func TestCheckpointMisuse(t *testing.T) {
	dir := t.TempDir()
	errs := runCk(t, 3, mpitest.RoundRobin(3), dir, "", 0, 0, func(c *mpi.Comm) error {
		_, err := c.Checkpoint(context.Background(), func(w io.Writer) error {
			if c.Rank() == 2 {
				return errors.New("disk on fire")
			}
			_, err := w.Write([]byte("state"))
			return err
		})
		if err == nil {
			return errors.New("a checkpoint with a failed save succeeded")
		}
		if !bytes.Contains([]byte(err.Error()), []byte("disk on fire")) {
			return fmt.Errorf("error %q does not say why", err)
		}
		r := mpi.Irecv(c, make([]byte, 1), mpi.AnySource, 9)
		if _, err := c.Checkpoint(context.Background(), func(io.Writer) error { return nil }); !errors.Is(err, mpi.ErrArg) {
			return fmt.Errorf("checkpoint with a receive pending: %v", err)
		}
		if err := mpi.Send(c, []byte{1}, c.Rank(), 9); err != nil {
			return err
		}
		_, err = r.Wait()
		return err
	})
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

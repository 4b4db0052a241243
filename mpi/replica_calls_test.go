package mpi_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi"
)

// TestNewCallsReplicated runs the new calls in a job with two copies of
// each rank: every copy must see the same Waitany order (the lead's
// choice), a ring of synchronous sends must complete (each waits for its
// receiver's lead), and Dup and Split must work as on one copy.
func TestNewCallsReplicated(t *testing.T) {
	const n = 4
	j, err := cluster.AddReplicatedJob(n, 2, func(r, k int) int { return (r + k) % len(cluster.Hosts) })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	seen := map[string]string{}
	errs := j.Run(ctx, func(c *mpi.Comm) error {
		order, err := replicatedProgram(c)
		mu.Lock()
		seen[fmt.Sprintf("%d/%d", c.Rank(), c.Session().Replica())] = order
		mu.Unlock()
		return err
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("copy %d: %v", i, err)
		}
	}
	for r := 0; r < n; r++ {
		if a, b := seen[fmt.Sprintf("%d/0", r)], seen[fmt.Sprintf("%d/1", r)]; a != b || len(a) != n {
			t.Errorf("rank %d: copy 0 saw %q, copy 1 %q", r, a, b)
		}
	}
}

// replicatedProgram returns the order in which this rank's Waitany took
// the other ranks' messages.
func replicatedProgram(c *mpi.Comm) (string, error) {
	d, err := c.Dup()
	if err != nil {
		return "", err
	}
	n, r := d.Size(), d.Rank()
	reqs := make([]*mpi.Request, n)
	bufs := make([][]int32, n)
	for q := range reqs {
		bufs[q] = make([]int32, 1)
		reqs[q] = mpi.Irecv(d, bufs[q], q, 3)
	}
	for q := 0; q < n; q++ {
		if err := mpi.Send(d, []int32{int32(r)}, q, 3); err != nil {
			return "", err
		}
	}
	order := ""
	for {
		i, _, err := mpi.Waitany(reqs)
		if err != nil {
			return order, err
		}
		if i < 0 {
			break
		}
		order += fmt.Sprint(i)
	}
	next, prev := (r+1)%n, (r-1+n)%n
	in := make([]int32, 1)
	rr := mpi.Irecv(d, in, prev, 4)
	if err := mpi.Ssend(d, []int32{int32(r)}, next, 4); err != nil {
		return order, err
	}
	if _, err := rr.Wait(); err != nil || in[0] != int32(prev) {
		return order, fmt.Errorf("ssend ring: got %v: %v", in, err)
	}
	s, err := c.Split(r%2, 0)
	if err != nil {
		return order, err
	}
	sum := []int64{int64(r)}
	if err := mpi.Allreduce(s, sum, sum, mpi.Sum[int64]); err != nil {
		return order, err
	}
	if want := map[int]int64{0: 2, 1: 4}[r%2]; sum[0] != want {
		return order, fmt.Errorf("split allreduce: %d, want %d", sum[0], want)
	}
	return order, nil
}

package mpi_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi"
)

// TestSsendReplicatedWaitsForTheReceive checks MPI_Ssend's one promise in a
// job with two copies of each rank: the send is not complete while the
// receiver has not posted its receive, even though the message has reached
// it, and every copy of the sender sees the same. Rank 1 holds its receive
// back until rank 0 has tested its Issend, and rank 0 tests only once rank
// 1 has the message (a Probe found it).
func TestSsendReplicatedWaitsForTheReceive(t *testing.T) {
	j, err := cluster.AddReplicatedJob(2, 2, func(r, k int) int { return (r + k) % len(cluster.Hosts) })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	done := map[int]bool{} // replica of rank 0 -> its Issend was complete before the receive
	errs := j.Run(ctx, func(c *mpi.Comm) error {
		if c.Rank() == 1 {
			return ssendReceiver(c)
		}
		complete, err := ssendSender(c)
		mu.Lock()
		done[c.Session().Replica()] = complete
		mu.Unlock()
		return err
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("copy %d: %v", i, err)
		}
	}
	if len(done) != 2 {
		t.Fatalf("%d copies of rank 0 reported, want 2", len(done))
	}
	for k, complete := range done {
		if complete {
			t.Errorf("copy %d of rank 0: Issend complete before rank 1 posted its receive", k)
		}
	}
}

// ssendSender is rank 0: Issend, wait until rank 1 has the message, test
// the send, tell rank 1, wait for the send.
func ssendSender(c *mpi.Comm) (completeEarly bool, err error) {
	req := mpi.Issend(c, []int32{7}, 1, 5)
	if _, err := mpi.Recv(c, make([]int32, 1), 1, 6); err != nil {
		return false, err
	}
	completeEarly, _, err = req.Test()
	if err != nil {
		return false, err
	}
	if err := mpi.Send(c, []int32{0}, 1, 6); err != nil {
		return completeEarly, err
	}
	if _, err := req.Wait(); err != nil {
		return completeEarly, fmt.Errorf("ssend: %w", err)
	}
	return completeEarly, nil
}

// ssendReceiver is rank 1: find the synchronous message, tell rank 0, and
// receive it only once rank 0 has tested its send.
func ssendReceiver(c *mpi.Comm) error {
	if _, err := c.Probe(0, 5); err != nil {
		return err
	}
	if err := mpi.Send(c, []int32{0}, 0, 6); err != nil {
		return err
	}
	if _, err := mpi.Recv(c, make([]int32, 1), 0, 6); err != nil {
		return err
	}
	in := make([]int32, 1)
	if _, err := mpi.Recv(c, in, 0, 5); err != nil || in[0] != 7 {
		return fmt.Errorf("recv: got %v: %v", in, err)
	}
	return nil
}

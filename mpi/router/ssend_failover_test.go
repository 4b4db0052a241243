package router_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi"
	"github.com/zorilla-p2p/zorilla/mpi/internal/mpitest"
)

// TestSsendFailover: a replicated job of 4 ranks runs rings of synchronous
// sends while one agent, which holds the lead of one rank and the backup of
// another, is killed at a seeded iteration. The copies that took over
// acknowledge what their lost leads matched, so no surviving copy's Ssend
// waits forever and every value arrives.
func TestSsendFailover(t *testing.T) {
	for trial := range failoverTrials(t) {
		seed := uint64(trial*17 + 3)
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			const iters = 40
			c := newCluster(t, 4, mpitest.FastConfig())
			j, err := c.AddReplicatedJob(4, 2, failoverPlace)
			if err != nil {
				t.Fatal(err)
			}
			victim, at := int(seed%4), 1+int(seed%uint64(iters-2))
			killed := make(chan struct{})
			go func() {
				<-killed
				_ = c.Hosts[victim].Close()
			}()
			errs := j.Run(ctxFor(t, 30*time.Second), func(cm *mpi.Comm) error {
				n, me := cm.Size(), cm.Rank()
				for it := range iters {
					if it == at && me == victim && cm.Session().Replica() == 0 {
						close(killed) // this copy's agent goes down while the ring runs
					}
					in := make([]int64, 1)
					rr := mpi.Irecv(cm, in, (me+n-1)%n, 2)
					if err := mpi.Ssend(cm, []int64{int64(1000*me + it)}, (me+1)%n, 2); err != nil {
						return fmt.Errorf("iteration %d: ssend: %w", it, err)
					}
					if _, err := rr.Wait(); err != nil {
						return fmt.Errorf("iteration %d: recv: %w", it, err)
					}
					if want := int64(1000*((me+n-1)%n) + it); in[0] != want {
						return fmt.Errorf("iteration %d: got %d, want %d", it, in[0], want)
					}
				}
				return nil
			})
			for i, o := range j.Opts {
				if failoverPlace(o.Rank, o.Replica) != victim && errs[i] != nil {
					t.Errorf("rank %d copy %d: %v", o.Rank, o.Replica, errs[i])
				}
			}
		})
	}
}

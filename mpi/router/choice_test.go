package router_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi"
	"github.com/zorilla-p2p/zorilla/mpi/internal/mpitest"
)

// TestSameChoicesOnEveryCopy: ranks 1-3 race to send to rank 0, which
// receives from AnySource, polls with Iprobe and Test, and records what it
// saw in order. Both copies of rank 0 must see the same sequence (each copy
// matching on its own would see its own agent's arrival order, and the
// copies would diverge), and so must both copies of rank 1, which gets
// rank 0's sequence afterwards. With every copy sending, the copies of the
// senders race too.
func TestSameChoicesOnEveryCopy(t *testing.T) {
	for _, every := range []bool{false, true} {
		t.Run(fmt.Sprintf("every-copy-sends=%v", every), func(t *testing.T) {
			cfg := mpitest.FastConfig()
			cfg.EveryCopySends = every
			c := newCluster(t, 4, cfg)
			j, err := c.AddReplicatedJob(4, 2, failoverPlace)
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			seen := map[string][]string{} // "rank/copy" -> what it saw
			noErrors(t, j.Run(ctxFor(t, 30*time.Second), func(cm *mpi.Comm) error {
				log, err := raceProgram(cm)
				mu.Lock()
				seen[fmt.Sprintf("%d/%d", cm.Rank(), cm.Session().Replica())] = []string{log}
				mu.Unlock()
				return err
			}))
			for _, r := range []int{0, 1} {
				a, b := seen[fmt.Sprintf("%d/0", r)], seen[fmt.Sprintf("%d/1", r)]
				if len(a) == 0 || len(b) == 0 || a[0] != b[0] {
					t.Errorf("rank %d: copy 0 saw\n%v\ncopy 1 saw\n%v", r, a, b)
				}
			}
		})
	}
}

// raceProgram is the program of TestSameChoicesOnEveryCopy; it returns what
// this copy saw.
func raceProgram(cm *mpi.Comm) (string, error) {
	const each = 40
	n, me := cm.Size(), cm.Rank()
	if me != 0 {
		for i := range each {
			if err := mpi.Send(cm, []int64{int64(100*me + i)}, 0, 7); err != nil {
				return "", err
			}
		}
		if me != 1 {
			return "", nil
		}
		buf := make([]byte, 64<<10)
		st, err := mpi.Recv(cm, buf, 0, 9)
		return string(buf[:st.Count]), err
	}
	var log strings.Builder
	buf := []int64{0}
	for got := 0; got < each*(n-1); {
		switch got % 3 {
		case 0: // a blocking receive from anyone
			st, err := mpi.Recv(cm, buf, mpi.AnySource, 7)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(&log, "r%d:%d ", st.Source, buf[0])
			got++
		case 1: // poll first
			ok, st, err := cm.Iprobe(mpi.AnySource, 7)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(&log, "p%v:%d ", ok, st.Source)
			if !ok {
				if st, err = cm.Probe(mpi.AnySource, 7); err != nil {
					return "", err
				}
			}
			if _, err := mpi.Recv(cm, buf, st.Source, 7); err != nil {
				return "", err
			}
			fmt.Fprintf(&log, "q%d:%d ", st.Source, buf[0])
			got++
		case 2: // a non-blocking receive, tested a few times, then waited for
			req := mpi.Irecv(cm, buf, mpi.AnySource, 7)
			tries, done := 0, false
			var st mpi.Status
			for ; tries < 3 && !done; tries++ {
				var err error
				if done, st, err = req.Test(); err != nil {
					return "", err
				}
			}
			if !done {
				var err error
				if st, err = req.Wait(); err != nil {
					return "", err
				}
			}
			fmt.Fprintf(&log, "t%d:%d/%d ", st.Source, buf[0], tries)
			got++
		}
	}
	s := log.String()
	return s, mpi.Send(cm, []byte(s), 1, 9)
}

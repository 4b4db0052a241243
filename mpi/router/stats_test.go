package router_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi"
	"github.com/zorilla-p2p/zorilla/mpi/internal/mpitest"
	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
	"github.com/zorilla-p2p/zorilla/mpi/router"
)

// TestStatsCounts: rank 0 sends k one-fragment messages to rank 1 on its
// own agent and k to rank 2 on another; the routers' totals count exactly
// those, each where it travelled (with shared memory on, ranks 0 and 1
// talk past the router, which counts nothing local). Round trips
// 0 -> 2 -> 0 first open the links (warmUp), and the counts start once
// both agents agree on what crossed.
func TestStatsCounts(t *testing.T) {
	for _, shm := range []bool{false, true} {
		t.Run(fmt.Sprintf("shm=%v", shm), func(t *testing.T) { statsCounts(t, shm) })
	}
}

func statsCounts(t *testing.T, shm bool) {
	cfg := mpitest.FastConfig()
	if !shm {
		cfg.ShmRing = 0
	}
	c := newCluster(t, 2, cfg)
	j, err := c.AddJob(3, func(rank int) int { return rank / 2 })
	if err != nil {
		t.Fatal(err)
	}
	const k, elems = 7, 8
	var before [2]router.Totals
	noErrors(t, j.Run(ctxFor(t, 30*time.Second), func(cm *mpi.Comm) error {
		buf := make([]int64, elems)
		switch cm.Rank() {
		case 0:
			if err := warmUp(cm, buf); err != nil {
				return err
			}
			if err := settled(c, &before); err != nil {
				return err
			}
			for i := 0; i < k; i++ {
				if err := mpi.Send(cm, buf, 1, 0); err != nil {
					return err
				}
				if err := mpi.Send(cm, buf, 2, 0); err != nil {
					return err
				}
			}
		case 2:
			for range warmUpTrips { // warmUp's round trips
				if _, err := mpi.Recv(cm, buf, 0, 1); err != nil {
					return err
				}
				if err := mpi.Send(cm, buf, 0, 1); err != nil {
					return err
				}
			}
			fallthrough
		default:
			for i := 0; i < k; i++ {
				if _, err := mpi.Recv(cm, buf, 0, 0); err != nil {
					return err
				}
			}
		}
		return nil
	}))
	frame := int64(proto.HeaderLen + proto.MsgHeaderLen + 8*elems)
	want := router.Traffic{Frames: k, Bytes: k * frame}
	wantLocal := want
	if shm {
		wantLocal = router.Traffic{}
	}
	diff := func(a, b router.Traffic) router.Traffic {
		return router.Traffic{Frames: a.Frames - b.Frames, Bytes: a.Bytes - b.Bytes}
	}
	a0, a1 := c.Routers[0].Stats(), c.Routers[1].Stats()
	for _, tc := range []struct {
		name      string
		got, want router.Traffic
	}{
		{"agent 0 sent", diff(a0.Sent, before[0].Sent), want},
		{"agent 0 local", diff(a0.Local, before[0].Local), wantLocal},
		{"agent 0 received", diff(a0.Received, before[0].Received), router.Traffic{}},
		{"agent 1 received", diff(a1.Received, before[1].Received), want},
		{"agent 1 sent", diff(a1.Sent, before[1].Sent), router.Traffic{}},
		{"agent 1 local", diff(a1.Local, before[1].Local), router.Traffic{}},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, tc.got, tc.want)
		}
	}
	if before[0].Sent.Frames < 1 || before[1].Received != before[0].Sent {
		t.Errorf("warm-up: agent 0 sent %+v, agent 1 received %+v", before[0].Sent, before[1].Received)
	}
}

// warmUpTrips is how many round trips warmUp makes.
const warmUpTrips = 2

// warmUp is rank 0's two round trips to rank 2, on tag 1. A link's first
// frame may cross twice: resent from the log as the stream starts, and
// sent by its sender, which waited for the stream and, on a loaded
// machine, may write it after the receiver got the first copy. The second
// round trip's frames follow each first frame's copies on the same
// ordered stream, so when its answer is back both copies were counted on
// both sides.
func warmUp(cm *mpi.Comm, buf []int64) error {
	for range warmUpTrips {
		if err := mpi.Send(cm, buf, 2, 1); err != nil {
			return err
		}
		if _, err := mpi.Recv(cm, buf, 2, 1); err != nil {
			return err
		}
	}
	return nil
}

// settled waits until what each agent of c sent has been received by the
// other, and returns both totals then.
func settled(c *mpitest.Cluster, out *[2]router.Totals) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		a, b := c.Routers[0].Stats(), c.Routers[1].Stats()
		if a.Sent == b.Received && b.Sent == a.Received {
			*out = [2]router.Totals{a, b}
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("the agents' link totals never agreed")
		}
		time.Sleep(time.Millisecond)
	}
}

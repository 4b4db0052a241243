package mpi_test

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/zorilla-p2p/zorilla/mpi"
)

// TestHierarchicalEqualsFlat runs every host-aware collective twice, with
// and without the hosts, on every size 1..9 with 1 to 4 consecutive ranks
// per host (hosts reused round the three agents, so some layouts are not
// blocks of consecutive ranks), and compares both with the exact result;
// then the same on the communicators of the even and of the odd ranks.
func TestHierarchicalEqualsFlat(t *testing.T) {
	hier := 0
	var hierSub atomic.Int32
	for per := 1; per <= 4; per++ {
		for n := 1; n <= 9; n++ {
			t.Run(fmt.Sprintf("%d-per-host/%d", per, n), func(t *testing.T) {
				place := func(r int) int { return (r / per) % len(cluster.Hosts) }
				run(t, n, place, func(c *mpi.Comm) error {
					if c.Rank() == 0 && mpi.Hierarchical(c) {
						hier++
					}
					if err := errors.Join(compareLevels(c), compareLevels(mpi.Flat(c))); err != nil {
						return err
					}
					half, err := c.Split(c.Rank()%2, c.Rank()) // the same on a sub-communicator
					if err != nil {
						return err
					}
					if half.Rank() == 0 && mpi.Hierarchical(half) {
						hierSub.Add(1)
					}
					return errors.Join(compareLevels(half), compareLevels(mpi.Flat(half)))
				})
			})
		}
	}
	if hier < 20 || hierSub.Load() < 10 {
		t.Errorf("only %d layouts used the hierarchy, %d sub-communicators", hier, hierSub.Load())
	}
}

// compareLevels checks each collective on c against its exact result.
func compareLevels(c *mpi.Comm) error {
	n, r := c.Size(), c.Rank()
	if err := c.Barrier(); err != nil {
		return err
	}
	world := identity(n)
	for root := 0; root < n; root++ {
		buf := []int64{-1, -1}
		if r == root {
			buf = []int64{int64(root), 77}
		}
		if err := mpi.Bcast(c, buf, root); err != nil {
			return err
		}
		if !slices.Equal(buf, []int64{int64(root), 77}) {
			return fmt.Errorf("bcast from %d: %v", root, buf)
		}
		got := make([]int64, orderedLen)
		send := make([]int64, orderedLen)
		for i := range send {
			send[i] = affineOf(r, i)
		}
		if err := mpi.Reduce(c, send, got, affine, root); err != nil {
			return err
		}
		if r == root {
			for i := range got {
				if got[i] != affineFold(world, i) {
					return fmt.Errorf("reduce to %d: element %d out of order", root, i)
				}
			}
		}
		all := make([]int32, 2*n)
		if err := mpi.Gather(c, []int32{int32(r), int32(-r)}, all, root); err != nil {
			return err
		}
		if r == root && !slices.Equal(all, pairs(n)) {
			return fmt.Errorf("gather to %d: %v", root, all)
		}
	}
	if err := checkOrderedReductions(c, world); err != nil {
		return err
	}
	big := make([]float64, 70_000) // reduce-scatter + allgather, in floats exactly summed
	for i := range big {
		big[i] = float64(r*i%1000) + 0.25
	}
	if err := mpi.Allreduce(c, big, big, mpi.Sum[float64]); err != nil {
		return err
	}
	for i := range big {
		want := 0.0
		for q := 0; q < n; q++ {
			want += float64(q*i%1000) + 0.25
		}
		if big[i] != want {
			return fmt.Errorf("large allreduce: element %d is %v, want %v", i, big[i], want)
		}
	}
	all := make([]int32, 2*n)
	if err := mpi.Allgather(c, []int32{int32(r), int32(-r)}, all); err != nil {
		return err
	}
	if !slices.Equal(all, pairs(n)) {
		return fmt.Errorf("allgather: %v", all)
	}
	return errors.Join(checkAlltoall(c), checkAlltoallv(c))
}

// pairs is (r, -r) for every rank r.
func pairs(n int) []int32 {
	out := make([]int32, 0, 2*n)
	for r := 0; r < n; r++ {
		out = append(out, int32(r), int32(-r))
	}
	return out
}

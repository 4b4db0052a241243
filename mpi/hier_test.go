package mpi_test

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/zorilla-p2p/zorilla/mpi"
)

// TestHierarchicalEqualsFlat runs every host-aware collective twice, with
// and without the hosts, on every size 1..9 (jobSizes) with 1 to 4
// consecutive ranks per host (hosts reused round the three agents, so some
// layouts are not blocks of consecutive ranks), and compares both with the
// exact result; then the same on split communicators (compareSplits).
func TestHierarchicalEqualsFlat(t *testing.T) {
	hier := 0
	var hierSub atomic.Int32
	for per := 1; per <= 4; per++ {
		for _, n := range jobSizes() {
			t.Run(fmt.Sprintf("%d-per-host/%d", per, n), func(t *testing.T) {
				place := func(r int) int { return (r / per) % len(cluster.Hosts) }
				run(t, n, place, func(c *mpi.Comm) error {
					if c.Rank() == 0 && mpi.Hierarchical(c) {
						hier++
					}
					if err := bothLevels(c); err != nil {
						return err
					}
					return compareSplits(c, func(sub *mpi.Comm) {
						if sub.Rank() == 0 && mpi.Hierarchical(sub) {
							hierSub.Add(1)
						}
					})
				})
			})
		}
	}
	minHier, minSub := 20, 10 // of 36 layouts; 24 and 50 used it when written
	if testing.Short() {
		minHier, minSub = 6, 5 // of 16; 7 and 13
	}
	if hier < minHier || int(hierSub.Load()) < minSub {
		t.Errorf("only %d layouts used the hierarchy, %d sub-communicators", hier, hierSub.Load())
	}
}

// compareSplits runs compareLevels, with and without the hosts, on the
// communicators of the even and of the odd ranks, and on the one of the
// ranks not 1 mod 3, the others passing Undefined (those take no part).
// seen is called with each communicator first.
func compareSplits(c *mpi.Comm, seen func(*mpi.Comm)) error {
	half, err := c.Split(c.Rank()%2, c.Rank())
	if err != nil {
		return err
	}
	seen(half)
	if err := bothLevels(half); err != nil {
		return err
	}
	color := 0
	if c.Rank()%3 == 1 {
		color = mpi.Undefined
	}
	some, err := c.Split(color, c.Rank())
	if err != nil || some == nil {
		return err
	}
	seen(some)
	return bothLevels(some)
}

// bothLevels runs compareLevels on c with its hosts, then without.
func bothLevels(c *mpi.Comm) error {
	return inTurn(func() error { return compareLevels(c) }, func() error { return compareLevels(mpi.Flat(c)) })
}

// inTurn runs checks in turn up to the first that fails: a rank whose
// check failed stops there, and so fails the job (its abort ends the
// others' calls) rather than leave them waiting in the next collective.
func inTurn(checks ...func() error) error {
	for _, check := range checks {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
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
	return inTurn(func() error { return checkAlltoall(c) }, func() error { return checkAlltoallv(c) },
		func() error { return checkAlltoallvMixed(c) }, func() error { return checkAllgatherv(c, world) },
		func() error { return checkReduceScatterOrdered(c) }, func() error { return checkScan(c, world) },
		func() error { return checkScatter(c) }, func() error { return checkGatherv(c, world) },
		func() error { return checkScatterv(c, world) })
}

// checkAlltoallvMixed: rank i sends rank j a block of bigBlock elements
// when i+j is a multiple of 3 (too large to go through the host leaders),
// else of (i*j)%4 (some empty), each element telling its source, its
// destination and its place; blocks are sent in reverse rank order and
// received in rank order with gaps of one, which are left alone.
func checkAlltoallvMixed(c *mpi.Comm) error {
	n, me := c.Size(), c.Rank()
	count := func(i, j int) int {
		if (i+j)%3 == 0 {
			return bigBlock
		}
		return i * j % 4
	}
	value := func(i, j, k int) float64 { return float64(1000*i+j) + float64(k)/8 }
	sc, sd, rc, rd := make([]int, n), make([]int, n), make([]int, n), make([]int, n)
	var send []float64
	for j := n - 1; j >= 0; j-- {
		sc[j], sd[j] = count(me, j), len(send)
		for k := 0; k < sc[j]; k++ {
			send = append(send, value(me, j, k))
		}
	}
	total := 0
	for i := 0; i < n; i++ {
		rc[i], rd[i] = count(i, me), total
		total += rc[i] + 1
	}
	recv := make([]float64, total)
	for i := range recv {
		recv[i] = -1
	}
	if err := mpi.Alltoallv(c, send, sc, sd, recv, rc, rd); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		for k := 0; k < rc[i]; k++ {
			if got := recv[rd[i]+k]; got != value(i, me, k) {
				return fmt.Errorf("alltoallv mixed: rank %d block %d element %d is %v", me, i, k, got)
			}
		}
		if recv[rd[i]+rc[i]] != -1 {
			return fmt.Errorf("alltoallv mixed: rank %d: the gap after block %d was written", me, i)
		}
	}
	return nil
}

// bigBlock is a block (of float64s) larger than any that goes through the
// host leaders (64 KiB / 2 ranks).
const bigBlock = 4500

// checkReduceScatterOrdered: ReduceScatter with the non-commutative op
// gives each rank its block (i%2+1 elements for rank i) of the maps
// composed in rank order.
func checkReduceScatterOrdered(c *mpi.Comm) error {
	n, r := c.Size(), c.Rank()
	counts, total, at := make([]int, n), 0, 0
	for i := range counts {
		counts[i] = i%2 + 1
		if i == r {
			at = total
		}
		total += counts[i]
	}
	send := make([]int64, total)
	for i := range send {
		send[i] = affineOf(r, i)
	}
	recv := make([]int64, counts[r])
	if err := mpi.ReduceScatter(c, send, recv, counts, affine); err != nil {
		return err
	}
	for j := range recv {
		if recv[j] != affineFold(identity(n), at+j) {
			return fmt.Errorf("reduce scatter: element %d out of rank order", j)
		}
	}
	return nil
}

// pairs is (r, -r) for every rank r.
func pairs(n int) []int32 {
	out := make([]int32, 0, 2*n)
	for r := 0; r < n; r++ {
		out = append(out, int32(r), int32(-r))
	}
	return out
}

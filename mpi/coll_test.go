package mpi_test

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/zorilla-p2p/zorilla/mpi"
)

// TestCollectives runs every collective, from every root, on every size
// from 1 to 9 ranks (odd and non-power-of-two included), spread over three
// agents and in blocks that put neighbours on the same agent, and checks
// each result against what it must be.
func TestCollectives(t *testing.T) {
	for _, layout := range []string{"spread", "blocks"} {
		for n := 1; n <= 9; n++ {
			t.Run(fmt.Sprintf("%s/%d", layout, n), func(t *testing.T) {
				var entered atomic.Int32
				run(t, n, placements[layout], func(c *mpi.Comm) error {
					return errors.Join(
						checkBarrier(c, &entered),
						checkBcast(c), checkReduce(c), checkAllreduce(c),
						checkGather(c), checkScatter(c), checkAllgather(c),
						checkAlltoall(c), checkAlltoallv(c),
					)
				})
			})
		}
	}
}

// checkBarrier: no rank leaves the barrier before every rank has entered it.
func checkBarrier(c *mpi.Comm, entered *atomic.Int32) error {
	entered.Add(1)
	if err := c.Barrier(); err != nil {
		return err
	}
	if got := entered.Load(); int(got) < c.Size() {
		return fmt.Errorf("barrier: left with %d of %d ranks in", got, c.Size())
	}
	return nil
}

func checkBcast(c *mpi.Comm) error {
	for root := 0; root < c.Size(); root++ {
		buf := make([]float64, 3)
		if c.Rank() == root {
			buf = []float64{float64(root), 1.5, -2}
		}
		if err := mpi.Bcast(c, buf, root); err != nil {
			return err
		}
		if !slices.Equal(buf, []float64{float64(root), 1.5, -2}) {
			return fmt.Errorf("bcast from %d: %v", root, buf)
		}
	}
	big := make([]byte, 300_000) // several fragments
	if c.Rank() == 0 {
		copy(big, pattern(0, 0, len(big)))
	}
	if err := mpi.Bcast(c, big, 0); err != nil {
		return err
	}
	if !slices.Equal(big, pattern(0, 0, len(big))) {
		return fmt.Errorf("large bcast corrupted")
	}
	return nil
}

func checkReduce(c *mpi.Comm) error {
	n := c.Size()
	for root := 0; root < n; root++ {
		in := []int64{int64(c.Rank() + 1), int64(-c.Rank()), 2}
		out := make([]int64, 3)
		for _, tc := range []struct {
			name string
			op   mpi.Op[int64]
			want []int64
		}{
			{"sum", mpi.Sum[int64], []int64{int64(n * (n + 1) / 2), int64(-n * (n - 1) / 2), int64(2 * n)}},
			{"min", mpi.Min[int64], []int64{1, int64(-(n - 1)), 2}},
			{"max", mpi.Max[int64], []int64{int64(n), 0, 2}},
			{"prod", mpi.Prod[int64], []int64{factorial(n), 0, 1 << n}},
			{"user", func(a, b []int64) {
				for i := range a {
					a[i] = a[i] ^ b[i]
				}
			}, xorAll(n)},
		} {
			clear(out)
			if err := mpi.Reduce(c, in, out, tc.op, root); err != nil {
				return err
			}
			if c.Rank() == root && !slices.Equal(out, tc.want) {
				return fmt.Errorf("reduce %s at %d: %v, want %v", tc.name, root, out, tc.want)
			}
		}
	}
	return nil
}

func factorial(n int) int64 {
	p := int64(1)
	for i := 2; i <= n; i++ {
		p *= int64(i)
	}
	return p
}

// xorAll is the XOR of the vectors {r+1, -r, 2} of ranks 0..n-1.
func xorAll(n int) []int64 {
	out := []int64{0, 0, 0}
	for r := 0; r < n; r++ {
		out[0] ^= int64(r + 1)
		out[1] ^= int64(-r)
		out[2] ^= 2
	}
	return out
}

func checkAllreduce(c *mpi.Comm) error {
	n := c.Size()
	in := []float64{float64(c.Rank()), 1}
	out := make([]float64, 2)
	if err := mpi.Allreduce(c, in, out, mpi.Sum); err != nil {
		return err
	}
	if want := []float64{float64(n * (n - 1) / 2), float64(n)}; !slices.Equal(out, want) {
		return fmt.Errorf("allreduce sum: %v, want %v", out, want)
	}
	i32 := []int32{int32(c.Rank()), -int32(c.Rank())}
	if err := mpi.Allreduce(c, i32, i32, mpi.Max); err != nil { // in place
		return err
	}
	if want := []int32{int32(n - 1), 0}; !slices.Equal(i32, want) {
		return fmt.Errorf("allreduce max in place: %v, want %v", i32, want)
	}
	// every rank must end with bitwise the same floating-point sum
	x := []float64{0.1 * float64(c.Rank()+1) / 3}
	sum := make([]float64, 1)
	if err := mpi.Allreduce(c, x, sum, mpi.Sum); err != nil {
		return err
	}
	all := make([]float64, n)
	if err := mpi.Allgather(c, sum, all); err != nil {
		return err
	}
	for r, v := range all {
		if v != sum[0] {
			return fmt.Errorf("allreduce: rank %d got %v, rank %d got %v", r, v, c.Rank(), sum[0])
		}
	}
	return nil
}

func checkGather(c *mpi.Comm) error {
	n := c.Size()
	for root := 0; root < n; root++ {
		send := []int32{int32(c.Rank()), int32(100 * c.Rank())}
		var recv []int32
		if c.Rank() == root {
			recv = make([]int32, 2*n)
		}
		if err := mpi.Gather(c, send, recv, root); err != nil {
			return err
		}
		if c.Rank() != root {
			continue
		}
		for r := 0; r < n; r++ {
			if recv[2*r] != int32(r) || recv[2*r+1] != int32(100*r) {
				return fmt.Errorf("gather at %d: %v", root, recv)
			}
		}
	}
	return nil
}

func checkScatter(c *mpi.Comm) error {
	n := c.Size()
	for root := 0; root < n; root++ {
		var send []int64
		if c.Rank() == root {
			for r := 0; r < n; r++ {
				send = append(send, int64(r), int64(root))
			}
		}
		recv := make([]int64, 2)
		if err := mpi.Scatter(c, send, recv, root); err != nil {
			return err
		}
		if recv[0] != int64(c.Rank()) || recv[1] != int64(root) {
			return fmt.Errorf("scatter from %d: rank %d got %v", root, c.Rank(), recv)
		}
	}
	return nil
}

func checkAllgather(c *mpi.Comm) error {
	n := c.Size()
	send := []uint8{uint8(c.Rank()), uint8(c.Rank() + 1), 7}
	recv := make([]uint8, 3*n)
	if err := mpi.Allgather(c, send, recv); err != nil {
		return err
	}
	for r := 0; r < n; r++ {
		if recv[3*r] != uint8(r) || recv[3*r+1] != uint8(r+1) || recv[3*r+2] != 7 {
			return fmt.Errorf("allgather: %v", recv)
		}
	}
	return nil
}

func checkAlltoall(c *mpi.Comm) error {
	n, me := c.Size(), c.Rank()
	send := make([]int32, 2*n)
	for j := 0; j < n; j++ {
		send[2*j], send[2*j+1] = int32(me), int32(j)
	}
	recv := make([]int32, 2*n)
	if err := mpi.Alltoall(c, send, recv); err != nil {
		return err
	}
	for j := 0; j < n; j++ {
		if recv[2*j] != int32(j) || recv[2*j+1] != int32(me) {
			return fmt.Errorf("alltoall: rank %d got %v", me, recv)
		}
	}
	return nil
}

// checkAlltoallv: rank i sends i+j+1 copies of the value 1000*i+j to rank
// j, packed in order.
func checkAlltoallv(c *mpi.Comm) error {
	n, me := c.Size(), c.Rank()
	sc, sd, rc, rd := make([]int, n), make([]int, n), make([]int, n), make([]int, n)
	var send []float64
	for j := 0; j < n; j++ {
		sc[j], sd[j] = me+j+1, len(send)
		for k := 0; k < sc[j]; k++ {
			send = append(send, float64(1000*me+j))
		}
	}
	total := 0
	for i := 0; i < n; i++ {
		rc[i], rd[i] = i+me+1, total
		total += rc[i]
	}
	recv := make([]float64, total)
	if err := mpi.Alltoallv(c, send, sc, sd, recv, rc, rd); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		for k := 0; k < rc[i]; k++ {
			if recv[rd[i]+k] != float64(1000*i+me) {
				return fmt.Errorf("alltoallv: rank %d block %d: %v", me, i, recv[rd[i]:rd[i]+rc[i]])
			}
		}
	}
	return nil
}

// TestCollectiveArgs: wrong buffer sizes are refused before anything is
// sent, on every rank alike, so nobody waits.
func TestCollectiveArgs(t *testing.T) {
	run(t, 3, nil, func(c *mpi.Comm) error {
		checks := []error{
			mpi.Allreduce(c, []int32{1}, []int32{}, mpi.Sum),
			mpi.Allgather(c, []int32{1}, make([]int32, 2)),
			mpi.Alltoall(c, make([]int32, 4), make([]int32, 4)),
			mpi.Alltoallv(c, []int32{1}, []int{1}, []int{0}, []int32{1}, []int{1}, []int{0}),
			mpi.Bcast(c, []int32{1}, 3),
			mpi.Reduce(c, []int32{1}, []int32{1}, nil, 0),
		}
		for i, err := range checks {
			if !errors.Is(err, mpi.ErrArg) {
				return fmt.Errorf("check %d: %v", i, err)
			}
		}
		return c.Barrier()
	})
}

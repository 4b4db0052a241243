package main

import (
	"fmt"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi"
)

// modulus of the arithmetic: every value stays exact.
const modulus = 1_000_003

// Tags of the halo messages.
const (
	tagLeft  = 1 // a rank's first point, to its left neighbour
	tagRight = 2 // its last point, to its right neighbour
)

// step is one iteration of the stencil on the whole periodic array.
func step(u []int64, iter int) []int64 {
	n := len(u)
	out := make([]int64, n)
	for i := range u {
		out[i] = (u[(i+n-1)%n] + 2*u[i] + 3*u[(i+1)%n] + int64(i) + int64(iter)) % modulus
	}
	return out
}

// initial is the starting array of n points.
func initial(n int) []int64 {
	u := make([]int64, n)
	for i := range u {
		u[i] = int64(i*7919) % modulus
	}
	return u
}

// Run is one rank's part: it returns the sum of the final array, after
// checking every message it received and its final points against the
// serial computation.
func Run(c *mpi.Comm, p params) (int64, error) {
	n, me := c.Size(), c.Rank()
	left, right := (me+n-1)%n, (me+1)%n
	ref := initial(n * p.points) // the serial computation, one step ahead of nothing
	mine := append([]int64(nil), ref[me*p.points:(me+1)*p.points]...)
	halo := make([]int64, 1)
	for it := 0; it < p.iters; it++ {
		// Halo exchange: the point left of my first, and right of my last.
		if _, err := mpi.Sendrecv(c, mine[:1], left, tagLeft, halo, right, tagLeft); err != nil {
			return 0, fmt.Errorf("iteration %d: halo: %w", it, err)
		}
		rightHalo := halo[0]
		if _, err := mpi.Sendrecv(c, mine[p.points-1:], right, tagRight, halo, left, tagRight); err != nil {
			return 0, fmt.Errorf("iteration %d: halo: %w", it, err)
		}
		leftHalo := halo[0]
		if want := ref[(right*p.points)%len(ref)]; rightHalo != want {
			return 0, fmt.Errorf("iteration %d: halo from rank %d is %d, want %d", it, right, rightHalo, want)
		}
		if want := ref[(left*p.points+p.points-1)%len(ref)]; leftHalo != want {
			return 0, fmt.Errorf("iteration %d: halo from rank %d is %d, want %d", it, left, leftHalo, want)
		}
		if p.block > 0 {
			if err := exchangeBlocks(c, p.block, ref, p.points, it); err != nil {
				return 0, err
			}
		}
		mine = localStep(mine, leftHalo, rightHalo, me*p.points, it)
		ref = step(ref, it)
		sum := make([]int64, 1)
		if err := mpi.Allreduce(c, []int64{total(mine)}, sum, mpi.Sum); err != nil {
			return 0, fmt.Errorf("iteration %d: allreduce: %w", it, err)
		}
		if want := total(ref); sum[0] != want {
			return 0, fmt.Errorf("iteration %d: sum %d, want %d", it, sum[0], want)
		}
		for i, v := range mine {
			if v != ref[me*p.points+i] {
				return 0, fmt.Errorf("iteration %d: point %d is %d, want %d", it, me*p.points+i, v, ref[me*p.points+i])
			}
		}
		if p.delay > 0 {
			time.Sleep(p.delay) // the work an iteration stands for; lets a test act mid-run
		}
	}
	return total(ref), nil
}

// localStep advances a rank's points given its halo values.
func localStep(u []int64, left, right int64, first, iter int) []int64 {
	n := len(u)
	out := make([]int64, n)
	for i := range u {
		l, r := left, right
		if i > 0 {
			l = u[i-1]
		}
		if i < n-1 {
			r = u[i+1]
		}
		out[i] = (l + 2*u[i] + 3*r + int64(first+i) + int64(iter)) % modulus
	}
	return out
}

func total(u []int64) int64 {
	var s int64
	for _, v := range u {
		s += v
	}
	return s
}

// exchangeBlocks sends every rank a block of size bytes computed from the
// sender's state, and checks the blocks received against the serial state.
func exchangeBlocks(c *mpi.Comm, size int, ref []int64, points, iter int) error {
	n, me := c.Size(), c.Rank()
	send := make([]byte, n*size)
	for dst := range n {
		fillBlock(send[dst*size:(dst+1)*size], ref[me*points], me, dst, iter)
	}
	recv := make([]byte, n*size)
	if err := mpi.Alltoall(c, send, recv); err != nil {
		return fmt.Errorf("iteration %d: alltoall: %w", iter, err)
	}
	want := make([]byte, size)
	for src := range n {
		fillBlock(want, ref[src*points], src, me, iter)
		got := recv[src*size : (src+1)*size]
		for i := range want {
			if got[i] != want[i] {
				return fmt.Errorf("iteration %d: block from rank %d differs at byte %d", iter, src, i)
			}
		}
	}
	return nil
}

// fillBlock fills b with bytes that depend on the sender's first point, the
// pair and the iteration (a xorshift stream).
func fillBlock(b []byte, seed int64, src, dst, iter int) {
	x := uint64(seed)*0x9e3779b97f4a7c15 ^ uint64(src)<<40 ^ uint64(dst)<<20 ^ uint64(iter) | 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
}

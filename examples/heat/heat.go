package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/zorilla-p2p/zorilla/mpi"
)

// The physics: u' = u + k (u[i-1] - 2u[i] + u[i+1]), cells outside the
// line held at 0. Every cell's update is the same arithmetic in the
// parallel and the serial run, so they agree bit for bit.
const k = 0.25

// Tags of the halo exchange and the final gather.
const (
	tagLeft = iota + 1
	tagRight
	tagGather
)

// initial is the starting temperature of cell i.
func initial(i int) float64 { return float64((i*7919)%1000) / 1000 }

// block is the range of cells rank r of n holds.
func block(cells, r, n int) (lo, hi int) {
	return cells * r / n, cells * (r + 1) / n
}

// state is what a rank saves at a checkpoint.
type state struct {
	step  uint64
	trace uint64
	u     []float64
}

func (s *state) save(w io.Writer) error {
	b := binary.LittleEndian.AppendUint64(nil, s.step)
	b = binary.LittleEndian.AppendUint64(b, s.trace)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(s.u)))
	for _, v := range s.u {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	_, err := w.Write(b)
	return err
}

func (s *state) load(r io.Reader, cells int) error {
	b, err := io.ReadAll(io.LimitReader(r, int64(24+8*cells)+1))
	if err != nil {
		return err
	}
	if len(b) < 24 {
		return errors.New("saved state too short")
	}
	s.step, s.trace = binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])
	if n := binary.LittleEndian.Uint64(b[16:]); n != uint64(len(s.u)) || len(b) != 24+8*len(s.u) {
		return fmt.Errorf("saved state holds %d cells in %d bytes, this rank has %d", n, len(b), len(s.u))
	}
	for i := range s.u {
		s.u[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[24+8*i:]))
	}
	return nil
}

// restore loads the state of a restarted run into s, whose cells start at
// lo: its own saved cells when the job restarted at the same size, or,
// when a malleable job restarted at another size, the cells of every old
// rank's block that overlaps its own (they must all have saved the same
// step and trace).
func restore(c *mpi.Comm, s *state, cells, lo int, out io.Writer) error {
	ss := c.Session()
	old := ss.RestoredSize()
	if r, ok := ss.Restored(); ok {
		if err := s.load(r, cells); err != nil {
			return err
		}
	} else if old > 0 {
		if err := s.gather(ss.RestoredRank, cells, lo, old); err != nil {
			return err
		}
	} else {
		return nil
	}
	if c.Rank() == 0 {
		fmt.Fprintf(out, "heat: restarted at step %d from checkpoint %d", s.step, ss.RestoredFrom())
		if old != c.Size() {
			fmt.Fprintf(out, " of %d ranks, now %d", old, c.Size())
		}
		fmt.Fprintln(out)
	}
	return nil
}

// gather fills s's cells [lo, lo+len(s.u)) from the blocks of the old
// ranks of a run of old ranks, each read with read.
func (s *state) gather(read func(rank int) (io.Reader, error), cells, lo, old int) error {
	hi := lo + len(s.u)
	first := true
	for r := range old {
		a, b := block(cells, r, old)
		if b <= lo || a >= hi {
			continue
		}
		in, err := read(r)
		if err != nil {
			return err
		}
		part := &state{u: make([]float64, b-a)}
		if err := part.load(in, cells); err != nil {
			return fmt.Errorf("old rank %d: %w", r, err)
		}
		if !first && (part.step != s.step || part.trace != s.trace) {
			return fmt.Errorf("old rank %d saved step %d, another step %d", r, part.step, s.step)
		}
		first, s.step, s.trace = false, part.step, part.trace
		copy(s.u[max(a, lo)-lo:min(b, hi)-lo], part.u[max(a, lo)-a:min(b, hi)-a])
	}
	if first {
		return fmt.Errorf("no old rank held cells %d to %d", lo, hi)
	}
	return nil
}

// fold adds a step's largest temperature to the trace.
func fold(trace uint64, max float64) uint64 {
	return trace*1099511628211 ^ math.Float64bits(max)
}

// stepCells computes one step of cells u (with halos left, right) into v.
func stepCells(u, v []float64, left, right float64) {
	for i := range u {
		l, r := left, right
		if i > 0 {
			l = u[i-1]
		}
		if i < len(u)-1 {
			r = u[i+1]
		}
		v[i] = u[i] + k*(l-2*u[i]+r)
	}
}

func maxOf(u []float64) float64 {
	m := math.Inf(-1)
	for _, v := range u {
		m = math.Max(m, v)
	}
	return m
}

// run is one rank's part.
func run(ctx context.Context, c *mpi.Comm, p params, out io.Writer) error {
	n, me := c.Size(), c.Rank()
	if p.cells < n {
		return fmt.Errorf("%d cells for %d ranks", p.cells, n)
	}
	lo, hi := block(p.cells, me, n)
	s := &state{u: make([]float64, hi-lo)}
	for i := range s.u {
		s.u[i] = initial(lo + i)
	}
	if err := restore(c, s, p.cells, lo, out); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	v := make([]float64, len(s.u))
	for ; s.step < uint64(p.steps); s.step++ {
		left, right, err := halo(c, s.u)
		if err != nil {
			return fmt.Errorf("step %d: %w", s.step, err)
		}
		stepCells(s.u, v, left, right)
		s.u, v = v, s.u
		m := []float64{0}
		if err := mpi.Allreduce(c, []float64{maxOf(s.u)}, m, mpi.Max); err != nil {
			return fmt.Errorf("step %d: %w", s.step, err)
		}
		s.trace = fold(s.trace, m[0])
		if work := time.Duration(p.pause)*time.Millisecond + time.Duration(p.work*len(s.u))*time.Microsecond; work > 0 {
			time.Sleep(work) // the work a real step would do
		}
		s.step++ // the state saved is "this many steps done"
		_, err = c.Checkpoint(ctx, s.save)
		s.step--
		if err != nil {
			return err
		}
	}
	return check(c, s, p, out)
}

// halo swaps edge cells with the neighbours; outside the line is 0.
func halo(c *mpi.Comm, u []float64) (left, right float64, err error) {
	n, me := c.Size(), c.Rank()
	in := []float64{0}
	if me > 0 {
		if _, err := mpi.Sendrecv(c, u[:1], me-1, tagLeft, in, me-1, tagRight); err != nil {
			return 0, 0, err
		}
		left = in[0]
	}
	if me < n-1 {
		if _, err := mpi.Sendrecv(c, u[len(u)-1:], me+1, tagRight, in, me+1, tagLeft); err != nil {
			return 0, 0, err
		}
		right = in[0]
	}
	return left, right, nil
}

// check compares each rank's cells with a serial run of just those cells
// and `steps` more on each side (a cell after s steps of this stencil
// depends only on the cells within s of it, so the window's wrong edges
// never reach the rank's own cells: the comparison is exact, bit for bit),
// and the trace with the per-step largest temperatures reduced over the
// ranks. No rank holds more than its part and two windows. The verdicts
// are combined by a reduction; the checksum (FNV-64a over the whole
// field's bits in order, then the trace) is passed down the ranks, and
// rank 0 prints it.
func check(c *mpi.Comm, s *state, p params, out io.Writer) error {
	n, me := c.Size(), c.Rank()
	lo, hi := block(p.cells, me, n)
	own, trace, err := serialPart(c, p, lo, hi)
	if err != nil {
		return err
	}
	bad := []int64{int64(p.cells)} // the first wrong cell, cells if none
	for i := range own {
		if math.Float64bits(own[i]) != math.Float64bits(s.u[i]) {
			bad[0] = int64(lo + i)
			break
		}
	}
	first := []int64{0}
	if err := mpi.Allreduce(c, bad, first, mpi.Min); err != nil {
		return err
	}
	switch {
	case bad[0] < int64(p.cells) && bad[0] == first[0]:
		i := int(bad[0]) - lo
		return fmt.Errorf("cell %d is %v, the serial run says %v", bad[0], s.u[i], own[i])
	case first[0] < int64(p.cells):
		return fmt.Errorf("cell %d differs from the serial run", first[0])
	case trace != s.trace:
		return fmt.Errorf("trace %x, the serial run's is %x", s.trace, trace)
	}
	sum, err := chainSum(c, s.u, trace)
	if err == nil && me == 0 {
		fmt.Fprintf(out, "heat OK %016x\n", sum)
	}
	return err
}

// FNV-64a, kept by hand so that one rank can go on from another's hash.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// fnvAdd hashes x's 8 little-endian bytes into h.
func fnvAdd(h, x uint64) uint64 {
	for range 8 {
		h = (h ^ x&0xff) * fnvPrime
		x >>= 8
	}
	return h
}

// chainSum hashes the field rank by rank: each rank goes on from the
// hash of the ranks before it; the last adds the trace and sends the sum
// to rank 0.
func chainSum(c *mpi.Comm, u []float64, trace uint64) (uint64, error) {
	n, me := c.Size(), c.Rank()
	h := []uint64{fnvOffset}
	if me > 0 {
		if _, err := mpi.Recv(c, h, me-1, tagGather); err != nil {
			return 0, err
		}
	}
	for _, v := range u {
		h[0] = fnvAdd(h[0], math.Float64bits(v))
	}
	last := n - 1
	switch {
	case me < last:
		if err := mpi.Send(c, h, me+1, tagGather); err != nil {
			return 0, err
		}
	case me > 0:
		h[0] = fnvAdd(h[0], trace)
		return h[0], mpi.Send(c, h, 0, tagGather)
	default:
		return fnvAdd(h[0], trace), nil
	}
	if me == 0 {
		if _, err := mpi.Recv(c, h, last, tagGather); err != nil {
			return 0, err
		}
	}
	return h[0], nil
}

// maxChunk bounds how many steps' maxima one reduction carries.
const maxChunk = 4096

// serialPart runs cells [lo, hi) serially with a margin of p.steps cells
// on each side (the line's ends where the margin passes them), and
// returns those cells and the trace of the whole line: each step's
// largest temperature of [lo, hi), reduced over the ranks in chunks.
func serialPart(c *mpi.Comm, p params, lo, hi int) ([]float64, uint64, error) {
	a, b := max(0, lo-p.steps), min(p.cells, hi+p.steps)
	u, v := make([]float64, b-a), make([]float64, b-a)
	for i := range u {
		u[i] = initial(a + i)
	}
	var trace uint64
	maxes := make([]float64, 0, min(p.steps, maxChunk))
	all := make([]float64, cap(maxes))
	for step := 0; step < p.steps; step++ {
		stepCells(u, v, 0, 0)
		u, v = v, u
		maxes = append(maxes, maxOf(u[lo-a:hi-a]))
		if len(maxes) < cap(maxes) && step < p.steps-1 {
			continue
		}
		if err := mpi.Allreduce(c, maxes, all[:len(maxes)], mpi.Max); err != nil {
			return nil, 0, fmt.Errorf("serial check: %w", err)
		}
		for _, m := range all[:len(maxes)] {
			trace = fold(trace, m)
		}
		maxes = maxes[:0]
	}
	return u[lo-a : hi-a], trace, nil
}

package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
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
	if r, ok := c.Session().Restored(); ok {
		if err := s.load(r, p.cells); err != nil {
			return fmt.Errorf("restore: %w", err)
		}
		if me == 0 {
			fmt.Fprintf(out, "heat: restarted at step %d from checkpoint %d\n", s.step, c.Session().RestoredFrom())
		}
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
		if p.pause > 0 {
			time.Sleep(time.Duration(p.pause) * time.Millisecond) // the work a real step would do
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

// check gathers the field on rank 0 and compares it with a serial run.
func check(c *mpi.Comm, s *state, p params, out io.Writer) error {
	n, me := c.Size(), c.Rank()
	if me != 0 {
		return mpi.Send(c, s.u, 0, tagGather)
	}
	field := append([]float64(nil), s.u...)
	for r := 1; r < n; r++ {
		lo, hi := block(p.cells, r, n)
		part := make([]float64, hi-lo)
		if _, err := mpi.Recv(c, part, r, tagGather); err != nil {
			return err
		}
		field = append(field, part...)
	}
	want, trace := serial(p)
	for i := range want {
		if math.Float64bits(want[i]) != math.Float64bits(field[i]) {
			return fmt.Errorf("cell %d is %v, the serial run says %v", i, field[i], want[i])
		}
	}
	if trace != s.trace {
		return fmt.Errorf("trace %x, the serial run's is %x", s.trace, trace)
	}
	h := fnv.New64a()
	for _, v := range field {
		_ = binary.Write(h, binary.LittleEndian, math.Float64bits(v))
	}
	_ = binary.Write(h, binary.LittleEndian, trace)
	fmt.Fprintf(out, "heat OK %016x\n", h.Sum64())
	return nil
}

// serial is the whole line's run on one rank: the reference.
func serial(p params) ([]float64, uint64) {
	u, v := make([]float64, p.cells), make([]float64, p.cells)
	for i := range u {
		u[i] = initial(i)
	}
	var trace uint64
	for step := 0; step < p.steps; step++ {
		stepCells(u, v, 0, 0)
		u, v = v, u
		trace = fold(trace, maxOf(u))
	}
	return u, trace
}

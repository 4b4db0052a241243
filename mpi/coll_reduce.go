package mpi

import "fmt"

// Reductions apply op in rank order, as MPI requires of an operation that
// is not commutative: every partial result covers a block of consecutive
// ranks, and a block is always combined with the block after it as
// op(lower, higher). An Op must therefore only be associative.

// combine folds in, the partial result of a neighbouring block of ranks,
// into acc: in covers the ranks before acc's when lower, after them
// otherwise. in is scratch afterwards.
func combine[T Elem](op Op[T], acc, in []T, lower bool) {
	if lower {
		op(in, acc)
		copy(acc, in)
		return
	}
	op(acc, in)
}

// Reduce combines send of every rank with op, in rank order, and leaves the
// result in recv at root. recv, used only at root, must be as long as send;
// it may be send itself.
func Reduce[T Elem](c *Comm, send, recv []T, op Op[T], root int) error {
	if err := c.checkRank(root, "root"); err != nil {
		return err
	}
	if op == nil {
		return argErr("nil op")
	}
	if c.rank == root && len(recv) != len(send) {
		return argErr("reduce: recv has %d elements, send %d", len(recv), len(send))
	}
	var err error
	if h := c.hier(); h != nil && h.blocked {
		err = reduceHier(c, h, send, recv, op, root)
	} else {
		err = reduceFlat(c, send, recv, op, root)
	}
	if err != nil {
		return fmt.Errorf("mpi: reduce: %w", err)
	}
	return nil
}

// reduceFlat is a binomial tree rooted at rank 0, where relative and real
// order agree, so that op is applied in rank order; rank 0 then hands the
// result to root.
func reduceFlat[T Elem](c *Comm, send, recv []T, op Op[T], root int) error {
	top := 0
	acc := recv
	if c.rank != root {
		acc = make([]T, len(send))
	}
	copy(acc, send)
	tmp := make([]T, len(send))
	n, rel := c.size, c.rel(top)
	if err := reduceTree(c, acc, tmp, op, n, rel, top); err != nil {
		return err
	}
	switch {
	case top == root:
		return nil
	case c.rank == top:
		return c.csend(wireOf(acc), root, tagReduce)
	case c.rank == root:
		return recvInto(c, recv, top, tagReduce)
	}
	return nil
}

// reduceTree is the binomial tree: each node combines its children's
// partial results into acc and sends it to its parent.
func reduceTree[T Elem](c *Comm, acc, tmp []T, op Op[T], n, rel, top int) error {
	for mask := 1; mask < n; mask <<= 1 {
		if rel&mask != 0 {
			return c.csend(wireOf(acc), c.abs(rel-mask, top), tagReduce)
		}
		if rel|mask < n {
			if err := recvInto(c, tmp, c.abs(rel|mask, top), tagReduce); err != nil {
				return err
			}
			op(acc, tmp)
		}
	}
	return nil
}

// recvInto receives exactly len(buf) elements from src into buf.
func recvInto[T Elem](c *Comm, buf []T, src, tag int) error {
	b := view(buf)
	if err := c.crecv(b, src, tag); err != nil {
		return err
	}
	fromWire(b, sizeOf[T]())
	return nil
}

// exchangeInto sends out to peer and receives as many elements from it into in.
func exchangeInto[T Elem](c *Comm, out, in []T, peer, tag int) error {
	b := view(in)
	if err := c.exchange(wireOf(out), peer, b, peer, tag); err != nil {
		return err
	}
	fromWire(b, sizeOf[T]())
	return nil
}

// Allreduce combines send of every rank with op, in rank order, and leaves
// the result in recv on every rank; recv may be send itself. Every rank
// ends with the same bits. Ranks on one host first combine their parts,
// then one rank per host runs recursive doubling (or, for large data,
// reduce-scatter and allgather), then hands the result to its host.
func Allreduce[T Elem](c *Comm, send, recv []T, op Op[T]) error {
	if op == nil {
		return argErr("nil op")
	}
	if len(recv) != len(send) {
		return argErr("allreduce: recv has %d elements, send %d", len(recv), len(send))
	}
	copy(recv, send)
	var err error
	if h := c.hier(); h != nil && h.blocked {
		err = allreduceHier(c, h, recv, op)
	} else {
		err = allreduce(c, recv, op)
	}
	if err != nil {
		return fmt.Errorf("mpi: allreduce: %w", err)
	}
	return nil
}

// largeAllreduce is the size in bytes from which Allreduce switches from
// recursive doubling (log2 p exchanges of the whole vector: best for
// latency) to reduce-scatter + allgather (2 log2 p exchanges whose sizes
// halve: about twice the vector in all, best for bandwidth). At 64 KiB a
// whole-vector exchange costs several times a message's latency, on the
// agent path as over shared memory.
const largeAllreduce = 64 << 10

// allreduce folds the ranks beyond the largest power of two p <= n into
// their neighbours (pairs 2i, 2i+1 for i < n-p), runs the p-rank algorithm,
// and hands the result back to the folded ranks.
func allreduce[T Elem](c *Comm, acc []T, op Op[T]) error {
	n, rank := c.size, c.rank
	p := 1
	for p*2 <= n {
		p *= 2
	}
	rem := n - p
	tmp := make([]T, len(acc))
	newRank := rank - rem // ranks >= 2*rem keep a place among the p
	if rank < 2*rem {
		if rank%2 == 0 { // folds into rank+1 and waits for the result
			if err := c.csend(wireOf(acc), rank+1, tagAllreduce); err != nil {
				return err
			}
			return recvInto(c, acc, rank+1, tagAllreduce)
		}
		if err := recvInto(c, tmp, rank-1, tagAllreduce); err != nil {
			return err
		}
		combine(op, acc, tmp, true)
		newRank = rank / 2
	}
	var err error
	if len(acc)*sizeOf[T]() >= largeAllreduce && len(acc) >= p {
		err = reduceScatterAllgather(c, acc, tmp, op, newRank, p, rem)
	} else {
		err = doubling(c, acc, tmp, op, newRank, p, rem)
	}
	if err == nil && rank < 2*rem { // odd rank of a folded pair: hand the result back
		err = c.csend(wireOf(acc), rank-1, tagAllreduce)
	}
	return err
}

// doubling is recursive doubling among p ranks: in step k each exchanges
// its partial result (of an aligned block of 2^k ranks) with its partner's.
func doubling[T Elem](c *Comm, acc, tmp []T, op Op[T], newRank, p, rem int) error {
	for mask := 1; mask < p; mask <<= 1 {
		peer := newRank ^ mask
		if err := exchangeInto(c, acc, tmp, fromNewRank(peer, rem), tagAllreduce); err != nil {
			return err
		}
		combine(op, acc, tmp, peer < newRank)
	}
	return nil
}

// reduceScatterAllgather is Rabenseifner's algorithm among p ranks, with
// distances doubling so that partial results stay blocks of consecutive
// ranks: in step k partners exchange half of the segment they share, each
// combining the half it keeps (halve); then the steps run backwards,
// exchanging the finished segments, until every rank has the whole vector
// (double).
func reduceScatterAllgather[T Elem](c *Comm, acc, tmp []T, op Op[T], newRank, p, rem int) error {
	steps, err := halve(c, acc, tmp, op, newRank, p, rem)
	if err != nil {
		return err
	}
	return double(c, acc, steps, newRank, rem)
}

// seg is a segment [lo, hi) of a vector.
type seg struct{ lo, hi int }

// halve is the reduce-scatter half: it returns the segment shared at each
// step, and after the last one the segment this rank holds finished
// (combined over the p ranks) as the last element.
func halve[T Elem](c *Comm, acc, tmp []T, op Op[T], newRank, p, rem int) ([]seg, error) {
	steps := []seg{{0, len(acc)}}
	for mask := 1; mask < p; mask <<= 1 {
		cur := steps[len(steps)-1]
		peer := fromNewRank(newRank^mask, rem)
		mid := cur.lo + (cur.hi-cur.lo)/2
		keep, give := seg{cur.lo, mid}, seg{mid, cur.hi}
		if newRank&mask != 0 {
			keep, give = give, keep
		}
		in := tmp[keep.lo:keep.hi]
		if err := c.exchange(wireOf(acc[give.lo:give.hi]), peer, view(in), peer, tagAllreduce); err != nil {
			return nil, err
		}
		fromWire(view(in), sizeOf[T]())
		combine(op, acc[keep.lo:keep.hi], in, newRank&mask != 0)
		steps = append(steps, keep)
	}
	return steps, nil
}

// double is the allgather half: it undoes halve's steps, exchanging the
// finished segments.
func double[T Elem](c *Comm, acc []T, steps []seg, newRank, rem int) error {
	for i := len(steps) - 1; i > 0; i-- {
		peer := fromNewRank(newRank^(1<<(i-1)), rem)
		mine, whole := steps[i], steps[i-1]
		other := seg{whole.lo, mine.lo}
		if mine.lo == whole.lo {
			other = seg{mine.hi, whole.hi}
		}
		in := view(acc[other.lo:other.hi])
		if err := c.exchange(wireOf(acc[mine.lo:mine.hi]), peer, in, peer, tagAllreduce); err != nil {
			return err
		}
		fromWire(in, sizeOf[T]())
	}
	return nil
}

// fromNewRank maps a rank among the p doubling ranks back to a rank of c.
func fromNewRank(nr, rem int) int {
	if nr < rem {
		return nr*2 + 1
	}
	return nr + rem
}

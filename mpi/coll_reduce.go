package mpi

import "fmt"

// Reduce combines send of every rank with op and leaves the result in recv
// at root (binomial tree). recv, used only at root, must be as long as send;
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
	acc := recv
	if c.rank != root {
		acc = make([]T, len(send))
	}
	copy(acc, send)
	tmp := make([]T, len(send))
	n, rel := c.size, c.rel(root)
	for mask := 1; mask < n; mask <<= 1 {
		if rel&mask != 0 {
			if err := c.csend(wireOf(acc), c.abs(rel-mask, root), tagReduce); err != nil {
				return fmt.Errorf("mpi: reduce: %w", err)
			}
			return nil
		}
		if rel|mask < n {
			if err := recvInto(c, tmp, c.abs(rel|mask, root), tagReduce); err != nil {
				return fmt.Errorf("mpi: reduce: %w", err)
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

// Allreduce combines send of every rank with op and leaves the result in
// recv on every rank; recv may be send itself. It uses recursive doubling;
// when the size is not a power of two, the first 2*(n-p) ranks (p the
// largest power of two <= n) first fold pairwise so p ranks double, then
// hand the result back. Every rank ends with the same bits.
func Allreduce[T Elem](c *Comm, send, recv []T, op Op[T]) error {
	if op == nil {
		return argErr("nil op")
	}
	if len(recv) != len(send) {
		return argErr("allreduce: recv has %d elements, send %d", len(recv), len(send))
	}
	copy(recv, send)
	if err := allreduce(c, recv, op); err != nil {
		return fmt.Errorf("mpi: allreduce: %w", err)
	}
	return nil
}

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
		op(acc, tmp)
		newRank = rank / 2
	}
	for mask := 1; mask < p; mask <<= 1 {
		peer := fromNewRank(newRank^mask, rem)
		if err := exchangeInto(c, acc, tmp, peer, tagAllreduce); err != nil {
			return err
		}
		op(acc, tmp)
	}
	if rank < 2*rem { // odd rank of a folded pair: hand the result back
		return c.csend(wireOf(acc), rank-1, tagAllreduce)
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

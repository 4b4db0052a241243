package mpi

import "fmt"

// Collectives are built on point-to-point messages in the communicator's
// collective context, with algorithms whose depth is logarithmic in the
// number of ranks and which are correct for any size (odd,
// non-power-of-two): dissemination for Barrier, binomial trees for Bcast,
// Reduce, Gather and Scatter, recursive doubling for Allreduce, Bruck's
// algorithm for Allgather and pairwise exchange for Alltoall(v). No rank
// talks to all the others, except in Alltoall(v) among ranks that all
// share one host, which posts every block at once (alltoallvPosted). Every rank must call the same collectives in the
// same order with matching arguments; data is moved in wire (little-endian)
// order and put back in native order at the end.

// Tags of the collectives inside the collective context.
const (
	tagBarrier = iota + 1
	tagBcast
	tagReduce
	tagAllreduce
	tagGather
	tagScatter
	tagAllgather
	tagAlltoall
	tagAlltoallv
	tagReady // a rank posted its receives of an Alltoall(v) on one host (alltoallvPosted)
)

// abs turns a rank relative to root back into a rank of c.
func (c *Comm) abs(rel, root int) int { return (rel + root) % c.size }

// rel is c's own rank relative to root.
func (c *Comm) rel(root int) int { return (c.rank - root + c.size) % c.size }

// csend sends b to dst in the collective context.
func (c *Comm) csend(b []byte, dst, tag int) error {
	return c.send(c.coll, b, dst, c.tags+tag)
}

// crecv receives exactly len(b) bytes from src in the collective context.
func (c *Comm) crecv(b []byte, src, tag int) error {
	st, err := c.recvOwn(c.coll, b, 1, src, c.tags+tag)
	return collBytes(st, err, len(b), src)
}

// cwait waits for a collective's receive of exactly n bytes from src.
func (c *Comm) cwait(r *Request, n, src int) error {
	st, err := r.Wait()
	return collBytes(st, err, n, src)
}

// collBytes checks that a collective's receive from src got n bytes.
func collBytes(st Status, err error, n, src int) error {
	if err == nil && st.Bytes != n {
		err = fmt.Errorf("%w: collective got %d bytes from rank %d, expected %d (arguments differ between ranks?)",
			ErrArg, st.Bytes, src, n)
	}
	return err
}

// exchange sends sb to dst while receiving exactly len(rb) bytes from src.
// The receive is posted first, so that src's message goes straight into
// rb however early it comes, rather than into a buffer of its own first.
func (c *Comm) exchange(sb []byte, dst int, rb []byte, src, tag int) error {
	rr := c.irecv(c.coll, rb, 1, src, c.tags+tag)
	sr := c.isend(c.coll, sb, dst, c.tags+tag, false)
	err := c.cwait(rr, len(rb), src)
	if _, serr := sr.Wait(); err == nil {
		err = serr
	}
	return err
}

// Barrier returns once every rank of c has called it (dissemination
// algorithm: ceil(log2 n) rounds of one message each way, among one rank
// per host when ranks share hosts).
func (c *Comm) Barrier() error {
	var err error
	if h := c.hier(); h != nil {
		err = barrierHier(c, h)
	} else {
		err = barrierFlat(c)
	}
	if err != nil {
		return fmt.Errorf("mpi: barrier: %w", err)
	}
	return nil
}

func barrierFlat(c *Comm) error {
	for k := 1; k < c.size; k <<= 1 {
		dst, src := (c.rank+k)%c.size, (c.rank-k+c.size)%c.size
		if err := c.exchange(nil, dst, nil, src, tagBarrier); err != nil {
			return err
		}
	}
	return nil
}

// Bcast copies root's buf into buf on every rank of c (binomial tree, first
// among one rank per host, then within each host). Every rank passes a buf
// of the same length.
func Bcast[T Elem](c *Comm, buf []T, root int) error {
	if err := c.checkRank(root, "root"); err != nil {
		return err
	}
	var err error
	if h := c.hier(); h != nil {
		err = bcastHier(c, h, buf, root)
	} else {
		err = bcastFlat(c, buf, root)
	}
	if err != nil {
		return fmt.Errorf("mpi: bcast: %w", err)
	}
	return nil
}

func bcastFlat[T Elem](c *Comm, buf []T, root int) error {
	n, rel := c.size, c.rel(root)
	data := view(buf)
	if rel == 0 {
		data = wireOf(buf)
	}
	mask := 1
	for ; mask < n; mask <<= 1 {
		if rel&mask != 0 {
			if err := c.crecv(data, c.abs(rel-mask, root), tagBcast); err != nil {
				return err
			}
			break
		}
	}
	for mask >>= 1; mask > 0; mask >>= 1 {
		if rel+mask < n {
			if err := c.csend(data, c.abs(rel+mask, root), tagBcast); err != nil {
				return err
			}
		}
	}
	if rel != 0 {
		fromWire(data, sizeOf[T]())
	}
	return nil
}

package mpi

import "fmt"

// subtree is how many ranks (relative to the root) a binomial-tree node rel
// gathers or scatters for: its own and its children's.
func subtree(rel, n int) int {
	if rel == 0 {
		return n
	}
	low := rel & -rel
	return min(low, n-rel)
}

// Gather collects send from every rank into recv at root, rank i's block at
// recv[i*len(send):]. recv, used only at root, holds Size()*len(send)
// elements. Binomial tree: a node forwards its whole subtree's blocks.
func Gather[T Elem](c *Comm, send, recv []T, root int) error {
	if err := c.checkRank(root, "root"); err != nil {
		return err
	}
	if c.rank == root && len(recv) != c.size*len(send) {
		return argErr("gather: recv has %d elements, want %d", len(recv), c.size*len(send))
	}
	var err error
	if h := c.hier(); h != nil {
		err = gatherHier(c, h, send, recv, root)
	} else {
		err = gatherFlat(c, send, recv, root)
	}
	if err != nil {
		return fmt.Errorf("mpi: gather: %w", err)
	}
	return nil
}

func gatherFlat[T Elem](c *Comm, send, recv []T, root int) error {
	n, rel, b := c.size, c.rel(root), len(send)*sizeOf[T]()
	var tmp []byte
	if root == 0 && rel == 0 {
		tmp = view(recv) // relative order is rank order: gather in place
	} else {
		tmp = make([]byte, subtree(rel, n)*b)
	}
	copy(tmp, wireOf(send))
	for mask := 1; mask < n; mask <<= 1 {
		if rel&mask != 0 {
			return c.csend(tmp[:subtree(rel, n)*b], c.abs(rel-mask, root), tagGather)
		}
		if src := rel | mask; src < n {
			if err := c.crecv(tmp[mask*b:(mask+subtree(src, n))*b], c.abs(src, root), tagGather); err != nil {
				return err
			}
		}
	}
	out := view(recv)
	if root != 0 {
		for r := 0; r < n; r++ {
			a := c.abs(r, root)
			copy(out[a*b:(a+1)*b], tmp[r*b:(r+1)*b])
		}
	}
	fromWire(out, sizeOf[T]())
	return nil
}

// Scatter sends block i of root's send (send[i*len(recv):]) to rank i's
// recv. send, used only at root, holds Size()*len(recv) elements. Where
// ranks share hosts, root's leader sends each host leader its host's
// blocks (through the sites), and the leader scatters them.
func Scatter[T Elem](c *Comm, send, recv []T, root int) error {
	if err := c.checkRank(root, "root"); err != nil {
		return err
	}
	if c.rank == root && len(send) != c.size*len(recv) {
		return argErr("scatter: send has %d elements, want %d", len(send), c.size*len(recv))
	}
	var err error
	if h := c.hier(); h != nil {
		counts, displs := make([]int, c.size), make([]int, c.size)
		for i := range counts {
			counts[i], displs[i] = len(recv), i*len(recv)
		}
		err = scattervHier(c, h, send, counts, displs, recv, root)
	} else {
		err = scatterFlat(c, send, recv, root)
	}
	if err != nil {
		return fmt.Errorf("mpi: scatter: %w", err)
	}
	return nil
}

func scatterFlat[T Elem](c *Comm, send, recv []T, root int) error {
	n, rel, b := c.size, c.rel(root), len(recv)*sizeOf[T]()
	tmp := scatterSource(c, send, rel, root, b)
	mask := 1
	for ; mask < n; mask <<= 1 {
		if rel&mask != 0 {
			if err := c.crecv(tmp, c.abs(rel-mask, root), tagScatter); err != nil {
				return err
			}
			break
		}
	}
	for mask >>= 1; mask > 0; mask >>= 1 {
		if dst := rel + mask; dst < n {
			if err := c.csend(tmp[mask*b:(mask+subtree(dst, n))*b], c.abs(dst, root), tagScatter); err != nil {
				return err
			}
		}
	}
	out := view(recv)
	copy(out, tmp[:b])
	fromWire(out, sizeOf[T]())
	return nil
}

// scatterSource is the buffer a scatter node works from: at the root, send
// in wire order rotated so relative rank r's block is at r*b; elsewhere room
// for the node's subtree.
func scatterSource[T Elem](c *Comm, send []T, rel, root, b int) []byte {
	n := c.size
	if rel != 0 {
		return make([]byte, subtree(rel, n)*b)
	}
	w := wireOf(send)
	if root == 0 {
		return w
	}
	tmp := make([]byte, n*b)
	for r := 0; r < n; r++ {
		a := c.abs(r, root)
		copy(tmp[r*b:(r+1)*b], w[a*b:(a+1)*b])
	}
	return tmp
}

// Allgather collects send from every rank into recv on every rank, rank i's
// block at recv[i*len(send):] (Bruck's algorithm: ceil(log2 n) exchanges,
// any n).
func Allgather[T Elem](c *Comm, send, recv []T) error {
	if len(recv) != c.size*len(send) {
		return argErr("allgather: recv has %d elements, want %d", len(recv), c.size*len(send))
	}
	if err := allgatherAny(c, send, recv); err != nil {
		return fmt.Errorf("mpi: allgather: %w", err)
	}
	return nil
}

func allgatherFlat[T Elem](c *Comm, send, recv []T) error {
	n, b := c.size, len(send)*sizeOf[T]()
	tmp := make([]byte, n*b) // tmp block i: from rank (rank+i) mod n
	copy(tmp, wireOf(send))
	for pof := 1; pof < n; pof *= 2 {
		cnt := min(pof, n-pof)
		dst, src := (c.rank-pof+n)%n, (c.rank+pof)%n
		if err := c.exchange(tmp[:cnt*b], dst, tmp[pof*b:(pof+cnt)*b], src, tagAllgather); err != nil {
			return err
		}
	}
	out := view(recv)
	for i := 0; i < n; i++ {
		r := (c.rank + i) % n
		copy(out[r*b:(r+1)*b], tmp[i*b:(i+1)*b])
	}
	fromWire(out, sizeOf[T]())
	return nil
}

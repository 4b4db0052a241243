package mpi

import "fmt"

// The v-variants move blocks of a different size per rank. Gatherv and
// Scatterv are linear (the root talks to every rank, as MPICH does: the
// root's link carries every block once whatever the tree); Allgatherv is a
// ring of n-1 steps, each rank passing on the block it received last.
// Where ranks share hosts, all three go through the host leaders
// (coll_hier_v.go).

// Tags of these collectives inside the collective context.
const (
	tagGatherv = 16 + iota
	tagScatterv
	tagAllgatherv
	tagScan
	tagExscan
)

// Gatherv collects send from every rank into recv at root: rank i's
// elements land at recv[displs[i]:displs[i]+counts[i]], and counts[i] must
// be rank i's len(send). recv, counts and displs are used only at root.
func Gatherv[T Elem](c *Comm, send, recv []T, counts, displs []int, root int) error {
	if err := c.checkRank(root, "root"); err != nil {
		return err
	}
	if c.rank == root {
		if err := checkBlocks(c.size, len(recv), counts, displs); err != nil {
			return fmt.Errorf("mpi: gatherv: %w", err)
		}
		if counts[root] != len(send) {
			return argErr("gatherv: root sends %d elements, counts say %d", len(send), counts[root])
		}
	}
	if err := gathervRoot(c, send, recv, counts, displs, root); err != nil {
		return fmt.Errorf("mpi: gatherv: %w", err)
	}
	return nil
}

func gathervFlat[T Elem](c *Comm, send, recv []T, counts, displs []int, root int) error {
	if c.rank != root {
		return c.csend(wireOf(send), root, tagGatherv)
	}
	e := sizeOf[T]()
	reqs := make([]*Request, c.size)
	for r := range reqs {
		if r != root {
			reqs[r] = c.irecv(c.coll, view(recv[displs[r]:displs[r]+counts[r]]), 1, r, c.tags+tagGatherv)
		}
	}
	copy(recv[displs[root]:], send)
	var first error
	for r, req := range reqs {
		if req == nil {
			continue
		}
		b := view(recv[displs[r] : displs[r]+counts[r]])
		if err := c.cwait(req, len(b), r); err != nil && first == nil {
			first = err
		}
		fromWire(b, e)
	}
	return first
}

// Scatterv sends send[displs[i]:displs[i]+counts[i]] from root to rank i's
// recv, which must be counts[i] long. send, counts and displs are used only
// at root.
func Scatterv[T Elem](c *Comm, send []T, counts, displs []int, recv []T, root int) error {
	if err := c.checkRank(root, "root"); err != nil {
		return err
	}
	if c.rank == root {
		if err := checkBlocks(c.size, len(send), counts, displs); err != nil {
			return fmt.Errorf("mpi: scatterv: %w", err)
		}
		if counts[root] != len(recv) {
			return argErr("scatterv: root receives %d elements, counts say %d", len(recv), counts[root])
		}
	}
	if err := scattervRoot(c, send, counts, displs, recv, root); err != nil {
		return fmt.Errorf("mpi: scatterv: %w", err)
	}
	return nil
}

// Allgatherv collects send from every rank into recv on every rank: rank
// i's elements land at recv[displs[i]:displs[i]+counts[i]], and counts[i]
// must be rank i's len(send). Every rank passes the same counts and displs.
func Allgatherv[T Elem](c *Comm, send, recv []T, counts, displs []int) error {
	if err := checkBlocks(c.size, len(recv), counts, displs); err != nil {
		return fmt.Errorf("mpi: allgatherv: %w", err)
	}
	if counts[c.rank] != len(send) {
		return argErr("allgatherv: rank %d sends %d elements, counts say %d", c.rank, len(send), counts[c.rank])
	}
	if err := allgathervAny(c, send, recv, counts, displs); err != nil {
		return fmt.Errorf("mpi: allgatherv: %w", err)
	}
	return nil
}

func allgathervFlat[T Elem](c *Comm, send, recv []T, counts, displs []int) error {
	n, e := c.size, sizeOf[T]()
	copy(recv[displs[c.rank]:], send)
	right, left := (c.rank+1)%n, (c.rank-1+n)%n
	block := func(r int) []T { return recv[displs[r] : displs[r]+counts[r]] }
	for i := 0; i < n-1; i++ {
		out, in := (c.rank-i+n)%n, (c.rank-i-1+n)%n
		b := view(block(in))
		if err := c.exchange(wireOf(block(out)), right, b, left, tagAllgatherv); err != nil {
			return err
		}
		fromWire(b, e)
	}
	return nil
}

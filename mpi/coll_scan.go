package mpi

import "fmt"

// Scan leaves in recv on rank i the combination, in rank order, of send of
// ranks 0..i (MPI_Scan, an inclusive prefix reduction). recv may be send
// itself. Recursive doubling: ceil(log2 n) exchanges, host by host when
// every host holds consecutive ranks (scanHier).
func Scan[T Elem](c *Comm, send, recv []T, op Op[T]) error {
	if err := scanArgs(send, recv, op); err != nil {
		return err
	}
	if err := scanAny(c, send, recv, op, true, tagScan); err != nil {
		return fmt.Errorf("mpi: scan: %w", err)
	}
	return nil
}

// Exscan leaves in recv on rank i > 0 the combination, in rank order, of
// send of ranks 0..i-1 (MPI_Exscan, an exclusive prefix reduction); rank
// 0's recv is left as it was.
func Exscan[T Elem](c *Comm, send, recv []T, op Op[T]) error {
	if err := scanArgs(send, recv, op); err != nil {
		return err
	}
	if err := scanAny(c, send, recv, op, false, tagExscan); err != nil {
		return fmt.Errorf("mpi: exscan: %w", err)
	}
	return nil
}

func scanArgs[T Elem](send, recv []T, op Op[T]) error {
	if op == nil {
		return argErr("nil op")
	}
	if len(recv) != len(send) {
		return argErr("scan: recv has %d elements, send %d", len(recv), len(send))
	}
	return nil
}

// scanAny is scan, or host by host when c's hosts (or sites) hold
// consecutive ranks, which keeps the rank order.
func scanAny[T Elem](c *Comm, send, recv []T, op Op[T], inclusive bool, tag int) error {
	if h := c.hier(); h != nil && h.blocked {
		return scanHier(c, h, send, recv, op, inclusive, tag)
	}
	return scan(c, send, recv, op, inclusive, tag)
}

// scanHier is the prefix reduction on a blocked layout: the ranks of each
// host scan among themselves, the last rank of each host (which holds the
// host's total) runs an exclusive scan of the totals with the other
// hosts' last ranks (host by host in sites when they have them), and hands
// the combination of the hosts before its own to its host, whose ranks put
// it in front of their own prefix.
func scanHier[T Elem](c *Comm, l *layout, send, recv []T, op Op[T], inclusive bool, tag int) error {
	h := l.host[c.rank]
	mine := l.members[h]
	local := c.view(mine, l.off+tagsLocal)
	part := make([]T, len(send)) // this rank's prefix within its host
	if err := scan(local, send, part, op, inclusive, tag); err != nil {
		return err
	}
	last := local.size - 1
	pre := make([]T, len(send)) // the hosts before this one, combined
	if local.rank == last && len(l.members) > 1 {
		total := append([]T(nil), send...)
		if !inclusive && last > 0 {
			total = append(total[:0], part...)
			op(total, send)
		} else if inclusive {
			copy(total, part)
		}
		lasts := make([]int, len(l.members))
		for i, m := range l.members {
			lasts[i] = m[len(m)-1]
		}
		v := c.view(lasts, l.off+tagsLeaders)
		if l.sites != nil {
			v.flat, v.hosts = false, &hostsOnce{l: l.sites}
			v.hosts.once.Do(func() {})
		}
		if err := scanAny(v, total, pre, op, false, tag); err != nil {
			return err
		}
	}
	if h > 0 {
		if err := bcastFlat(local, pre, last); err != nil {
			return err
		}
	}
	switch {
	case h == 0 && !inclusive && local.rank == 0: // rank 0: nothing before it
	case h == 0:
		copy(recv, part)
	case !inclusive && local.rank == 0:
		copy(recv, pre)
	default:
		combine(op, part, pre, true)
		copy(recv, part)
	}
	return nil
}

// scan is recursive doubling: partial covers an aligned block of ranks
// around this one and grows by the partner's block at each step; recv
// takes in every block below this rank (and, inclusive, this rank's own
// data first).
func scan[T Elem](c *Comm, send, recv []T, op Op[T], inclusive bool, tag int) error {
	partial := append([]T(nil), send...)
	have := inclusive
	if inclusive {
		copy(recv, send)
	}
	tmp, low := make([]T, len(send)), make([]T, len(send))
	for mask := 1; mask < c.size; mask <<= 1 {
		peer := c.rank ^ mask
		if peer >= c.size {
			continue
		}
		if err := exchangeInto(c, partial, tmp, peer, tag); err != nil {
			return err
		}
		if peer > c.rank {
			op(partial, tmp)
			continue
		}
		if have {
			copy(low, tmp)
			combine(op, recv, low, true)
		} else {
			copy(recv, tmp)
			have = true
		}
		combine(op, partial, tmp, true)
	}
	return nil
}

// ReduceScatter combines send of every rank with op, in rank order, and
// leaves block i of the result (counts[i] elements, blocks one after the
// other) in rank i's recv (MPI_Reduce_scatter). Every rank passes the same
// counts; send holds their sum, recv counts[rank]. It reduces to rank 0
// and scatters from there, both host by host where ranks share hosts.
func ReduceScatter[T Elem](c *Comm, send, recv []T, counts []int, op Op[T]) error {
	if op == nil {
		return argErr("nil op")
	}
	if len(counts) != c.size {
		return argErr("reduce scatter: %d counts for %d ranks", len(counts), c.size)
	}
	displs, total := make([]int, c.size), 0
	for i, k := range counts {
		if k < 0 {
			return argErr("reduce scatter: count %d of rank %d", k, i)
		}
		displs[i], total = total, total+k
	}
	if len(send) != total || len(recv) != counts[c.rank] {
		return argErr("reduce scatter: send %d and recv %d elements, counts want %d and %d",
			len(send), len(recv), total, counts[c.rank])
	}
	var sum []T
	if c.rank == 0 {
		sum = make([]T, total)
	}
	if err := Reduce(c, send, sum, op, 0); err != nil {
		return fmt.Errorf("mpi: reduce scatter: %w", err)
	}
	if err := scattervAny(c, sum, counts, displs, recv, 0); err != nil {
		return fmt.Errorf("mpi: reduce scatter: %w", err)
	}
	return nil
}

package mpi

import (
	"fmt"
	"slices"
)

// Alltoall sends block j of send to rank j and receives rank j's block into
// block j of recv; both hold Size() equal blocks. Pairwise exchange: in step
// i each rank sends to rank+i and receives from rank-i (all steps posted at
// once when every rank shares this host: alltoallvPosted). Up to hierAlltoall
// bytes per rank, when ranks share hosts, each host's leader gathers its
// ranks' buffers, exchanges one message with each other leader and
// scatters what came back: one message per pair of hosts instead of one per
// pair of ranks.
func Alltoall[T Elem](c *Comm, send, recv []T) error {
	n := c.size
	if len(send)%n != 0 || len(recv) != len(send) {
		return argErr("alltoall: send %d and recv %d elements for %d ranks", len(send), len(recv), n)
	}
	k := len(send) / n
	if h := c.hier(); h != nil && len(send)*sizeOf[T]() <= hierAlltoall {
		if err := alltoallHier(c, h, send, recv, k); err != nil {
			return fmt.Errorf("mpi: alltoall: %w", err)
		}
		return nil
	}
	counts, displs := make([]int, n), make([]int, n)
	for i := range counts {
		counts[i], displs[i] = k, i*k
	}
	if err := alltoallv(c, send, counts, displs, recv, counts, displs, tagAlltoall); err != nil {
		return fmt.Errorf("mpi: alltoall: %w", err)
	}
	return nil
}

// Alltoallv is Alltoall with a size per pair: sendCounts[j] elements from
// send[sendDispls[j]:] go to rank j, and recvCounts[j] elements from rank j
// land at recv[recvDispls[j]:]. recvCounts[j] must equal rank j's
// sendCounts for this rank. When ranks share hosts, blocks of at most
// 64 KiB / Size() bytes between hosts go through the host leaders (and
// the sites' leaders), the others directly (alltoallvHier).
func Alltoallv[T Elem](c *Comm, send []T, sendCounts, sendDispls []int, recv []T, recvCounts, recvDispls []int) error {
	if err := checkBlocks(c.size, len(send), sendCounts, sendDispls); err != nil {
		return fmt.Errorf("mpi: alltoallv send: %w", err)
	}
	if err := checkBlocks(c.size, len(recv), recvCounts, recvDispls); err != nil {
		return fmt.Errorf("mpi: alltoallv recv: %w", err)
	}
	if err := alltoallvAny(c, send, sendCounts, sendDispls, recv, recvCounts, recvDispls, tagAlltoallv); err != nil {
		return fmt.Errorf("mpi: alltoallv: %w", err)
	}
	return nil
}

// checkBlocks checks n counts and displacements lie inside a buffer of l.
func checkBlocks(n, l int, counts, displs []int) error {
	if len(counts) != n || len(displs) != n {
		return argErr("%d counts and %d displacements for %d ranks", len(counts), len(displs), n)
	}
	for i := range counts {
		if counts[i] < 0 || displs[i] < 0 || displs[i] > l || counts[i] > l-displs[i] {
			return argErr("block %d: %d elements at %d outside a buffer of %d", i, counts[i], displs[i], l)
		}
	}
	return nil
}

func alltoallv[T Elem](c *Comm, send []T, sc, sd []int, recv []T, rc, rd []int, tag int) error {
	if c.shmAll() {
		return alltoallvPosted(c, send, sc, sd, recv, rc, rd, tag)
	}
	n, rank := c.size, c.rank
	copy(recv[rd[rank]:rd[rank]+rc[rank]], send[sd[rank]:sd[rank]+sc[rank]])
	w := wireOf(send)
	out := view(recv)
	e := sizeOf[T]()
	for i := 1; i < n; i++ {
		dst, src := (rank+i)%n, (rank-i+n)%n
		sb := w[sd[dst]*e : (sd[dst]+sc[dst])*e]
		rb := out[rd[src]*e : (rd[src]+rc[src])*e]
		if err := c.exchange(sb, dst, rb, src, tag); err != nil {
			return err
		}
		fromWire(rb, e)
	}
	return nil
}

// alltoallvPosted is alltoallv among ranks that all share this rank's
// host: it posts every receive and tells each source so (an empty message,
// tagReady, to rank-1 first), copies its own block meanwhile, sends each
// block as soon as its destination said it is ready, and waits for all.
// Each block goes straight through the ring between its two ranks, like a
// pairwise step, but no rank waits for one partner before it starts on
// the next: with more ranks than cores, the ring readers and the writer
// move every block whenever their rank is on a core, instead of each step
// waiting until both partners are. And no block reaches a rank before its
// receive is posted: a rank still computing would have it read into a
// buffer of its own by another thread, taking a core from the ranks that
// compute and copying the block twice (IS on 4 ranks and 2 cores spent a
// third of its exchange so; BENCHMARKS.md).
func alltoallvPosted[T Elem](c *Comm, send []T, sc, sd []int, recv []T, rc, rd []int, tag int) error {
	n, me, e := c.size, c.rank, sizeOf[T]()
	w, out := wireOf(send), view(recv)
	recvs := make([]*Request, n)
	for i := 1; i < n; i++ {
		src := (me - i + n) % n
		recvs[src] = c.irecv(c.coll, out[rd[src]*e:(rd[src]+rc[src])*e], 1, src, c.tags+tag)
	}
	if eng := c.s.startEngine(c.peers()); eng != nil {
		return alltoallvEngine(c, eng, send, sc, sd, recv, rc, rd, tag, recvs)
	}
	sends := make([]*Request, 0, 2*(n-1))
	ready := make([]*Request, n) // by destination: it posted its receives
	for i := 1; i < n; i++ {
		src, dst := (me-i+n)%n, (me+i)%n
		sends = append(sends, c.isend(c.coll, nil, src, c.tags+tagReady, false))
		ready[dst] = c.irecv(c.coll, nil, 1, dst, c.tags+tagReady)
	}
	copy(recv[rd[me]:rd[me]+rc[me]], send[sd[me]:sd[me]+sc[me]])
	var err error
	for {
		dst, _, werr := Waitany(ready)
		if dst < 0 {
			break
		}
		if werr != nil && err == nil {
			err = werr
		}
		sends = append(sends, c.isend(c.coll, w[sd[dst]*e:(sd[dst]+sc[dst])*e], dst, c.tags+tag, false))
	}
	if werr := waitBlocks(c, recvs, out, rc, rd, e); err == nil {
		err = werr
	}
	if werr := Waitall(sends...); err == nil {
		err = werr
	}
	return err
}

// waitBlocks waits for the posted receives of alltoallvPosted, each of
// block src of out, and returns the first error.
func waitBlocks(c *Comm, recvs []*Request, out []byte, rc, rd []int, e int) error {
	var err error
	for src, r := range recvs {
		if r == nil {
			continue
		}
		rb := out[rd[src]*e : (rd[src]+rc[src])*e]
		if werr := c.cwait(r, len(rb), src); werr != nil && err == nil {
			err = werr
		}
		fromWire(rb, e)
	}
	return err
}

// alltoallvEngine is alltoallvPosted run by the exchange engine
// (shm_engine.go): the same messages in the same order, each ready first
// and each block once its destination said it is ready, all moved by the
// calling goroutine. The receives are posted.
func alltoallvEngine[T Elem](c *Comm, eng *shmEngine, send []T, sc, sd []int, recv []T, rc, rd []int, tag int, recvs []*Request) error {
	n, me, e := c.size, c.rank, sizeOf[T]()
	w, out := wireOf(send), view(recv)
	ready := make([]*Request, n) // by destination: it posted its receives
	for i := 1; i < n; i++ {
		src, dst := (me-i+n)%n, (me+i)%n
		eng.send(c.coll, nil, c.worldRank(src), c.tags+tagReady, nil)
		ready[dst] = c.irecv(c.coll, nil, 1, dst, c.tags+tagReady)
	}
	for i := 1; i < n; i++ {
		dst := (me + i) % n
		eng.send(c.coll, w[sd[dst]*e:(sd[dst]+sc[dst])*e], c.worldRank(dst), c.tags+tag, ready[dst])
	}
	err := eng.writeAll()
	copy(recv[rd[me]:rd[me]+rc[me]], send[sd[me]:sd[me]+sc[me]])
	if err == nil {
		err = eng.run(func() bool {
			for _, r := range recvs {
				if r != nil && !r.completed() {
					return false
				}
			}
			return eng.written()
		})
	}
	eng.stop()
	if werr := waitBlocks(c, recvs, out, rc, rd, e); err == nil {
		err = werr
	}
	if werr := Waitall(slices.DeleteFunc(ready, func(r *Request) bool { return r == nil })...); err == nil {
		err = werr
	}
	return err
}

// peers returns the world ranks of c's other ranks.
func (c *Comm) peers() []int {
	p := make([]int, 0, c.size-1)
	for r := range c.size {
		if r != c.rank {
			p = append(p, c.worldRank(r))
		}
	}
	return p
}

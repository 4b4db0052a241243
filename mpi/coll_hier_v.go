package mpi

// Host-aware collectives with a size per rank: the building blocks that
// let Gather, Allgather and Alltoall take the site level too (their host
// leaders' level moves host blocks of different sizes, and runs these on
// the leaders' view, whose own layout is the hosts' sites), and the
// host-aware Allgatherv and Alltoallv. Gatherv's and Scatterv's counts
// are only given at the root, so there each leader first gathers its own
// ranks' counts (gathervRoot, scattervRoot).

// gathervAny is gathervFlat, or through c's hierarchy when it has one.
// Every rank passes the same counts and displs.
func gathervAny[T Elem](c *Comm, send, recv []T, counts, displs []int, root int) error {
	if h := c.hier(); h != nil {
		return gathervHier(c, h, send, recv, counts, displs, root)
	}
	return gathervFlat(c, send, recv, counts, displs, root)
}

// gathervHier: each leader gathers its host's blocks one after the other,
// the leaders gather the host blocks to root's leader (itself through the
// sites, when the leaders have them), and root puts each rank's block in
// its place.
func gathervHier[T Elem](c *Comm, l *layout, send, recv []T, counts, displs []int, root int) error {
	local, lead, leaders, top := c.levels(l, root)
	mine := l.members[l.host[c.rank]]
	lc, ld, lsum := packed(mine, counts)
	var host []T
	if leaders != nil {
		host = make([]T, lsum)
	}
	if err := gathervFlat(local, send, host, lc, ld, lead); err != nil || leaders == nil {
		return err
	}
	hc, hd, total := hostPacks(l, counts)
	var all []T
	if c.rank == root {
		all = make([]T, total)
	}
	if err := gathervAny(leaders, host, all, hc, hd, top); err != nil {
		return err
	}
	if c.rank == root {
		unpack(l, all, recv, counts, displs)
	}
	return nil
}

// allgathervAny is allgathervFlat, or through c's hierarchy when it has
// one.
func allgathervAny[T Elem](c *Comm, send, recv []T, counts, displs []int) error {
	if h := c.hier(); h != nil {
		return allgathervHier(c, h, send, recv, counts, displs)
	}
	return allgathervFlat(c, send, recv, counts, displs)
}

// allgathervHier: each host's blocks to its leader, an allgather of the
// host blocks among the leaders (through the sites when they have them),
// the whole, packed, to every rank of the host, and each rank puts the
// blocks in their places (only those: recv's gaps are left alone).
func allgathervHier[T Elem](c *Comm, l *layout, send, recv []T, counts, displs []int) error {
	local, lead, leaders, _ := c.levels(l, -1)
	mine := l.members[l.host[c.rank]]
	lc, ld, lsum := packed(mine, counts)
	var host []T
	if leaders != nil {
		host = make([]T, lsum)
	}
	if err := gathervFlat(local, send, host, lc, ld, lead); err != nil {
		return err
	}
	hc, hd, total := hostPacks(l, counts)
	all := make([]T, total)
	if leaders != nil {
		if err := allgathervAny(leaders, host, all, hc, hd); err != nil {
			return err
		}
	}
	if err := bcastFlat(local, all, lead); err != nil {
		return err
	}
	unpack(l, all, recv, counts, displs)
	return nil
}

// packed are the counts of ranks (of counts), their places one after the
// other, and their sum.
func packed(ranks, counts []int) (pc, pd []int, sum int) {
	pc, pd = make([]int, len(ranks)), make([]int, len(ranks))
	for i, r := range ranks {
		pc[i], pd[i] = counts[r], sum
		sum += counts[r]
	}
	return pc, pd, sum
}

// hostPacks are the sizes and places of each host's blocks packed one
// after the other (host 0's ranks, then host 1's, ...), and their sum.
func hostPacks(l *layout, counts []int) (hc, hd []int, total int) {
	hc, hd = make([]int, len(l.members)), make([]int, len(l.members))
	for h, m := range l.members {
		_, _, hc[h] = packed(m, counts)
		hd[h] = total
		total += hc[h]
	}
	return hc, hd, total
}

// unpack copies host-ordered packed blocks into their places in out.
func unpack[T Elem](l *layout, all, out []T, counts, displs []int) {
	at := 0
	for _, m := range l.members {
		for _, r := range m {
			copy(out[displs[r]:displs[r]+counts[r]], all[at:at+counts[r]])
			at += counts[r]
		}
	}
}

// scattervFlat is Scatterv without its argument checks: linear, root
// sends each rank its block; recv must be exactly that long.
func scattervFlat[T Elem](c *Comm, send []T, counts, displs []int, recv []T, root int) error {
	if c.rank != root {
		return recvInto(c, recv, root, tagScatterv)
	}
	reqs := make([]*Request, 0, c.size)
	for r := 0; r < c.size; r++ {
		if r != root {
			reqs = append(reqs, c.isend(c.coll, wireOf(send[displs[r]:displs[r]+counts[r]]), r, c.tags+tagScatterv, false))
		}
	}
	copy(recv, send[displs[root]:displs[root]+counts[root]])
	return Waitall(reqs...)
}

// alltoallvAny is the pairwise alltoallv, or through c's hierarchy when it
// has one.
func alltoallvAny[T Elem](c *Comm, send []T, sc, sd []int, recv []T, rc, rd []int, tag int) error {
	if h := c.hier(); h != nil {
		return alltoallvHier(c, h, send, sc, sd, recv, rc, rd, tag)
	}
	return alltoallv(c, send, sc, sd, recv, rc, rd, tag)
}

// viaLeaders reports whether a block of count elements of e bytes between
// ranks a and b of an n-rank communicator goes through the host leaders:
// when a and b are on different hosts and the block is at most
// hierAlltoall/n bytes (the same bound per block as Alltoall's per
// buffer). Both ends decide alike, since the sender's count for the
// receiver is the receiver's count for the sender.
func viaLeaders(l *layout, a, b, count, e, n int) bool {
	return l.host[a] != l.host[b] && count*e <= hierAlltoall/n
}

// alltoallvHier is Alltoallv with small blocks between hosts carried by
// the host leaders and the rest sent directly. Every rank knows, from its
// own counts, which of its blocks go which way. Its leader gathers the
// host's counts, then its blocks for other hosts, exchanges one message
// with each other leader (through the sites when the leaders have them),
// and scatters to each rank what came for it, packed in source order.
// Blocks between ranks of one host, and large ones, go directly, posted
// first so that they move while the leaders work.
func alltoallvHier[T Elem](c *Comm, l *layout, send []T, sc, sd []int, recv []T, rc, rd []int, tag int) error {
	n, me, e := c.size, c.rank, sizeOf[T]()
	type recvReq struct {
		req *Request
		src int
	}
	var sends []*Request
	var recvs []recvReq
	var out, in []int // destinations and sources through the leaders, ascending
	outSum, inSum := 0, 0
	copy(recv[rd[me]:rd[me]+rc[me]], send[sd[me]:sd[me]+sc[me]])
	for r := 0; r < n; r++ {
		if r == me {
			continue
		}
		if viaLeaders(l, r, me, rc[r], e, n) {
			in, inSum = append(in, r), inSum+rc[r]
		} else {
			recvs = append(recvs, recvReq{c.irecv(c.coll, view(recv[rd[r]:rd[r]+rc[r]]), 1, r, c.tags+tag), r})
		}
		if viaLeaders(l, me, r, sc[r], e, n) {
			out, outSum = append(out, r), outSum+sc[r]
		} else {
			sends = append(sends, c.isend(c.coll, wireOf(send[sd[r]:sd[r]+sc[r]]), r, c.tags+tag, false))
		}
	}
	pack := make([]T, 0, outSum)
	for _, d := range out {
		pack = append(pack, send[sd[d]:sd[d]+sc[d]]...)
	}
	got := make([]T, inSum)
	err := alltoallvLeaders(c, l, sc, rc, pack, got)
	for _, r := range recvs {
		b := view(recv[rd[r.src] : rd[r.src]+rc[r.src]])
		if werr := c.cwait(r.req, len(b), r.src); werr != nil && err == nil {
			err = werr
		}
		fromWire(b, e)
	}
	if werr := Waitall(sends...); err == nil {
		err = werr
	}
	if err != nil {
		return err
	}
	at := 0
	for _, s := range in {
		copy(recv[rd[s]:rd[s]+rc[s]], got[at:at+rc[s]])
		at += rc[s]
	}
	return nil
}

// alltoallvLeaders is the leaders' part of alltoallvHier: this rank's
// blocks for other hosts' ranks go to its leader as pack (in destination
// order), and got gets, in source order, the blocks from other hosts'
// ranks to it. The leader learns its ranks' counts (sc and rc of each)
// first, so that it knows how the packs and the leaders' messages are cut.
func alltoallvLeaders[T Elem](c *Comm, l *layout, sc, rc []int, pack, got []T) error {
	local, lead, leaders, _ := c.levels(l, -1)
	n, e := c.size, sizeOf[T]()
	mine := l.members[l.host[c.rank]]
	cnt := make([]int64, 2*n)
	for r := 0; r < n; r++ {
		cnt[r], cnt[n+r] = int64(sc[r]), int64(rc[r])
	}
	var counts []int64
	if leaders != nil {
		counts = make([]int64, len(mine)*2*n)
	}
	if err := gatherFlat(local, cnt, counts, lead); err != nil {
		return err
	}
	var plan *leaderPlan
	var host []T
	if leaders != nil {
		var err error
		if plan, err = planLeaders(l, mine, counts, n, e); err != nil {
			return err
		}
		host = make([]T, plan.packs[len(mine)])
	}
	var pc, pd []int
	if plan != nil {
		pc, pd = plan.sizes(plan.packs)
	}
	if err := gathervFlat(local, pack, host, pc, pd, lead); err != nil {
		return err
	}
	var outs []T
	var oc, od []int
	if plan != nil {
		sendbuf := make([]T, 0, plan.hsd[len(l.members)-1]+plan.hsc[len(l.members)-1])
		for _, b := range plan.blocks {
			sendbuf = append(sendbuf, host[b.from:b.from+b.n]...)
		}
		recvbuf := make([]T, plan.hrd[len(l.members)-1]+plan.hrc[len(l.members)-1])
		if err := alltoallvAny(leaders, sendbuf, plan.hsc, plan.hsd, recvbuf, plan.hrc, plan.hrd, tagAlltoallv); err != nil {
			return err
		}
		outs = make([]T, plan.outs[len(mine)])
		at := 0
		for _, b := range plan.arrivals {
			copy(outs[b.from:b.from+b.n], recvbuf[at:at+b.n])
			at += b.n
		}
		oc, od = plan.sizes(plan.outs)
	}
	return scattervFlat(local, outs, oc, od, got, lead)
}

// leaderPlan is how a leader cuts what it carries: blocks lists, in the
// order of the leaders' messages, where each block to send lies in the
// gathered packs; arrivals where each received block goes in the packs to
// scatter. packs and outs are the places of each local rank's pack (with
// the total last).
type leaderPlan struct {
	packs, outs        []int
	blocks, arrivals   []span
	hsc, hsd, hrc, hrd []int
}

// span is n elements at from.
type span struct{ from, n int }

// sizes turns places (with the total last) into counts and displacements.
func (p *leaderPlan) sizes(at []int) (counts, displs []int) {
	counts, displs = make([]int, len(at)-1), at[:len(at)-1]
	for i := range counts {
		counts[i] = at[i+1] - at[i]
	}
	return counts, displs
}

// planLeaders works out a leader's plan from its ranks' counts (2n per
// local rank: what it sends to each rank, then what it receives from
// each). Counts come from the host's ranks, so they are checked like any
// argument.
func planLeaders(l *layout, mine []int, counts []int64, n, e int) (*leaderPlan, error) {
	hosts := len(l.members)
	p := &leaderPlan{packs: make([]int, len(mine)+1), outs: make([]int, len(mine)+1),
		hsc: make([]int, hosts), hsd: make([]int, hosts), hrc: make([]int, hosts), hrd: make([]int, hosts)}
	sendAt := make([][]int, len(mine)) // where local rank i's block to rank d lies in the packs
	recvAt := make([][]int, len(mine)) // where local rank j's block from rank s goes in the outs
	for i, r := range mine {
		sendAt[i], recvAt[i] = make([]int, n), make([]int, n)
		ps, po := 0, 0
		for d := 0; d < n; d++ {
			s, g := counts[i*2*n+d], counts[i*2*n+n+d]
			if s < 0 || g < 0 || s > maxCount || g > maxCount {
				return nil, argErr("alltoallv: rank %d passed count %d or %d for rank %d", r, s, g, d)
			}
			if viaLeaders(l, r, d, int(s), e, n) {
				sendAt[i][d], ps = p.packs[i]+ps, ps+int(s)
			}
			if viaLeaders(l, d, r, int(g), e, n) {
				recvAt[i][d], po = p.outs[i]+po, po+int(g)
			}
		}
		p.packs[i+1], p.outs[i+1] = p.packs[i]+ps, p.outs[i]+po
	}
	sent, got := 0, 0
	for b, m := range l.members {
		p.hsd[b], p.hrd[b] = sent, got
		for i, r := range mine {
			for _, d := range m {
				if s := int(counts[i*2*n+d]); viaLeaders(l, r, d, s, e, n) {
					p.blocks = append(p.blocks, span{sendAt[i][d], s})
					sent += s
				}
			}
		}
		for _, s := range m {
			for j, r := range mine {
				if g := int(counts[j*2*n+n+s]); viaLeaders(l, s, r, g, e, n) {
					p.arrivals = append(p.arrivals, span{recvAt[j][s], g})
					got += g
				}
			}
		}
		p.hsc[b], p.hrc[b] = sent-p.hsd[b], got-p.hrd[b]
	}
	return p, nil
}

// scattervAny is scattervFlat, or through c's hierarchy when it has one.
// Every rank passes the same counts and displs.
func scattervAny[T Elem](c *Comm, send []T, counts, displs []int, recv []T, root int) error {
	if h := c.hier(); h != nil {
		return scattervHier(c, h, send, counts, displs, recv, root)
	}
	return scattervFlat(c, send, counts, displs, recv, root)
}

// scattervHier: root packs each host's blocks one after the other, the
// leaders scatter the host packs from root's leader (through the sites
// when they have them), and each leader scatters its host's blocks.
func scattervHier[T Elem](c *Comm, l *layout, send []T, counts, displs []int, recv []T, root int) error {
	local, lead, leaders, top := c.levels(l, root)
	mine := l.members[l.host[c.rank]]
	lc, ld, lsum := packed(mine, counts)
	var host []T
	if leaders != nil {
		hc, hd, total := hostPacks(l, counts)
		var all []T
		if c.rank == root {
			all = make([]T, 0, total)
			for _, m := range l.members {
				for _, r := range m {
					all = append(all, send[displs[r]:displs[r]+counts[r]]...)
				}
			}
		}
		host = make([]T, lsum)
		if err := scattervAny(leaders, all, hc, hd, host, top); err != nil {
			return err
		}
	}
	return scattervFlat(local, host, lc, ld, recv, lead)
}

// gathervRoot is Gatherv's algorithm, where only root knows the counts:
// through c's hierarchy when it has one, each leader first gathers its
// ranks' counts (one small local message each), so that it knows how its
// host's blocks are cut; root knows every count.
func gathervRoot[T Elem](c *Comm, send, recv []T, counts, displs []int, root int) error {
	l := c.hier()
	if l == nil {
		return gathervFlat(c, send, recv, counts, displs, root)
	}
	local, lead, leaders, top := c.levels(l, root)
	lc, ld, lsum, err := localCounts(local, lead, leaders != nil, len(send))
	if err != nil {
		return err
	}
	host := make([]T, lsum)
	if err := gathervFlat(local, send, host, lc, ld, lead); err != nil || leaders == nil {
		return err
	}
	var all []T
	var hc, hd []int
	if c.rank == root {
		var total int
		hc, hd, total = hostPacks(l, counts)
		all = make([]T, total)
	}
	if err := gathervRoot(leaders, host, all, hc, hd, top); err != nil {
		return err
	}
	if c.rank == root {
		unpack(l, all, recv, counts, displs)
	}
	return nil
}

// scattervRoot is Scatterv's algorithm, where only root knows the counts:
// through c's hierarchy when it has one, each leader first gathers how
// much each of its ranks receives.
func scattervRoot[T Elem](c *Comm, send []T, counts, displs []int, recv []T, root int) error {
	l := c.hier()
	if l == nil {
		return scattervFlat(c, send, counts, displs, recv, root)
	}
	local, lead, leaders, top := c.levels(l, root)
	lc, ld, lsum, err := localCounts(local, lead, leaders != nil, len(recv))
	if err != nil {
		return err
	}
	host := make([]T, lsum)
	if leaders != nil {
		var all []T
		var hc, hd []int
		if c.rank == root {
			var total int
			hc, hd, total = hostPacks(l, counts)
			all = make([]T, 0, total)
			for _, m := range l.members {
				for _, r := range m {
					all = append(all, send[displs[r]:displs[r]+counts[r]]...)
				}
			}
		}
		if err := scattervRoot(leaders, all, hc, hd, host, top); err != nil {
			return err
		}
	}
	return scattervFlat(local, host, lc, ld, recv, lead)
}

// localCounts gathers each local rank's count k at the leader (lead), which
// gets them with their places packed one after the other and their sum.
func localCounts(local *Comm, lead int, leader bool, k int) (lc, ld []int, sum int, err error) {
	var all []int64
	if leader {
		all = make([]int64, local.size)
	}
	if err := gatherFlat(local, []int64{int64(k)}, all, lead); err != nil {
		return nil, nil, 0, err
	}
	if !leader {
		return nil, nil, 0, nil
	}
	lc, ld = make([]int, local.size), make([]int, local.size)
	for i, v := range all {
		if v < 0 || v > maxCount {
			return nil, nil, 0, argErr("rank %d of the host passed %d elements", i, v)
		}
		lc[i], ld[i] = int(v), sum
		sum += int(v)
	}
	return lc, ld, sum, nil
}

// maxCount bounds a count a leader takes from another rank: MPI's counts
// are C ints, and a leader must not try to allocate what a rank's garbage
// says.
const maxCount = 1<<31 - 1

package mpi

import "sync"

// Host-aware collectives. The ranks of a communicator that share a host
// (the agent's Welcome numbers each rank's host) first combine among
// themselves, then one leader per host runs the flat algorithm among the
// leaders, then each leader hands the result to its host: a collective
// crosses the network once per host rather than once per rank. Each level
// runs the flat algorithms on a view of the communicator: the same contexts,
// with the level's own tags.
//
// Reductions keep the rank order only when every host holds consecutive
// ranks (as the concentrate placement makes them); on other layouts they
// stay flat, which keeps a non-commutative op right.
//
// Where the job spans sites (the Welcome's SiteOf), the leaders' level is
// itself hierarchical: the host leaders of a site combine first, then one
// leader per site crosses between sites. The leaders' view carries the
// layout of the hosts in sites, and every collective's leaders' level uses
// it: Barrier, Bcast, Reduce and Allreduce directly, Gather, Allgather and
// Alltoall through the size-per-rank forms of coll_hier_v.go (gathervAny,
// allgathervAny, alltoallvAny), whose own leaders' level is then the site
// leaders: a host leader's blocks cross between sites once per site.

// Tag offsets of the levels of a hierarchical collective, added to the
// layout's own offset (0 for hosts, tagsSites for sites).
const (
	tagsLocal   = 1 << 8
	tagsLeaders = 2 << 8
	tagsColumn  = 3 << 8 // the ranks holding the same segment on every host
	tagsSites   = 4 << 8 // base of the site level: 5, 6, 7 << 8 (and 7..9 << 8 under the host leaders' 2 << 8)
)

// layout says which ranks of a communicator share a host (or, for the site
// level, which hosts share a site).
type layout struct {
	host    []int   // host of each rank, hosts numbered in the order of their lowest rank
	members [][]int // ranks of each host, ascending
	blocked bool    // every host's ranks are consecutive
	off     int     // tag offset of this level's views
	sites   *layout // the hosts (as ranks, in host order) grouped by site; nil on one site
}

// newSiteLayout groups ranks by host (agent[r]) and the hosts by site
// (site[r], the site of rank r's host).
func newSiteLayout(agent, site []int) *layout {
	l := newLayout(agent)
	hs := make([]int, len(l.members))
	for h, m := range l.members {
		hs[h] = site[m[0]]
	}
	if sl := newLayout(hs); len(sl.members) > 1 {
		sl.off = tagsSites
		l.sites = sl
	}
	return l
}

// hostsOnce computes a communicator's layout once.
type hostsOnce struct {
	once sync.Once
	l    *layout
}

// newLayout groups ranks by the host numbers agent (one per rank).
func newLayout(agent []int) *layout {
	l := &layout{host: make([]int, len(agent)), blocked: true}
	dense := map[int]int{}
	for r, a := range agent {
		h, ok := dense[a]
		if !ok {
			h = len(l.members)
			dense[a] = h
			l.members = append(l.members, nil)
		}
		if m := l.members[h]; len(m) > 0 && m[len(m)-1] != r-1 {
			l.blocked = false
		}
		l.host[r] = h
		l.members[h] = append(l.members[h], r)
	}
	return l
}

// perHost is the number of ranks of every host, or 0 when hosts differ.
func (l *layout) perHost() int {
	p := len(l.members[0])
	for _, m := range l.members {
		if len(m) != p {
			return 0
		}
	}
	return p
}

// useful reports whether the hierarchy changes anything: several hosts, and
// one of them with several ranks.
func (l *layout) useful() bool {
	return len(l.members) > 1 && len(l.members) < len(l.host)
}

// leaders lists one rank per host, in host order: root on root's host (or
// no root: -1), the lowest rank elsewhere.
func (l *layout) leaders(root int) []int {
	out := make([]int, len(l.members))
	for h, m := range l.members {
		out[h] = m[0]
	}
	if root >= 0 {
		out[l.host[root]] = root
	}
	return out
}

// hier is c's layout when collectives should use it, else nil. With one
// rank per host, the hosts' sites are the layout.
func (c *Comm) hier() *layout {
	if c.flat || c.hosts == nil {
		return nil
	}
	c.hosts.once.Do(func() {
		agent, site := make([]int, c.size), make([]int, c.size)
		for r := range agent {
			agent[r], site[r] = c.s.hostOf[c.worldRank(r)], c.s.siteOf[c.worldRank(r)]
		}
		c.hosts.l = newSiteLayout(agent, site)
	})
	return c.hosts.l.pick()
}

// pick is the level collectives use: l itself when it has hosts of several
// ranks, else its sites when they group several hosts, else none.
func (l *layout) pick() *layout {
	switch {
	case l == nil:
		return nil
	case l.useful():
		return l
	case len(l.members) == len(l.host) && l.sites != nil && l.sites.useful():
		return l.sites
	}
	return nil
}

// view is the communicator of the ranks (of c) listed, for one level of a
// hierarchical collective: it has c's contexts, tags moved by off, and runs
// flat algorithms. c's rank must be listed.
func (c *Comm) view(ranks []int, off int) *Comm {
	v := &Comm{s: c.s, size: len(ranks), p2p: c.p2p, coll: c.coll, tags: c.tags + off, flat: true}
	group := make([]int, len(ranks))
	for i, r := range ranks {
		group[i] = c.worldRank(r)
		if r == c.rank {
			v.rank = i
		}
	}
	v.setGroup(group)
	return v
}

// levels returns the views of c's hierarchy for a collective rooted at
// root (or -1): this rank's host, with the index of its leader there, and
// the leaders (nil when this rank leads no host), with root's index there.
func (c *Comm) levels(l *layout, root int) (local *Comm, lead int, leaders *Comm, top int) {
	ls := l.leaders(root)
	h := l.host[c.rank]
	local = c.view(l.members[h], l.off+tagsLocal)
	for i, r := range l.members[h] {
		if r == ls[h] {
			lead = i
		}
	}
	if root >= 0 {
		top = l.host[root]
	}
	if ls[h] == c.rank {
		leaders = c.view(ls, l.off+tagsLeaders)
		if l.sites != nil {
			leaders.flat, leaders.hosts = false, &hostsOnce{l: l.sites}
			leaders.hosts.once.Do(func() {})
		}
	}
	return local, lead, leaders, top
}

func barrierHier(c *Comm, l *layout) error {
	local, lead, leaders, _ := c.levels(l, -1)
	if err := gatherFlat(local, []byte{}, []byte{}, lead); err != nil {
		return err
	}
	if leaders != nil {
		if err := barrier(leaders); err != nil {
			return err
		}
	}
	return bcastFlat(local, []byte{}, lead)
}

func bcastHier[T Elem](c *Comm, l *layout, buf []T, root int) error {
	local, lead, leaders, top := c.levels(l, root)
	if leaders != nil {
		if err := bcast(leaders, buf, top); err != nil {
			return err
		}
	}
	return bcastFlat(local, buf, lead)
}

// reduceHier needs a blocked layout: hosts in order hold consecutive ranks.
func reduceHier[T Elem](c *Comm, l *layout, send, recv []T, op Op[T], root int) error {
	local, lead, leaders, top := c.levels(l, root)
	part := recv
	if c.rank != root {
		part = make([]T, len(send))
	}
	if err := reduceFlat(local, send, part, op, lead); err != nil {
		return err
	}
	if leaders == nil {
		return nil
	}
	return reduce(leaders, part, recv, op, top)
}

// allreduceHier needs a blocked layout; acc holds this rank's part.
func allreduceHier[T Elem](c *Comm, l *layout, acc []T, op Op[T]) error {
	if p := l.perHost(); p > 1 && p&(p-1) == 0 && len(acc)*sizeOf[T]() >= largeAllreduce && len(acc) >= p {
		return allreduceColumns(c, l, acc, op)
	}
	local, lead, leaders, _ := c.levels(l, -1)
	if err := reduceFlat(local, acc, acc, op, lead); err != nil {
		return err
	}
	if leaders != nil {
		if err := allreduceAny(leaders, acc, op); err != nil {
			return err
		}
	}
	return bcastFlat(local, acc, lead)
}

// barrier, bcast, reduce and allreduceAny run a level's collective with
// that level's hierarchy if it has one (the sites of the host leaders).
func barrier(c *Comm) error {
	if h := c.hier(); h != nil {
		return barrierHier(c, h)
	}
	return barrierFlat(c)
}

func bcast[T Elem](c *Comm, buf []T, root int) error {
	if h := c.hier(); h != nil {
		return bcastHier(c, h, buf, root)
	}
	return bcastFlat(c, buf, root)
}

func reduce[T Elem](c *Comm, send, recv []T, op Op[T], root int) error {
	if h := c.hier(); h != nil && h.blocked {
		return reduceHier(c, h, send, recv, op, root)
	}
	return reduceFlat(c, send, recv, op, root)
}

func allreduceAny[T Elem](c *Comm, acc []T, op Op[T]) error {
	if h := c.hier(); h != nil && h.blocked {
		return allreduceHier(c, h, acc, op)
	}
	return allreduce(c, acc, op)
}

// allreduceColumns is the large-vector Allreduce when every host holds the
// same power-of-two number of ranks: the ranks of a host reduce-scatter the
// vector among themselves, each then allreduces its segment with the ranks
// holding the same segment on the other hosts (a column), and the host
// allgathers the finished segments. Every rank works and every byte
// crosses the network once per column, rather than all through one leader.
func allreduceColumns[T Elem](c *Comm, l *layout, acc []T, op Op[T]) error {
	mine := l.members[l.host[c.rank]]
	local := c.view(mine, l.off+tagsLocal)
	steps, err := halve(local, acc, make([]T, len(acc)), op, local.rank, local.size, 0)
	if err != nil {
		return err
	}
	col := make([]int, len(l.members))
	for h, m := range l.members {
		col[h] = m[local.rank]
	}
	s := steps[len(steps)-1]
	if err := allreduce(c.view(col, l.off+tagsColumn), acc[s.lo:s.hi], op); err != nil {
		return err
	}
	return double(local, acc, steps, local.rank, 0)
}

// gatherHier: each leader gathers its host's blocks, then the leaders'
// host blocks (of different sizes) go to root, which puts them in rank
// order.
func gatherHier[T Elem](c *Comm, l *layout, send, recv []T, root int) error {
	local, lead, leaders, top := c.levels(l, root)
	k := len(send)
	host := make([]T, local.size*k)
	if err := gatherFlat(local, send, host, lead); err != nil || leaders == nil {
		return err
	}
	counts, displs := hostBlocks(l, k)
	var all []T
	if c.rank == root {
		all = make([]T, c.size*k)
	}
	if err := gathervAny(leaders, host, all, counts, displs, top); err != nil {
		return err
	}
	if c.rank == root {
		unpermute(l, all, recv, k)
	}
	return nil
}

// allgatherHier: each host's blocks to its leader, an allgather of host
// blocks among the leaders, and the whole to every rank of the host.
func allgatherHier[T Elem](c *Comm, l *layout, send, recv []T) error {
	local, lead, leaders, _ := c.levels(l, -1)
	k := len(send)
	host := make([]T, local.size*k)
	if err := gatherFlat(local, send, host, lead); err != nil {
		return err
	}
	if leaders != nil {
		all := make([]T, c.size*k)
		var err error
		if l.perHost() > 0 { // equal host blocks: Bruck's log2 steps rather than a ring
			err = allgatherAny(leaders, host, all)
		} else {
			counts, displs := hostBlocks(l, k)
			err = allgathervAny(leaders, host, all, counts, displs)
		}
		if err != nil {
			return err
		}
		unpermute(l, all, recv, k)
	}
	return bcastFlat(local, recv, lead)
}

// allgatherAny is allgatherFlat, or through c's hierarchy when it has one.
func allgatherAny[T Elem](c *Comm, send, recv []T) error {
	if h := c.hier(); h != nil {
		return allgatherHier(c, h, send, recv)
	}
	return allgatherFlat(c, send, recv)
}

// hostBlocks are the sizes and places of each host's blocks of k elements
// per rank, hosts one after the other.
func hostBlocks(l *layout, k int) (counts, displs []int) {
	counts, displs = make([]int, len(l.members)), make([]int, len(l.members))
	at := 0
	for h, m := range l.members {
		counts[h], displs[h] = len(m)*k, at
		at += len(m) * k
	}
	return counts, displs
}

// unpermute copies host-ordered blocks of k elements (host 0's ranks, then
// host 1's, ...) into rank order.
func unpermute[T Elem](l *layout, all, out []T, k int) {
	i := 0
	for _, m := range l.members {
		for _, r := range m {
			copy(out[r*k:(r+1)*k], all[i*k:(i+1)*k])
			i++
		}
	}
}

// hierAlltoall is the largest send buffer (bytes per rank) for which
// Alltoall goes through the host leaders: they carry every byte of their
// host twice more, which pays only while messages cost their latency.
const hierAlltoall = 64 << 10

// alltoallHier: the leader of each host gathers its ranks' send buffers
// (n blocks of k each), sends each other leader the blocks from its ranks
// to that host's ranks, and scatters to each of its ranks the blocks
// addressed to it, in source order.
func alltoallHier[T Elem](c *Comm, l *layout, send, recv []T, k int) error {
	local, lead, leaders, _ := c.levels(l, -1)
	n := c.size
	var host, out []T
	if leaders != nil {
		host, out = make([]T, local.size*n*k), make([]T, local.size*n*k)
	}
	if err := gatherFlat(local, send, host, lead); err != nil {
		return err
	}
	if leaders != nil {
		if err := leadersAlltoall(leaders, l, c.rank, host, out, k); err != nil {
			return err
		}
	}
	return scatterFlat(local, out, recv, lead)
}

// leadersAlltoall exchanges, between the leaders, what each host's ranks
// send to each other host's. host holds, per rank i of this host, its n
// blocks; out gets, per rank j of this host, its n received blocks.
func leadersAlltoall[T Elem](leaders *Comm, l *layout, me int, host, out []T, k int) error {
	n, hosts := len(l.host), len(l.members)
	mine := l.members[l.host[me]]
	sc, sd, rc, rd := make([]int, hosts), make([]int, hosts), make([]int, hosts), make([]int, hosts)
	sendbuf := make([]T, 0, len(host))
	for b, m := range l.members {
		sd[b], sc[b] = len(sendbuf), len(mine)*len(m)*k
		for i := range mine {
			for _, d := range m {
				sendbuf = append(sendbuf, host[(i*n+d)*k:(i*n+d+1)*k]...)
			}
		}
	}
	at := 0
	for b, m := range l.members {
		rd[b], rc[b] = at, len(m)*len(mine)*k
		at += rc[b]
	}
	recvbuf := make([]T, at)
	if err := alltoallvAny(leaders, sendbuf, sc, sd, recvbuf, rc, rd, tagAlltoall); err != nil {
		return err
	}
	for b, m := range l.members {
		for si, s := range m {
			for j := range mine {
				from := rd[b] + (si*len(mine)+j)*k
				copy(out[(j*n+s)*k:(j*n+s+1)*k], recvbuf[from:from+k])
			}
		}
	}
	return nil
}

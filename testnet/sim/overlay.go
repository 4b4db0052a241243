package sim

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/overlay"
)

// The overlay forms before the run as the real one does with its
// neighbour exchange alone (the DHT left out): every agent joins through
// its bootstrap peers (bootPeers), then runs Rounds rounds of the
// exchange, ExchangeInterval apart in virtual time, deciding with the
// overlay's own functions: whom it asks (overlay.ExchangeTarget), what a
// peer answers (overlay.ExchangeAnswer), which known peer its full table
// forgets for a new one (overlay.Evict; the table holds Candidates peers,
// as MaxKnown bounds the real one) and its neighbours
// (overlay.SelectNeighbours). A peer asked by an agent that chose it keeps
// that agent as an inbound neighbour for InboundLease, up to MaxInbound of
// them, as the overlay's table does.
//
// What the simulation stands in for: a peer is measured as soon as it is
// learned, with one sample of the topology's RTT (up to 10% more: noise
// on real links breaks the ties between agents of one site in a different
// order for each agent), where the real overlay pings it within the few
// seconds before its next exchange; an exchange takes no time; every
// agent exchanges at its own phase in the interval, in the same order
// every round. The neighbours stay as the last round left them for the
// whole run.

// bootPeers is how many agents of its own site an agent joins through,
// drawn at random among those started before it (an operator names a few
// of a site's agents in everyone's --bootstrap; mDNS finds them on the
// site's LAN). It also joins through one agent started before it
// anywhere, as the testnets join (testnet.Mocknet, testnet/docker):
// without that one, and with no DHT walk to bring peers from afar, the
// gossip never leaves a site, since the first peers an agent learns are
// its site's and a full table forgets the farthest first. Joining
// through a site's first few agents instead gives all its agents the
// same first neighbours: their inbound places fill (MaxInbound), and an
// agent whose chosen neighbours are all full is reached by no flood.
const bootPeers = 3

// gossiper is one agent's overlay table while the overlay forms.
type gossiper struct {
	known   []int32         // peers known, in the order learned
	rtt     []time.Duration // their measured RTT, by known's order; 0: not measured yet
	out     []int32         // outbound neighbours: the nearest, then the long-range ones, each by RTT
	inbound []inLease       // peers that chose it
	turn    int             // overlay.ExchangeTarget's count of rounds
	dirty   bool            // the selection may change: a peer came that SelectNeighbours would take
}

// inLease is an inbound neighbour's lease: it chose us until then.
type inLease struct {
	p     int32
	until time.Duration
}

// gossip is the overlay's formation: every agent's table and the
// overlay's settings.
type gossip struct {
	w    *World
	rng  *rand.Rand
	tabs []gossiper
	// ids are the agents' IDs, side by side in one string: at 100,000
	// agents, reading them from the agents' records missed the cache
	// for a fifth of the build.
	ids    []peer.ID
	ocfg   overlay.Config
	mark   []uint32 // stamp per agent: in the table being looked at
	nbMark []uint32 // ... a neighbour of it, either way
	stamp  uint32
	cands  []overlay.Candidate
	candOf []int32 // the agent each candidate is
	infos  []overlay.PeerInfo
	others []int32
}

// buildOverlay forms the overlay and gives every agent its neighbours
// (the peers it chose, then those that chose it) and the peers it knows.
// It draws from a random source of its own, so the overlay of a seed is
// the same whatever else the run draws.
func (w *World) buildOverlay() {
	g := &gossip{w: w, rng: rand.New(rand.NewPCG(w.cfg.Seed, 0x90551b)), tabs: make([]gossiper, len(w.agents)),
		ocfg: overlay.DefaultConfig(), mark: make([]uint32, len(w.agents)), nbMark: make([]uint32, len(w.agents))}
	g.ocfg.K, g.ocfg.Random, g.ocfg.MaxKnown = w.cfg.Neighbours, w.cfg.LongRange, w.cfg.Candidates
	g.ids = packIDs(w.agents)
	g.bootstrap()
	order, phase := g.phases()
	interval := g.ocfg.ExchangeInterval
	for r := range w.cfg.Rounds {
		for _, a := range order {
			g.exchange(a, time.Duration(r)*interval+phase[a])
		}
	}
	g.finish(time.Duration(w.cfg.Rounds) * interval)
}

// packIDs copies the agents' IDs into one string, and slices it.
func packIDs(agents []*agent) []peer.ID {
	var b strings.Builder
	for _, a := range agents {
		b.WriteString(string(a.id))
	}
	all, ids, at := b.String(), make([]peer.ID, len(agents)), 0
	for i, a := range agents {
		ids[i] = peer.ID(all[at : at+len(a.id)])
		at += len(a.id)
	}
	return ids
}

// phases draws when in the interval each agent exchanges, and orders
// the agents by it.
func (g *gossip) phases() ([]int32, []time.Duration) {
	n := len(g.tabs)
	phase := make([]time.Duration, n)
	order := make([]int32, n)
	for i := range n {
		phase[i] = time.Duration(g.rng.Int64N(int64(g.ocfg.ExchangeInterval)))
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return cmp.Or(cmp.Compare(phase[a], phase[b]), cmp.Compare(a, b)) })
	return order, phase
}

// bootstrap starts the agents in order, each joining through its
// bootstrap peers (bootPeers): both learn each other, as the overlay
// learns a peer that connects and speaks its protocol. With a full view,
// every agent learns every other instead.
func (g *gossip) bootstrap() {
	if g.w.cfg.FullView {
		everyone := make([]int32, len(g.tabs))
		for i := range everyone {
			everyone[i] = int32(i)
		}
		for i := range g.tabs {
			g.learn(int32(i), everyone, 0)
		}
		return
	}
	topo := g.w.topo
	started := make([][]int32, len(topo.sites)) // by site
	for i := range g.tabs {
		a, mates := int32(i), started[topo.siteOf[i]]
		for range min(bootPeers, len(mates)) {
			g.meet(a, mates[g.rng.IntN(len(mates))], 0)
		}
		if i > 0 {
			g.meet(a, int32(g.rng.IntN(i)), 0)
		}
		started[topo.siteOf[i]] = append(mates, a)
	}
}

// meet makes a and b learn and measure each other.
func (g *gossip) meet(a, b int32, now time.Duration) {
	if a == b {
		return
	}
	g.learn(a, []int32{b}, now)
	g.learn(b, []int32{a}, now)
}

// exchange is one round of a's neighbour exchange at now: it asks a peer
// (overlay.ExchangeTarget), the peer learns it (and leases it a place
// among its inbound neighbours if a chose it), answers
// (overlay.ExchangeAnswer), and a learns and measures what it was told.
func (g *gossip) exchange(a int32, now time.Duration) {
	g.reselect(a)
	ta := &g.tabs[a]
	var live []int32
	if len(ta.out) == 0 {
		live = ta.known // every peer is alive while the overlay forms
	}
	b, neighbour, ok := overlay.ExchangeTarget(ta.out, live, &ta.turn, g.rng)
	if !ok {
		return
	}
	g.reselect(b) // b answers from its last selection
	tb := &g.tabs[b]
	g.others = g.others[:0]
	chosen := g.next()
	for _, p := range tb.out {
		g.mark[p] = chosen
	}
	for i, p := range tb.known {
		if tb.rtt[i] > 0 && g.mark[p] != chosen {
			g.others = append(g.others, p)
		}
	}
	told := overlay.ExchangeAnswer(tb.out, g.others, a, g.rng)
	g.learn(b, []int32{a}, now)
	if neighbour {
		g.lease(b, a, now)
	}
	g.learn(a, told, now)
}

// learn adds peers to x's table, each making room by overlay.Evict when
// the table is full (a peer it cannot make room for is not learned), then
// measures the new ones.
func (g *gossip) learn(x int32, peers []int32, now time.Duration) {
	t := &g.tabs[x]
	known := g.next() // g.mark[p] == known: p is in t
	for _, p := range t.known {
		g.mark[p] = known
	}
	full := false // g.infos mirrors t.known
	for _, p := range peers {
		if p == x || g.mark[p] == known {
			continue
		}
		if len(t.known) >= g.ocfg.MaxKnown {
			if !full {
				g.fillInfos(x, now)
				full = true
			}
			i := overlay.Evict(g.infos)
			if i < 0 {
				continue
			}
			g.mark[t.known[i]] = 0
			t.known, t.rtt, g.infos = slices.Delete(t.known, i, i+1), slices.Delete(t.rtt, i, i+1), slices.Delete(g.infos, i, i+1)
		}
		g.mark[p] = known
		t.known, t.rtt = append(t.known, p), append(t.rtt, 0)
		if full {
			g.infos = append(g.infos, overlay.PeerInfo{})
		}
	}
	for i, p := range t.known {
		if t.rtt[i] == 0 {
			t.rtt[i] = g.measure(x, p)
			t.dirty = t.dirty || g.takes(t, p, t.rtt[i])
		}
	}
}

// next is a new stamp for g.mark or g.nbMark: no agent holds it yet.
func (g *gossip) next() uint32 {
	g.stamp++
	return g.stamp
}

// takes reports whether overlay.SelectNeighbours may choose otherwise
// now that t has measured p: while t has fewer neighbours than it wants,
// or if p is nearer than its K-th nearest. Otherwise the nearest stay,
// every long-range neighbour is kept, and nothing is drawn: the choice
// would be the same, and is not made again.
func (g *gossip) takes(t *gossiper, p int32, rtt time.Duration) bool {
	k := g.ocfg.K
	if len(t.out) < k+g.ocfg.Random {
		return true
	}
	kth := t.out[k-1]
	d := t.rtt[slices.Index(t.known, kth)]
	return rtt < d || rtt == d && g.ids[p] < g.ids[kth]
}

// fillInfos describes x's table as overlay.Evict reads it, in g.infos:
// its neighbours are the peers it chose and those whose lease holds at
// now. Evict reads no ID, and reading them missed the cache at 100,000
// agents: they are left out.
func (g *gossip) fillInfos(x int32, now time.Duration) {
	t := &g.tabs[x]
	nb := g.next()
	for _, p := range t.out {
		g.nbMark[p] = nb
	}
	for _, l := range t.inbound {
		if l.until > now {
			g.nbMark[l.p] = nb
		}
	}
	g.infos = g.infos[:0]
	for i, p := range t.known {
		g.infos = append(g.infos, overlay.PeerInfo{RTT: t.rtt[i], Measured: t.rtt[i] > 0,
			Neighbour: g.nbMark[p] == nb})
	}
}

// measure is x's sample of its RTT to p: the topology's, and up to 10%
// more.
func (g *gossip) measure(x, p int32) time.Duration {
	rtt := g.w.topo.rtt(int(x), int(p))
	return rtt + time.Duration(g.rng.Int64N(int64(rtt)/10+1))
}

// lease records at now that a chose x as its neighbour, as the overlay's
// table does: a lease held is renewed, a new one granted while fewer than
// MaxInbound peers hold one, and only to a peer x knows.
func (g *gossip) lease(x, a int32, now time.Duration) {
	t := &g.tabs[x]
	t.inbound = slices.DeleteFunc(t.inbound, func(l inLease) bool { return l.until <= now })
	until := now + g.ocfg.InboundLease
	for i := range t.inbound {
		if t.inbound[i].p == a {
			t.inbound[i].until = until
			return
		}
	}
	if len(t.inbound) < g.ocfg.MaxInbound && slices.Contains(t.known, a) {
		t.inbound = append(t.inbound, inLease{a, until})
	}
}

// reselect chooses x's neighbours again (overlay.SelectNeighbours) if the
// choice may change: its measured peers are the candidates, its
// long-range neighbours marked so. It orders them as the overlay's
// outbound list: the nearest, then the long-range ones, each by RTT.
func (g *gossip) reselect(x int32) {
	t := &g.tabs[x]
	if !t.dirty {
		return
	}
	t.dirty = false
	long := g.next()
	for _, p := range t.out[min(len(t.out), g.ocfg.K):] {
		g.mark[p] = long
	}
	g.cands, g.candOf = g.cands[:0], g.candOf[:0]
	for i, p := range t.known {
		if t.rtt[i] > 0 {
			g.cands = append(g.cands, overlay.Candidate{ID: g.ids[p], RTT: t.rtt[i], LongRange: g.mark[p] == long})
			g.candOf = append(g.candOf, p)
		}
	}
	t.out = t.out[:0]
	for _, id := range overlay.SelectNeighbours(g.cands, g.ocfg.K, g.ocfg.Random, g.rng) {
		// The candidate it is, found among a few dozen: no look-up of
		// the agents' map, whose reads miss the cache.
		i := slices.IndexFunc(g.cands, func(c overlay.Candidate) bool { return c.ID == id })
		t.out = append(t.out, g.candOf[i])
	}
	slices.SortFunc(t.out[min(len(t.out), g.ocfg.K):], func(p, q int32) int {
		return cmp.Or(cmp.Compare(t.rtt[slices.Index(t.known, p)], t.rtt[slices.Index(t.known, q)]),
			cmp.Compare(g.ids[p], g.ids[q]))
	})
}

// finish gives every agent what the overlay holds at now: its neighbours
// (the peers it chose, then those whose lease holds, nearest first, as
// the overlay's Neighbours) and the peers it knows, with their RTTs.
func (g *gossip) finish(now time.Duration) {
	for i := range g.tabs {
		g.reselect(int32(i))
	}
	type inbound struct {
		p   int32
		rtt time.Duration
	}
	for i, a := range g.w.agents {
		t := &g.tabs[i]
		a.nbrs = append(a.nbrs[:0], t.out...)
		chosen := g.next()
		for _, p := range t.out {
			g.mark[p] = chosen
		}
		var in []inbound
		for _, l := range t.inbound {
			if l.until > now && g.mark[l.p] != chosen {
				in = append(in, inbound{l.p, t.rtt[slices.Index(t.known, l.p)]})
			}
		}
		slices.SortFunc(in, func(p, q inbound) int {
			return cmp.Or(cmp.Compare(p.rtt, q.rtt), cmp.Compare(g.ids[p.p], g.ids[q.p]))
		})
		for _, l := range in {
			a.nbrs = append(a.nbrs, l.p)
		}
		a.known, a.knownIdx = make([]job.PeerRTT, 0, len(t.known)), slices.Clone(t.known)
		for _, p := range t.known {
			a.known = append(a.known, job.PeerRTT{ID: g.w.agents[p].id, RTT: g.w.topo.rtt(i, int(p))})
		}
	}
}

package testnet

import (
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job"
)

// Placed is where an agent is: its index in the net, its site, its P and
// its true RTT from the submitter (the topology's, not a measure: 0 for the
// submitter itself, 1 ms for another host of its site).
type Placed struct {
	Agent int
	Site  string
	P     int
	RTT   time.Duration
}

// HostShare is one host of a plan: where it is and how many processes
// (u_i) it got.
type HostShare struct {
	Placed
	Procs int
}

// OfferShare is one offer the submitter held when it placed the job: where
// the host is, the RTT the submitter measured to it, and the processes it
// got (0: cancelled).
type OfferShare struct {
	Placed
	Measured time.Duration
	Procs    int
}

// SiteShare is what one site got: hosts used, processes placed (one core
// each, as P = cores), and the offers its hosts made that the submitter
// held when it placed, with the RTTs it measured to them.
type SiteShare struct {
	Site           string
	Hosts, Cores   int
	Offers         int
	MinRTT, MaxRTT time.Duration // measured, over the site's offers
}

// Allocation is the outcome of one dry-run job of the experiment.
type Allocation struct {
	Strategy job.Strategy
	N        int
	Sites    []SiteShare  // Grid5000Sites order; sites without offers too
	Hosts    []HostShare  // the plan's hosts, in slist order
	Offers   []OfferShare // the rlist, in the submitter's (measured) order
	Time     time.Duration
	// Adverts is the advert messages all agents sent during the job
	// (flood Stats.Sent, summed). Reached is the agents whose worker was
	// handed the advert: each answered with one offer. Kept is the offers
	// in the submitter's rlist when it placed the job, and a dry run sends
	// one cancel lease request to each of them.
	Adverts uint64
	Reached int
	Kept    int
	Dropped uint64 // adverts dropped by any agent during the job (should be 0)
	// CPU is the CPU time the whole simulation used from the submission
	// to the job's end: all agents' work for the allocation, plus what
	// their background (overlay probes, DHT) did meanwhile.
	CPU time.Duration
}

// Reservations is the reservation messages of the job: one offer from
// every agent reached, and one lease request (here a cancel; a commit or a
// cancel in a real run) for every offer kept. Each is a request and its
// reply on one stream, counted once.
func (a Allocation) Reservations() int { return a.Reached + a.Kept }

// Site returns the share of the named site (zero if it is not listed).
func (a Allocation) Site(name string) SiteShare {
	for _, s := range a.Sites {
		if s.Site == name {
			return s
		}
	}
	return SiteShare{Site: name}
}

// Tally reads a dry run's final record: where its plan put the processes
// (by site, with where locating each peer), the offers it held, and the
// time from the first Reserving to Done.
func Tally(rec job.Record, where func(peer.ID) (Placed, bool)) (Allocation, error) {
	if rec.Plan == nil {
		return Allocation{}, fmt.Errorf("tally %s: no plan", rec.ID)
	}
	a := Allocation{Strategy: rec.Plan.Strategy, N: rec.Plan.N, Kept: len(rec.Offers)}
	sites := map[string]*SiteShare{}
	for _, name := range Grid5000Sites() {
		a.Sites = append(a.Sites, SiteShare{Site: name})
	}
	for i := range a.Sites {
		sites[a.Sites[i].Site] = &a.Sites[i]
	}
	site := func(p peer.ID) (Placed, *SiteShare, error) {
		at, ok := where(p)
		if !ok {
			return Placed{}, nil, fmt.Errorf("tally %s: peer %s is not in the net", rec.ID, p.ShortString())
		}
		if sites[at.Site] == nil {
			a.Sites = append(a.Sites, SiteShare{Site: at.Site})
			sites = reindex(a.Sites)
		}
		return at, sites[at.Site], nil
	}
	for _, h := range rec.Plan.Hosts {
		at, s, err := site(h.Offer.Peer)
		if err != nil {
			return Allocation{}, err
		}
		s.Hosts++
		s.Cores += len(h.Procs)
		a.Hosts = append(a.Hosts, HostShare{Placed: at, Procs: len(h.Procs)})
	}
	procs := map[peer.ID]int{}
	for _, h := range rec.Plan.Hosts {
		procs[h.Offer.Peer] = len(h.Procs)
	}
	for _, o := range rec.Offers {
		at, s, err := site(o.Peer)
		if err != nil {
			return Allocation{}, err
		}
		a.Offers = append(a.Offers, OfferShare{Placed: at, Measured: o.RTT, Procs: procs[o.Peer]})
		if s.Offers == 0 || o.RTT < s.MinRTT {
			s.MinRTT = o.RTT
		}
		s.MaxRTT = max(s.MaxRTT, o.RTT)
		s.Offers++
	}
	a.Time = reservingToEnd(rec.History)
	return a, nil
}

func reindex(ss []SiteShare) map[string]*SiteShare {
	m := make(map[string]*SiteShare, len(ss))
	for i := range ss {
		m[ss[i].Site] = &ss[i]
	}
	return m
}

// reservingToEnd is the time from the first Reserving event to the last
// event of a history (Done, for a dry run).
func reservingToEnd(h []job.StateChange) time.Duration {
	for _, e := range h {
		if e.State == job.Reserving {
			return h[len(h)-1].At.Sub(e.At)
		}
	}
	return 0
}

// IdealAllocation is what placement gives when every host of clusters
// offers and measured RTTs rank hosts exactly as the topology does: the
// real job.Place over an rlist of true RTTs, ties inside a site broken by
// a made-up, stable host order. A simulated allocation that differs from
// it had its RTT ranking disturbed (measurement noise) or missed hosts.
func IdealAllocation(clusters []Cluster, s job.Strategy, n int) (Allocation, error) {
	var rlist []job.Offer
	where := map[peer.ID]Placed{}
	agent := 0
	for _, c := range clusters {
		for range c.Hosts {
			p := peer.ID(fmt.Sprintf("host-%06d", agent))
			rlist = append(rlist, job.Offer{Peer: p, Lease: "ideal", Slots: c.Cores, Cores: c.Cores, RTT: c.RTT})
			where[p] = Placed{Agent: agent, Site: c.Site, P: c.Cores, RTT: c.RTT}
			agent++
		}
	}
	job.SortRList(rlist)
	plan, err := job.Place(s, rlist, n, 1)
	if err != nil {
		return Allocation{}, fmt.Errorf("ideal %s n=%d: %w", s, n, err)
	}
	rec := job.Record{ID: "ideal", Plan: &plan, Offers: rlist}
	return Tally(rec, func(p peer.ID) (Placed, bool) { at, ok := where[p]; return at, ok })
}

// Misplaced counts the processes of a that sit at another site than in
// want: half the sum over sites of the difference in cores. 0 means the
// same processes per site.
func Misplaced(a, want Allocation) int {
	diff := 0
	names := map[string]bool{}
	for _, s := range append(append([]SiteShare(nil), a.Sites...), want.Sites...) {
		if names[s.Site] {
			continue
		}
		names[s.Site] = true
		d := a.Site(s.Site).Cores - want.Site(s.Site).Cores
		diff += max(d, -d)
	}
	return diff / 2
}

// eccentricity is the largest hop count from start to an agent of g that
// it reaches: the flood radius that reaches them all.
func (g Graph) eccentricity(start peer.ID) int {
	dist := map[peer.ID]int{start: 0}
	queue := []peer.ID{start}
	far := 0
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, q := range g[p] {
			if _, ok := g[q]; !ok {
				continue
			}
			if _, seen := dist[q]; !seen {
				dist[q] = dist[p] + 1
				far = max(far, dist[q])
				queue = append(queue, q)
			}
		}
	}
	return far
}

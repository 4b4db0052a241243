package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/zorilla-p2p/zorilla/testnet"
)

// site is a set of agents close to each other: a Grid'5000 cluster or an
// internet region. Group names what a partition cuts off (the Grid'5000
// site of a cluster; the region itself).
type site struct {
	name  string
	group int
	local time.Duration   // RTT between two agents of the site
	x, y  float64         // internet: where the region is
	cl    testnet.Cluster // grid5000: the cluster
}

// topology is where agents are and how far apart.
type topology struct {
	sites  []site
	groups []string
	siteOf []int32
	access []time.Duration // internet: an agent's own link, added to every RTT
	nat    []bool
	relay  []int32 // a NAT'd agent's relay (a public agent of its region); -1
	cores  []int
	grid   bool
}

// gridTopology spreads agents over the eight clusters of the Grid'5000
// experiment in the proportions of its Table 1 (350 agents: exactly it),
// with the RTTs the real reproduction uses (testnet.ClusterRTT).
func gridTopology(n int) *topology {
	cs := testnet.Grid5000Clusters()
	total := 0
	for _, c := range cs {
		total += c.Hosts
	}
	t := &topology{grid: true}
	groups := map[string]int{}
	left := n
	for i, c := range cs {
		h := int(math.Round(float64(c.Hosts) * float64(n) / float64(total)))
		if i == len(cs)-1 || h > left {
			h = left
		}
		left -= h
		g, ok := groups[c.Site]
		if !ok {
			g = len(t.groups)
			groups[c.Site] = g
			t.groups = append(t.groups, c.Site)
		}
		t.sites = append(t.sites, site{name: c.Site + "/" + c.Name, group: g, local: time.Millisecond, cl: c})
		for range h {
			t.siteOf = append(t.siteOf, int32(i))
			t.cores = append(t.cores, c.Cores)
			t.nat = append(t.nat, false)
			t.relay = append(t.relay, -1)
			t.access = append(t.access, 0)
		}
	}
	return t
}

// internetTopology places regions on a plane (RTT between two grows with
// their distance: 20 ms to 270 ms), gives each a local RTT (2 to 20 ms)
// and each agent an access link (0.5 to 10 ms) and 1 to 8 cores; a share
// of agents is behind NAT and reached through a public agent of its
// region (a relay), at the cost of the extra hop.
func internetTopology(n, regions int, natShare float64, rng *rand.Rand) *topology {
	t := &topology{}
	for r := range regions {
		t.sites = append(t.sites, site{name: fmt.Sprintf("region%02d", r), group: r,
			local: time.Duration(2+rng.IntN(18)) * time.Millisecond, x: rng.Float64(), y: rng.Float64()})
		t.groups = append(t.groups, t.sites[r].name)
	}
	coreChoice := []int{1, 2, 2, 4, 4, 4, 8}
	public := make([][]int32, regions)
	for i := range n {
		r := i % regions
		t.siteOf = append(t.siteOf, int32(r))
		t.access = append(t.access, time.Duration(500+rng.IntN(9500))*time.Microsecond)
		t.cores = append(t.cores, coreChoice[rng.IntN(len(coreChoice))])
		nat := rng.Float64() < natShare
		t.nat = append(t.nat, nat)
		if !nat {
			public[r] = append(public[r], int32(i))
		}
	}
	t.relay = make([]int32, n)
	for i := range n {
		t.relay[i] = -1
		if t.nat[i] {
			if p := public[t.siteOf[i]]; len(p) > 0 {
				t.relay[i] = p[rng.IntN(len(p))]
			} else {
				t.nat[i] = false // a region with no public agent: direct
			}
		}
	}
	return t
}

// direct is the RTT of a direct connection between agents a and b.
func (t *topology) direct(a, b int) time.Duration {
	if a == b {
		return 50 * time.Microsecond
	}
	sa, sb := &t.sites[t.siteOf[a]], &t.sites[t.siteOf[b]]
	if t.grid {
		return testnet.ClusterRTT(sa.cl, sb.cl)
	}
	d := sa.local
	if sa != sb {
		d = 20*time.Millisecond + time.Duration(math.Hypot(sa.x-sb.x, sa.y-sb.y)*250*float64(time.Millisecond))
	}
	return d + t.access[a] + t.access[b]
}

// rtt is the RTT between a and b as their agents talk: through the
// relay of the one behind NAT, when one is.
func (t *topology) rtt(a, b int) time.Duration {
	switch {
	case a == b:
		return t.direct(a, b)
	case t.nat[b] && int(t.relay[b]) != a:
		r := int(t.relay[b])
		return t.direct(a, r) + t.direct(r, b)
	case t.nat[a] && int(t.relay[a]) != b:
		r := int(t.relay[a])
		return t.direct(a, r) + t.direct(r, b)
	}
	return t.direct(a, b)
}

// relayed reports whether a reaches b only through a relay.
func (t *topology) relayed(a, b int) bool {
	return a != b && (t.nat[b] && int(t.relay[b]) != a || t.nat[a] && int(t.relay[a]) != b)
}

func (t *topology) group(a int) int { return t.sites[t.siteOf[a]].group }

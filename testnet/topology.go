package testnet

import (
	"errors"
	"fmt"
	"time"
)

// Site is a group of hosts close to each other, like a cluster of
// Grid'5000.
type Site struct {
	Name  string
	Hosts int // agents in the site
	Cores int // cores of each agent; 0: node.DefaultConfig's
}

// SiteLink is the round-trip time between two sites.
type SiteLink struct {
	A, B string
	RTT  time.Duration
}

// Topology is a set of sites and the RTTs between them.
type Topology struct {
	Sites []Site
	Links []SiteLink
	// LocalRTT is the RTT between two agents of one site; 0 means 1ms.
	LocalRTT time.Duration
	// DefaultRTT is the RTT between sites with no Link; 0 means every pair
	// of sites needs a Link.
	DefaultRTT time.Duration
}

// ThreeSites is the reference topology: sites a, b and c in a line, 1ms
// inside a site, 20ms between neighbouring sites and 40ms end to end.
func ThreeSites(hostsPerSite int) Topology {
	return Topology{
		Sites: []Site{{Name: "a", Hosts: hostsPerSite}, {Name: "b", Hosts: hostsPerSite}, {Name: "c", Hosts: hostsPerSite}},
		Links: []SiteLink{
			{A: "a", B: "b", RTT: 20 * time.Millisecond},
			{A: "b", B: "c", RTT: 20 * time.Millisecond},
			{A: "a", B: "c", RTT: 40 * time.Millisecond},
		},
	}
}

// Size is the number of agents in the topology.
func (t Topology) Size() int {
	n := 0
	for _, s := range t.Sites {
		n += s.Hosts
	}
	return n
}

// RTT is the round-trip time between an agent of site a and one of site
// b (by index in Sites).
func (t Topology) RTT(a, b int) time.Duration {
	if a == b {
		return t.localRTT()
	}
	for _, l := range t.Links {
		if (l.A == t.Sites[a].Name && l.B == t.Sites[b].Name) || (l.A == t.Sites[b].Name && l.B == t.Sites[a].Name) {
			return l.RTT
		}
	}
	return t.DefaultRTT
}

func (t Topology) localRTT() time.Duration {
	if t.LocalRTT == 0 {
		return time.Millisecond
	}
	return t.LocalRTT
}

func (t Topology) validate() error {
	if len(t.Sites) == 0 || len(t.Sites) > 250 {
		return fmt.Errorf("testnet: %d sites, want 1 to 250", len(t.Sites))
	}
	index := map[string]int{}
	var errs []error
	for i, s := range t.Sites {
		if _, dup := index[s.Name]; dup || s.Name == "" {
			errs = append(errs, fmt.Errorf("site %d: name %q empty or repeated", i, s.Name))
		}
		index[s.Name] = i
		if s.Hosts < 0 || s.Hosts > 1<<16 || s.Cores < 0 {
			errs = append(errs, fmt.Errorf("site %s: %d hosts of %d cores", s.Name, s.Hosts, s.Cores))
		}
	}
	for _, l := range t.Links {
		_, okA := index[l.A]
		_, okB := index[l.B]
		if !okA || !okB || l.RTT <= 0 {
			errs = append(errs, fmt.Errorf("link %s-%s: unknown site or RTT %v <= 0", l.A, l.B, l.RTT))
		}
	}
	for a := range t.Sites {
		for b := a + 1; b < len(t.Sites); b++ {
			if t.RTT(a, b) <= 0 {
				errs = append(errs, fmt.Errorf("no RTT between sites %s and %s", t.Sites[a].Name, t.Sites[b].Name))
			}
		}
	}
	if t.LocalRTT < 0 || t.Size() == 0 {
		errs = append(errs, fmt.Errorf("local RTT %v, %d agents", t.LocalRTT, t.Size()))
	}
	if len(errs) > 0 {
		return fmt.Errorf("testnet: bad topology: %w", errors.Join(errs...))
	}
	return nil
}

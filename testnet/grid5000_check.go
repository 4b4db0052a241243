package testnet

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/zorilla-p2p/zorilla/job"
)

// CheckShape checks the rules of the paper's strategies that hold whatever
// RTTs the submitter measured:
//
//   - no host holds more processes than its P, and all n are placed;
//   - concentrate fills every host it uses to its P, only the last one
//     partly;
//   - spread gives every offered host one process before any host a
//     second one.
//
// The error lists every rule broken.
func CheckShape(a Allocation) error {
	var errs []error
	sum, most, partial := 0, 0, 0
	for _, h := range a.Hosts {
		if h.Procs < 1 || h.Procs > h.P {
			errs = append(errs, fmt.Errorf("agent %d (%s) holds %d processes, its P is %d", h.Agent, h.Site, h.Procs, h.P))
		}
		sum += h.Procs
		most = max(most, h.Procs)
		if h.Procs < min(h.P, a.N) {
			partial++
		}
	}
	if sum != a.N {
		errs = append(errs, fmt.Errorf("%d processes placed, %d requested", sum, a.N))
	}
	offered := 0
	for _, s := range a.Sites {
		offered += s.Offers
	}
	switch {
	case a.Strategy == job.Concentrate && partial > 1:
		errs = append(errs, fmt.Errorf("concentrate n=%d: %d hosts not filled to their P, want at most 1", a.N, partial))
	case a.Strategy == job.Spread && most > 1 && len(a.Hosts) < offered:
		errs = append(errs, fmt.Errorf("spread n=%d: a host holds %d processes while %d of %d offered hosts hold none",
			a.N, most, offered-len(a.Hosts), offered))
	}
	return errors.Join(errs...)
}

// CheckRanking checks the rules of the paper that follow the RTT order of
// the hosts, judged with the topology's true RTTs (clusters):
//
//   - closest sites first: no host is used at a site more than tol farther
//     than a site where an offered host was left unused;
//   - the closest site (nancy) first: with concentrate every process goes
//     there while it has the cores, with spread every one of its hosts is
//     used before any other;
//   - spread: extra processes go to the closest hosts first (within tol).
//
// tol is the RTT measurement noise allowed: 0 asks for the exact order of
// the sites; the closest-site rules are exact whatever tol (nancy is 9.5
// ms closer than any other site). The error lists every rule broken.
func CheckRanking(a Allocation, clusters []Cluster, tol time.Duration) error {
	rtt := map[string]time.Duration{}
	for _, c := range clusters {
		rtt[c.Site] = c.RTT
	}
	var errs []error
	for _, used := range a.Sites {
		for _, idle := range a.Sites {
			if used.Hosts > 0 && idle.Offers > idle.Hosts && rtt[used.Site] > rtt[idle.Site]+tol {
				errs = append(errs, fmt.Errorf("%d hosts used at %s (%v) while %d offered hosts at %s (%v) were not",
					used.Hosts, used.Site, rtt[used.Site], idle.Offers-idle.Hosts, idle.Site, rtt[idle.Site]))
			}
		}
	}
	closest := Available(clusters)[0]
	got := a.Site(closest.Site)
	switch a.Strategy {
	case job.Concentrate:
		if want := min(a.N, closest.Cores); got.Cores != want {
			errs = append(errs, fmt.Errorf("concentrate n=%d: %d processes at %s, want %d (its %d cores first)",
				a.N, got.Cores, closest.Site, want, closest.Cores))
		}
	case job.Spread:
		if want := min(a.N, closest.Hosts); got.Hosts != want {
			errs = append(errs, fmt.Errorf("spread n=%d: %d hosts at %s, want %d (its %d hosts first)",
				a.N, got.Hosts, closest.Site, want, closest.Hosts))
		}
		errs = append(errs, spreadExtrasClosest(a, tol)...)
	}
	return errors.Join(errs...)
}

// spreadExtrasClosest: a host holding more processes than another host
// that had room for more is not farther than it (beyond tol).
func spreadExtrasClosest(a Allocation, tol time.Duration) []error {
	for _, h := range a.Hosts {
		for _, o := range a.Hosts {
			if h.Procs > o.Procs && o.Procs < o.P && h.RTT > o.RTT+tol {
				return []error{fmt.Errorf("spread n=%d: agent %d at %s holds %d processes, closer agent %d at %s only %d of %d",
					a.N, h.Agent, h.Site, h.Procs, o.Agent, o.Site, o.Procs, o.P)}
			}
		}
	}
	return nil
}

// CheckMeasured checks a simulated allocation against what its submitter
// measured, which no load can excuse:
//
//   - no RTT was measured shorter than the link allows (slack aside): a
//     busy machine delays pings, it never speeds them up;
//   - the hosts used are those measured closest: a used host is never
//     measured farther than an offered host left unused.
func CheckMeasured(a Allocation, slack time.Duration) error {
	var errs []error
	var farthestUsed, closestIdle time.Duration = -1, -1
	var used, idle OfferShare
	for _, o := range a.Offers {
		if o.Measured < o.RTT-slack {
			errs = append(errs, fmt.Errorf("agent %d at %s measured at %v, below its link's RTT %v", o.Agent, o.Site, o.Measured, o.RTT))
		}
		switch {
		case o.Procs > 0 && o.Measured > farthestUsed:
			farthestUsed, used = o.Measured, o
		case o.Procs == 0 && (closestIdle < 0 || o.Measured < closestIdle):
			closestIdle, idle = o.Measured, o
		}
	}
	if closestIdle >= 0 && farthestUsed > closestIdle {
		errs = append(errs, fmt.Errorf("%s n=%d: agent %d at %s used, measured at %v, while agent %d at %s, measured at %v, was not",
			a.Strategy, a.N, used.Agent, used.Site, used.Measured, idle.Agent, idle.Site, idle.Measured))
	}
	return errors.Join(errs...)
}

// CheckAllocation is CheckShape and CheckRanking together.
func CheckAllocation(a Allocation, clusters []Cluster, tol time.Duration) error {
	return errors.Join(CheckShape(a), CheckRanking(a, clusters, tol))
}

// RTTClasses groups the sites of clusters, sorted by RTT to nancy, into
// classes: a site joins the class of the previous site when their RTTs
// differ by tol or less. With tol = 3 ms Table 1 gives nancy | lyon,
// rennes, bordeaux, grenoble (10.5 to 13.2 ms, the sites the paper saw
// "fiercely compete") | sophia. Measurement noise below tol cannot move a
// process from one class to another, so per-class totals are what a
// simulation on a busy machine reproduces exactly.
func RTTClasses(clusters []Cluster, tol time.Duration) [][]string {
	avail := Available(clusters)
	var sites []SiteShare
	for _, s := range avail {
		if s.Hosts > 0 {
			sites = append(sites, s)
		}
	}
	sort.SliceStable(sites, func(i, j int) bool { return sites[i].MinRTT < sites[j].MinRTT })
	var out [][]string
	for i, s := range sites {
		if i == 0 || s.MinRTT-sites[i-1].MinRTT > tol {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], s.Site)
	}
	return out
}

// ByClass sums a's sites over classes (RTTClasses): one SiteShare per
// class, named after its sites joined with "+".
func (a Allocation) ByClass(classes [][]string) []SiteShare {
	out := make([]SiteShare, len(classes))
	for i, class := range classes {
		for j, site := range class {
			if j > 0 {
				out[i].Site += "+"
			}
			out[i].Site += site
			s := a.Site(site)
			out[i].Hosts += s.Hosts
			out[i].Cores += s.Cores
			out[i].Offers += s.Offers
		}
	}
	return out
}

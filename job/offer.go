package job

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
)

// ErrInfeasible is wrapped by every refusal of a placement: the offers in
// hand cannot hold n×r processes with the replicas on distinct hosts.
var ErrInfeasible = errors.New("job: infeasible")

// Offer is a worker's answer to an advert (P2P-MPI's "OK with the value P"),
// with what the submitter measured itself. A list of offers sorted by RTT is
// P2P-MPI's rlist.
type Offer struct {
	Peer   peer.ID               `json:"peer"`
	Lease  string                `json:"lease"`           // the worker's lease key, quoted back in commit or cancel
	Slots  int                   `json:"slots"`           // P_i: processes the worker accepts for this job
	Cores  int                   `json:"cores"`           // cores the worker holds for this job
	Memory int64                 `json:"memory"`          // bytes the worker holds for this job
	RTT    time.Duration         `json:"rtt"`             // submitter-measured round trip (application-level ping)
	Addrs  []multiaddr.Multiaddr `json:"addrs,omitempty"` // where to reach the worker
	Site   string                `json:"site,omitempty"`  // the host's site label (SiteLabel), if any
	// Relayed: when it offered, the submitter was connected to the host
	// only through a relay (the host is behind a NAT, whatever private
	// addresses it lists). An MPICH job's ranks cannot reach it (PlacePMI).
	Relayed bool `json:"relayed,omitempty"`
	// GangFree is the worker's free rotation columns (OfferMsg.GangFree).
	GangFree *uint64 `json:"gang_free,omitempty"`
	// Expires is when the worker's lease of the offer ends unless it is
	// committed (OfferMsg.Expires); zero: never said.
	Expires time.Time `json:"expires,omitzero"`
}

// SortRList sorts offers by ascending RTT, ties broken by peer ID, so that
// the same offers always give the same rlist (and so the same placement).
func SortRList(rlist []Offer) {
	sort.SliceStable(rlist, func(i, j int) bool {
		if rlist[i].RTT != rlist[j].RTT {
			return rlist[i].RTT < rlist[j].RTT
		}
		return rlist[i].Peer < rlist[j].Peer
	})
}

// SelectHosts splits an ordered rlist into P2P-MPI's
// slist = rlist[1..min(|rlist|, n×r)] and the spares beyond it (the
// overbooking). The result slices share rlist's backing array.
func SelectHosts(rlist []Offer, n, r int) (slist, spares []Offer) {
	k := len(rlist)
	if n > 0 && r > 0 && n*r < k {
		k = n * r
	}
	if n <= 0 || r <= 0 {
		k = 0
	}
	return rlist[:k:k], rlist[k:]
}

// Capacity is c_i = min(P_i, n): a host never holds more than n processes of
// a job, or it would hold two copies of a rank. It is never negative.
func Capacity(o Offer, n int) int {
	return max(0, min(o.Slots, n))
}

// Feasible checks P2P-MPI's two conditions on slist: at least r hosts, so
// the r copies of a rank can be on distinct hosts, and sum(c_i) >= n×r. The
// error wraps ErrInfeasible and says which condition failed, with numbers.
func Feasible(slist []Offer, n, r int) error {
	if n < 1 || r < 1 {
		return fmt.Errorf("%w: need n >= 1 and r >= 1, got n=%d r=%d", ErrInfeasible, n, r)
	}
	if len(slist) < r {
		return fmt.Errorf("%w: %d hosts offered, need at least r=%d distinct hosts for the replicas",
			ErrInfeasible, len(slist), r)
	}
	sum := 0
	for _, o := range slist {
		sum += Capacity(o, n)
	}
	if sum < n*r {
		return fmt.Errorf("%w: not enough resources (got %d of %d process slots on %d hosts)",
			ErrInfeasible, sum, n*r, len(slist))
	}
	return nil
}

// usable splits rlist into the offers placement may use and those it must
// cancel: offers of no slot, and a second offer from a peer already listed
// (two offers from one host would let it hold two copies of a rank).
// Order is kept.
func usable(rlist []Offer) (ok, drop []Offer) {
	seen := make(map[peer.ID]bool, len(rlist))
	for _, o := range rlist {
		if o.Slots < 1 || seen[o.Peer] {
			drop = append(drop, o)
			continue
		}
		seen[o.Peer] = true
		ok = append(ok, o)
	}
	return ok, drop
}

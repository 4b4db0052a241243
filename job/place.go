package job

import (
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// HostPlan is what one host runs: its offer and its processes (u_i of them).
type HostPlan struct {
	Offer Offer        `json:"offer"`
	Procs []proto.Proc `json:"procs"`
}

// Plan is a placement: the hosts that run processes (u_i > 0), in slist
// order, and the offers it does not use (u_i = 0, unusable offers and the
// offers beyond slist). A submitter keeps a few of those, the spares,
// reserved until the job runs (Replan draws on them when a start fails),
// and gives the rest back.
type Plan struct {
	N        int        `json:"n"`
	R        int        `json:"r"`
	Strategy Strategy   `json:"strategy"`
	Hosts    []HostPlan `json:"hosts"`
	Spares   []Offer    `json:"cancel,omitempty"` // the offers not used; its JSON name is older
}

// Place runs P2P-MPI's co-allocation over an rlist given in preference order
// (SortRList, or OrderRList for a rank preference): select slist, check
// feasibility, map n×r processes with the strategy, number the ranks, and
// list the offers it does not use. rlist is not modified. Offers of no slot and
// repeated offers from one peer are never used. An infeasible request gives
// an error wrapping ErrInfeasible that says why.
func Place(s Strategy, rlist []Offer, n, r int) (Plan, error) {
	if _, err := ParseStrategy(string(s)); err != nil {
		return Plan{}, err
	}
	if n < 1 || r < 1 || n > proto.MaxProcs || r > proto.MaxReplicas || n*r > proto.MaxProcs {
		return Plan{}, fmt.Errorf("%w: n=%d r=%d out of range (n*r <= %d, r <= %d)",
			ErrInfeasible, n, r, proto.MaxProcs, proto.MaxReplicas)
	}
	ok, drop := usable(rlist)
	slist, spares := SelectHosts(ok, n, r)
	if err := Feasible(slist, n, r); err != nil {
		return Plan{}, err
	}
	u, err := allocate(s, slist, n, r)
	if err != nil {
		return Plan{}, err
	}
	p := Plan{N: n, R: r, Strategy: s}
	procs := assignRanks(u, n)
	for i, o := range slist {
		if u[i] == 0 {
			p.Spares = append(p.Spares, o)
			continue
		}
		p.Hosts = append(p.Hosts, HostPlan{Offer: o, Procs: procs[i]})
	}
	p.Spares = append(p.Spares, spares...)
	p.Spares = append(p.Spares, drop...)
	return p, nil
}

// assignRanks is P2P-MPI's rank numbering: walk slist in order and give host
// i its u_i next ranks, wrapping to 0 after n-1. The replica index is how
// many times the counter has wrapped. Since u_i <= n, the ranks of one host
// are distinct, so no host holds two copies of a rank.
func assignRanks(u []int, n int) [][]proto.Proc {
	out := make([][]proto.Proc, len(u))
	k := 0 // processes numbered so far
	for i, ui := range u {
		for l := 0; l < ui; l++ {
			out[i] = append(out[i], proto.Proc{Rank: k % n, Replica: k / n})
			k++
		}
	}
	return out
}

// Replan places the job again without the failed hosts, as CrossGrid's
// retry of a start: the surviving hosts and the spares of prev (its Cancel
// list, in the order they came) are the new rlist, so the next closest
// spares replace the failed hosts before anything else changes. When they
// are not enough, the error wraps ErrInfeasible and the job must be matched
// again (a new flood).
func Replan(prev Plan, failed map[peer.ID]bool) (Plan, error) {
	return replan(prev, failed, false)
}

// replan is Replan; pmi places with PlacePMI (an MPICH job's hosts must
// reach each other directly).
func replan(prev Plan, failed map[peer.ID]bool, pmi bool) (Plan, error) {
	rlist := make([]Offer, 0, len(prev.Hosts)+len(prev.Spares))
	for _, h := range prev.Hosts {
		if !failed[h.Offer.Peer] {
			rlist = append(rlist, h.Offer)
		}
	}
	for _, o := range prev.Spares {
		if !failed[o.Peer] {
			rlist = append(rlist, o)
		}
	}
	var (
		p   Plan
		err error
	)
	if pmi {
		p, err = PlacePMI(prev.Strategy, rlist, prev.N)
	} else {
		p, err = Place(prev.Strategy, rlist, prev.N, prev.R)
	}
	if err != nil {
		return Plan{}, fmt.Errorf("replan without %d failed hosts: %w", len(failed), err)
	}
	return p, nil
}

// Peers lists the hosts that run processes, in plan order.
func (p Plan) Peers() []peer.ID {
	out := make([]peer.ID, len(p.Hosts))
	for i, h := range p.Hosts {
		out[i] = h.Offer.Peer
	}
	return out
}

// Procs returns the processes planned on one peer (nil if it runs none).
func (p Plan) Procs(id peer.ID) []proto.Proc {
	for _, h := range p.Hosts {
		if h.Offer.Peer == id {
			return h.Procs
		}
	}
	return nil
}

// Offers are the offers of the plan's hosts, in its order.
func (p Plan) Offers() []Offer {
	out := make([]Offer, len(p.Hosts))
	for i, h := range p.Hosts {
		out[i] = h.Offer
	}
	return out
}

// Farthest is the largest RTT of the plan's hosts.
func (p Plan) Farthest() time.Duration {
	var d time.Duration
	for _, h := range p.Hosts {
		d = max(d, h.Offer.RTT)
	}
	return d
}

package job

import (
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

// RankTable builds the plan's rank table, the one its commits carry: its
// hosts in the plan's order, each with its site among the job's
// (SiteClasses), and where every copy of every rank runs.
func (p Plan) RankTable() proto.RankTable {
	offers := p.Offers()
	site := SiteClasses(offers)
	hosts := make([]proto.HostRef, len(p.Hosts))
	for i, h := range p.Hosts {
		hosts[i] = proto.HostRef{Peer: h.Offer.Peer, Site: site[i]}
	}
	t := proto.NewRankTable(hosts, max(p.N, 0), max(p.R, 0))
	for i, h := range p.Hosts {
		for _, pr := range h.Procs {
			t.Place(i, pr)
		}
	}
	return t
}

// Check verifies a plan's invariants, for a plan read back from disk or
// built by hand: hosts distinct, each within its capacity, every copy
// placed exactly once with replica indexes 0..r-1, and its rank table
// valid (proto.RankTable.Check: no host holds two copies of a rank).
func (p Plan) Check() error {
	if _, err := ParseStrategy(string(p.Strategy)); err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	if p.N < 1 || p.R < 1 || p.N > proto.MaxProcs || p.R > proto.MaxReplicas || p.N*p.R > proto.MaxProcs {
		return fmt.Errorf("plan: n=%d r=%d out of range", p.N, p.R)
	}
	seenHost := make(map[peer.ID]bool, len(p.Hosts))
	seenProc := make(map[proto.Proc]bool, p.N*p.R)
	for _, h := range p.Hosts {
		if err := checkHost(h, p.N, p.R, seenHost, seenProc); err != nil {
			return err
		}
	}
	if len(seenProc) != p.N*p.R {
		return fmt.Errorf("plan: %d processes placed, want n*r=%d", len(seenProc), p.N*p.R)
	}
	if err := p.RankTable().Check(p.N, p.R); err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	return nil
}

func checkHost(h HostPlan, n, r int, seenHost map[peer.ID]bool, seenProc map[proto.Proc]bool) error {
	id := h.Offer.Peer
	if id == "" || seenHost[id] {
		return fmt.Errorf("plan: host %q missing or listed twice", id)
	}
	seenHost[id] = true
	if len(h.Procs) == 0 || len(h.Procs) > Capacity(h.Offer, n) {
		return fmt.Errorf("plan: host %s has %d processes, capacity %d", id, len(h.Procs), Capacity(h.Offer, n))
	}
	for _, pr := range h.Procs {
		if pr.Rank < 0 || pr.Rank >= n || pr.Replica < 0 || pr.Replica >= r {
			return fmt.Errorf("plan: host %s: process %+v out of range", id, pr)
		}
		if seenProc[pr] {
			return fmt.Errorf("plan: rank %d replica %d placed twice", pr.Rank, pr.Replica)
		}
		seenProc[pr] = true
	}
	return nil
}

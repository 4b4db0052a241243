package job

import (
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"
)

// RankTable says where every copy of every rank runs: t[rank][replica] is
// the host. It travels in the commit so that every host can route messages
// to any rank, and fall back to another copy when one host dies.
type RankTable [][]peer.ID

// RankTable builds the plan's rank table.
func (p Plan) RankTable() RankTable {
	if p.N < 1 || p.R < 1 {
		return nil
	}
	t := make(RankTable, p.N)
	for i := range t {
		t[i] = make([]peer.ID, p.R)
	}
	for _, h := range p.Hosts {
		for _, pr := range h.Procs {
			if pr.Rank >= 0 && pr.Rank < p.N && pr.Replica >= 0 && pr.Replica < p.R {
				t[pr.Rank][pr.Replica] = h.Offer.Peer
			}
		}
	}
	return t
}

// Check verifies a rank table received from elsewhere: n ranks with r
// copies each, every copy placed, no two copies of a rank on one host.
func (t RankTable) Check(n, r int) error {
	if n < 1 || r < 1 || n > MaxProcs || r > MaxReplicas || n*r > MaxProcs {
		return fmt.Errorf("rank table: n=%d r=%d out of range", n, r)
	}
	if len(t) != n {
		return fmt.Errorf("rank table: %d ranks, want n=%d", len(t), n)
	}
	for rank, copies := range t {
		if len(copies) != r {
			return fmt.Errorf("rank table: rank %d has %d copies, want r=%d", rank, len(copies), r)
		}
		for rep, h := range copies {
			if h == "" {
				return fmt.Errorf("rank table: rank %d replica %d has no host", rank, rep)
			}
			for _, other := range copies[:rep] {
				if other == h {
					return fmt.Errorf("rank table: rank %d has two copies on host %s", rank, h)
				}
			}
		}
	}
	return nil
}

// Check verifies a plan's invariants, for a plan read back from disk or
// built by hand: hosts distinct, each within its capacity, every rank
// placed exactly r times with replica indexes 0..r-1, never twice on one
// host.
func (p Plan) Check() error {
	if _, err := ParseStrategy(string(p.Strategy)); err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	if p.N < 1 || p.R < 1 || p.N > MaxProcs || p.R > MaxReplicas || p.N*p.R > MaxProcs {
		return fmt.Errorf("plan: n=%d r=%d out of range", p.N, p.R)
	}
	seenHost := make(map[peer.ID]bool, len(p.Hosts))
	seenProc := make(map[Proc]bool, p.N*p.R)
	for _, h := range p.Hosts {
		if err := checkHost(h, p.N, p.R, seenHost, seenProc); err != nil {
			return err
		}
	}
	if len(seenProc) != p.N*p.R {
		return fmt.Errorf("plan: %d processes placed, want n*r=%d", len(seenProc), p.N*p.R)
	}
	return nil
}

func checkHost(h HostPlan, n, r int, seenHost map[peer.ID]bool, seenProc map[Proc]bool) error {
	id := h.Offer.Peer
	if id == "" || seenHost[id] {
		return fmt.Errorf("plan: host %q missing or listed twice", id)
	}
	seenHost[id] = true
	if len(h.Procs) == 0 || len(h.Procs) > Capacity(h.Offer, n) {
		return fmt.Errorf("plan: host %s has %d processes, capacity %d", id, len(h.Procs), Capacity(h.Offer, n))
	}
	ranks := make(map[int]bool, len(h.Procs))
	for _, pr := range h.Procs {
		if pr.Rank < 0 || pr.Rank >= n || pr.Replica < 0 || pr.Replica >= r {
			return fmt.Errorf("plan: host %s: process %+v out of range", id, pr)
		}
		if ranks[pr.Rank] {
			return fmt.Errorf("plan: host %s holds two copies of rank %d", id, pr.Rank)
		}
		if seenProc[pr] {
			return fmt.Errorf("plan: rank %d replica %d placed twice", pr.Rank, pr.Replica)
		}
		ranks[pr.Rank] = true
		seenProc[pr] = true
	}
	return nil
}

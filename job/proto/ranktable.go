package proto

import (
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"
)

// HostRef is one host of a job, as the MPI routers need it.
type HostRef struct {
	Peer  peer.ID  `json:"peer"`
	Addrs []string `json:"addrs,omitempty"`
	Site  int      `json:"site,omitempty"` // the host's site among the job's; 0 for all from older submitters
}

// RankTable says where every copy of every rank runs: Ranks[rank][replica]
// is an index in Hosts. The submitter builds it from its plan, every
// commit carries it whole (so that every host can route messages to any
// rank, and fall back to another copy when one host dies), and Check is
// the one place it is verified.
type RankTable struct {
	Hosts []HostRef `json:"hosts"`     // every host of the job
	Ranks [][]int   `json:"rank_host"` // Ranks[rank][replica] = index in Hosts
}

// NewRankTable returns a table of n ranks with r copies each over hosts,
// every copy still unplaced (-1): Place fills it.
func NewRankTable(hosts []HostRef, n, r int) RankTable {
	t := RankTable{Hosts: hosts, Ranks: make([][]int, n)}
	for rank := range t.Ranks {
		t.Ranks[rank] = make([]int, r)
		for k := range t.Ranks[rank] {
			t.Ranks[rank][k] = -1
		}
	}
	return t
}

// Place puts copy p on the host of index host. Copies outside the table
// are ignored: Check reports what is missing.
func (t RankTable) Place(host int, p Proc) {
	if p.Rank >= 0 && p.Rank < len(t.Ranks) && p.Replica >= 0 && p.Replica < len(t.Ranks[p.Rank]) {
		t.Ranks[p.Rank][p.Replica] = host
	}
}

// Check verifies a table built elsewhere: n ranks with r copies each,
// within MaxProcs, every copy placed on a listed host, no two copies of a
// rank on one host, hosts named once each, sites numbered below the
// number of hosts.
func (t RankTable) Check(n, r int) error {
	if n < 1 || r < 1 || n > MaxProcs || r > MaxReplicas || n*r > MaxProcs {
		return fmt.Errorf("rank table: n=%d r=%d out of range", n, r)
	}
	if err := t.checkHosts(); err != nil {
		return err
	}
	if len(t.Ranks) != n {
		return fmt.Errorf("rank table: %d ranks, want n=%d", len(t.Ranks), n)
	}
	for rank, copies := range t.Ranks {
		if len(copies) != r {
			return fmt.Errorf("rank table: rank %d has %d copies, want r=%d", rank, len(copies), r)
		}
		for k, h := range copies {
			if h < 0 || h >= len(t.Hosts) {
				return fmt.Errorf("rank table: rank %d replica %d has no host (index %d of %d)", rank, k, h, len(t.Hosts))
			}
			for _, other := range copies[:k] {
				if other == h {
					return fmt.Errorf("rank table: rank %d has two copies on host %s", rank, t.Hosts[h].Peer.ShortString())
				}
			}
		}
	}
	return nil
}

func (t RankTable) checkHosts() error {
	if len(t.Hosts) > MaxProcs {
		return fmt.Errorf("rank table: %d hosts, at most %d", len(t.Hosts), MaxProcs)
	}
	seen := make(map[peer.ID]bool, len(t.Hosts))
	for i, h := range t.Hosts {
		switch {
		case h.Peer == "":
			return fmt.Errorf("rank table: host %d has no peer ID", i)
		case seen[h.Peer]:
			return fmt.Errorf("rank table: host %s listed twice", h.Peer.ShortString())
		case h.Site < 0 || h.Site >= len(t.Hosts):
			return fmt.Errorf("rank table: host %s in site %d of %d hosts", h.Peer.ShortString(), h.Site, len(t.Hosts))
		}
		seen[h.Peer] = true
	}
	return nil
}

// Peer is the host running copy k of rank; "" outside the table.
func (t RankTable) Peer(rank, k int) peer.ID {
	if rank < 0 || rank >= len(t.Ranks) || k < 0 || k >= len(t.Ranks[rank]) {
		return ""
	}
	if h := t.Ranks[rank][k]; h >= 0 && h < len(t.Hosts) {
		return t.Hosts[h].Peer
	}
	return ""
}

// Peers is the table by peer: Peers()[rank][replica] is the host of that
// copy.
func (t RankTable) Peers() [][]peer.ID {
	out := make([][]peer.ID, len(t.Ranks))
	for rank, copies := range t.Ranks {
		out[rank] = make([]peer.ID, len(copies))
		for k := range copies {
			out[rank][k] = t.Peer(rank, k)
		}
	}
	return out
}

// Sites numbers the site of each host.
func (t RankTable) Sites() map[peer.ID]int {
	out := make(map[peer.ID]int, len(t.Hosts))
	for _, h := range t.Hosts {
		out[h.Peer] = h.Site
	}
	return out
}

// ProcsOn lists the copies the table places on host p, by rank.
func (t RankTable) ProcsOn(p peer.ID) []Proc {
	var out []Proc
	for rank := range t.Ranks {
		for k := range t.Ranks[rank] {
			if t.Peer(rank, k) == p {
				out = append(out, Proc{Rank: rank, Replica: k})
			}
		}
	}
	return out
}

// RankTableOf builds the table that places copy k of rank r on
// peers[r][k], its hosts in the order they first appear, each in its site
// of sites (0 when missing). An empty peer ID stays unplaced, for Check
// to report.
func RankTableOf(peers [][]peer.ID, sites map[peer.ID]int) RankTable {
	index := map[peer.ID]int{}
	var hosts []HostRef
	for _, copies := range peers {
		for _, p := range copies {
			if _, ok := index[p]; !ok && p != "" {
				index[p] = len(hosts)
				hosts = append(hosts, HostRef{Peer: p, Site: sites[p]})
			}
		}
	}
	t := RankTable{Hosts: hosts, Ranks: make([][]int, len(peers))}
	for rank, copies := range peers {
		t.Ranks[rank] = make([]int, len(copies))
		for k, p := range copies {
			if i, ok := index[p]; ok {
				t.Ranks[rank][k] = i
			} else {
				t.Ranks[rank][k] = -1
			}
		}
	}
	return t
}

package router

import (
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	jobproto "github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/mpi/internal/proto"
)

// Proc names one copy of a rank: rank Rank, replica Replica.
type Proc struct {
	Rank    int
	Replica int
}

// JobSpec is what a router needs to know about a job: who runs each copy of
// each rank, and which copies run here.
type JobSpec struct {
	ID       string
	Key      string // secret the job's processes present in their Hello
	Size     int    // ranks
	Replicas int    // copies of each rank, on distinct agents
	// Table is the job's rank table, as its commit carried it: the agent
	// that runs each copy of each rank, and the site of each agent (agents
	// close to one another, as the submitter grouped them), so that
	// collectives cross between sites last.
	Table jobproto.RankTable
	Local []Proc // the copies running on this agent
	// OnSaved, when set, is called (from the rank's reader, so it must
	// not block long) each time a local rank says it wrote its part of a
	// checkpoint; see marker.go.
	OnSaved func(Saved)
}

// validate checks the spec against the agent it is added to.
func (s JobSpec) validate(self peer.ID) error {
	switch {
	case s.ID == "" || len(s.ID) > proto.MaxJobLen:
		return fmt.Errorf("job ID of %d bytes", len(s.ID))
	case len(s.Key) > proto.MaxKeyLen:
		return fmt.Errorf("job key of %d bytes", len(s.Key))
	case s.Size < 1 || s.Size > proto.MaxRanks:
		return fmt.Errorf("size %d", s.Size)
	case s.Replicas < 1:
		return fmt.Errorf("replicas %d", s.Replicas)
	}
	if err := s.Table.Check(s.Size, s.Replicas); err != nil {
		return err
	}
	mine := map[Proc]bool{}
	for _, p := range s.Table.ProcsOn(self) {
		mine[Proc{p.Rank, p.Replica}] = true
	}
	for _, p := range s.Local {
		if !mine[p] {
			return fmt.Errorf("local copy %v is not hosted here by the rank table (or listed twice)", p)
		}
		delete(mine, p)
	}
	if len(mine) != 0 {
		return fmt.Errorf("%d copies hosted here by the rank table are missing from Local", len(mine))
	}
	return nil
}

// hostLayout numbers the agents of a job in order of first appearance and
// returns, per rank, the number of the agent running its first copy.
func hostLayout(hosts [][]peer.ID) []uint32 {
	ids := map[peer.ID]uint32{}
	out := make([]uint32, len(hosts))
	for r, copies := range hosts {
		id, ok := ids[copies[0]]
		if !ok {
			id = uint32(len(ids))
			ids[copies[0]] = id
		}
		out[r] = id
	}
	return out
}

// siteLayout is the site of each rank's first copy, numbered from 0 in
// the order of their lowest rank, or nil when every rank is on one site.
func siteLayout(hosts [][]peer.ID, sites map[peer.ID]int) []uint32 {
	ids := map[int]uint32{}
	out := make([]uint32, len(hosts))
	for r, copies := range hosts {
		s := sites[copies[0]]
		id, ok := ids[s]
		if !ok {
			id = uint32(len(ids))
			ids[s] = id
		}
		out[r] = id
	}
	if len(ids) < 2 {
		return nil
	}
	return out
}

// remotes lists the agents of the job other than self, in order of first
// appearance.
func remotes(hosts [][]peer.ID, self peer.ID) []peer.ID {
	seen := map[peer.ID]bool{self: true}
	var out []peer.ID
	for _, copies := range hosts {
		for _, h := range copies {
			if !seen[h] {
				seen[h] = true
				out = append(out, h)
			}
		}
	}
	return out
}

// orphaned returns the ranks left without a live copy when the agents in
// lostHosts and the local copies in lostCopies are gone: the ranks whose
// loss fails the job.
func orphaned(hosts [][]peer.ID, lostHosts map[peer.ID]bool, lostCopies map[Proc]bool) []int {
	var out []int
	for r, copies := range hosts {
		alive := false
		for k, h := range copies {
			if !lostHosts[h] && !lostCopies[Proc{r, k}] {
				alive = true
				break
			}
		}
		if !alive {
			out = append(out, r)
		}
	}
	return out
}

// replicaOn returns which replica of rank runs on host, or -1.
func replicaOn(hosts [][]peer.ID, rank int, host peer.ID) int {
	for k, h := range hosts[rank] {
		if h == host {
			return k
		}
	}
	return -1
}

// replicaOnAny reports whether host runs any copy of the job.
func replicaOnAny(hosts [][]peer.ID, host peer.ID) bool {
	for _, copies := range hosts {
		for _, h := range copies {
			if h == host {
				return true
			}
		}
	}
	return false
}

package job

import (
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// LostCopy is a copy of a rank that a replicated job lost while it ran: its
// host died or was cut off, or its process ended abnormally. The job goes
// on while another copy of the rank lives.
type LostCopy struct {
	Rank    int       `json:"rank"`
	Replica int       `json:"replica"`
	Host    peer.ID   `json:"host"`
	At      time.Time `json:"at"`
	Why     string    `json:"why"`
}

// MaxLost bounds the lost copies a record lists.
const MaxLost = 256

// CopiesLeft returns how many copies of rank are still alive in plan when
// the copies in lost are gone.
func CopiesLeft(plan Plan, lost []LostCopy, rank int) int {
	gone := map[proto.Proc]bool{}
	for _, l := range lost {
		gone[proto.Proc{Rank: l.Rank, Replica: l.Replica}] = true
	}
	left := 0
	for _, h := range plan.Hosts {
		for _, p := range h.Procs {
			if p.Rank == rank && !gone[p] {
				left++
			}
		}
	}
	return left
}

// lostNotice is the line a user following the job reads about a lost copy.
func lostNotice(l LostCopy, left int) string {
	copies := "copies"
	if left == 1 {
		copies = "copy"
	}
	return fmt.Sprintf("rank %d copy %d lost on %s (%s); %d %s left", l.Rank, l.Replica, shortPeer(l.Host), l.Why, left, copies)
}

// shortPeer names a peer for a person: the start and the end of its ID.
func shortPeer(p peer.ID) string {
	s := p.String()
	if len(s) <= 12 {
		return s
	}
	return s[:4] + "…" + s[len(s)-4:]
}

// loseCopies records copies lost on host, tells the user once per copy,
// and returns the ranks left without a copy.
func (ss *session) loseCopies(host peer.ID, procs []proto.Proc, why string) (orphans []int) {
	if ss.rec.Plan == nil {
		return nil
	}
	now := time.Now()
	for _, p := range procs {
		if ss.copyLost(p) {
			continue
		}
		l := LostCopy{Rank: p.Rank, Replica: p.Replica, Host: host, At: now, Why: why}
		if len(ss.rec.Lost) < MaxLost {
			ss.rec.Lost = append(ss.rec.Lost, l)
		}
		ss.lost = append(ss.lost, l)
		left := CopiesLeft(*ss.rec.Plan, ss.lost, p.Rank)
		ss.feed.append(Update{Kind: "output", Rank: -1, Stream: "stderr", Line: lostNotice(l, left)})
		if left == 0 {
			orphans = append(orphans, p.Rank)
		}
	}
	ss.save()
	return orphans
}

// copyLost reports whether copy p was counted lost already.
func (ss *session) copyLost(p proto.Proc) bool {
	for _, l := range ss.lost {
		if l.Rank == p.Rank && l.Replica == p.Replica {
			return true
		}
	}
	return false
}

package job

import (
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

// ShortPeer names a peer for a person: the start and the end of its ID.
func ShortPeer(p peer.ID) string {
	s := p.String()
	if len(s) <= 12 {
		return s
	}
	return s[:4] + "…" + s[len(s)-4:]
}

package node

import (
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/submitter"
)

var _ submitter.Knower = pinger{}

// Known lists the peers the overlay knows, with their smoothed RTT, the
// dead ones marked: the submitter's view of the hosts its flood may
// reach. The overlay keeps the closest peers it has heard of, so a peer it
// does not know is farther than those it does (when its table is full) or
// not reachable yet.
func (p pinger) Known() []job.PeerRTT {
	peers := p.n.ov.Peers()
	out := make([]job.PeerRTT, 0, len(peers))
	for _, pi := range peers {
		if pi.ID == p.n.h.ID() {
			continue
		}
		rtt := pi.RTT
		if !pi.Measured || pi.Dead {
			rtt = 0
		}
		out = append(out, job.PeerRTT{ID: pi.ID, RTT: rtt, Dead: pi.Dead})
	}
	return out
}

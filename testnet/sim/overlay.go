package sim

import (
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/overlay"
)

// buildOverlay gives every agent the peers it learned and its neighbours.
// An agent learns Candidates peers as the overlay's exchange of known
// peers would bring them: half from its own site or region (the peers a
// site's bootstrap and mDNS give), half from anywhere. It measures them
// (the topology's RTT) and chooses its neighbours with the overlay's own
// selection: the nearest, and a few long-range links.
func (w *World) buildOverlay() {
	bySite := make([][]int32, len(w.topo.sites))
	for i, s := range w.topo.siteOf {
		bySite[s] = append(bySite[s], int32(i))
	}
	n := len(w.agents)
	for _, a := range w.agents {
		want := min(w.cfg.Candidates, n-1)
		seen := map[int32]bool{a.idx: true}
		var cands []overlay.Candidate
		add := func(p int32) {
			if seen[p] {
				return
			}
			seen[p] = true
			cands = append(cands, overlay.Candidate{ID: w.agents[p].id, RTT: w.topo.rtt(int(a.idx), int(p))})
			a.known = append(a.known, job.PeerRTT{ID: w.agents[p].id, RTT: w.topo.rtt(int(a.idx), int(p))})
			a.knownIdx = append(a.knownIdx, p)
		}
		mates := bySite[w.topo.siteOf[a.idx]]
		for tries := 0; len(cands) < want/2 && tries < 4*want && len(mates) > 1; tries++ {
			add(mates[w.rng.IntN(len(mates))])
		}
		for tries := 0; len(cands) < want && tries < 8*want; tries++ {
			add(int32(w.rng.IntN(n)))
		}
		for _, id := range overlay.SelectNeighbours(cands, w.cfg.Neighbours, w.cfg.LongRange, w.rng) {
			a.nbrs = append(a.nbrs, w.byID[id])
		}
	}
}

package sim

import (
	"time"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/overlay"
)

// buildOverlay gives every agent the peers it learned and its neighbours.
// An agent learns Candidates peers as the overlay's exchange of known
// peers would bring them: half from its own site or region (the peers a
// site's bootstrap and mDNS give), half from anywhere. It measures them
// (the topology's RTT) and chooses its neighbours with the overlay's own
// selection: the nearest, and a few long-range links; the peers that chose
// it are its neighbours too.
func (w *World) buildOverlay() {
	bySite := make([][]int32, len(w.topo.sites))
	for i, s := range w.topo.siteOf {
		bySite[s] = append(bySite[s], int32(i))
	}
	n := len(w.agents)
	seen := make([]int32, n) // the agent that last learned each peer, plus one
	for _, a := range w.agents {
		want := min(w.cfg.Candidates, n-1)
		seen[a.idx] = a.idx + 1
		cands := make([]overlay.Candidate, 0, want)
		add := func(p int32) {
			if seen[p] == a.idx+1 {
				return
			}
			seen[p] = a.idx + 1
			// Measured with some noise (up to 10%): agents of one site
			// are equally far apart, and the noise, as on real links,
			// breaks their ties in a different order for each agent.
			rtt := w.topo.rtt(int(a.idx), int(p))
			cands = append(cands, overlay.Candidate{ID: w.agents[p].id, RTT: rtt + time.Duration(w.rng.Int64N(int64(rtt)/10+1))})
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
	w.addInbound(overlay.DefaultConfig().MaxInbound)
}

// addInbound makes every agent a neighbour of the peers that chose it, as
// the overlay does (a peer that says "you are my neighbour" is flooded to
// as well), up to maxInbound such peers each.
func (w *World) addInbound(maxInbound int) {
	inbound := make([][]int32, len(w.agents))
	for _, a := range w.agents {
		for _, nb := range a.nbrs {
			if len(inbound[nb]) < maxInbound {
				inbound[nb] = append(inbound[nb], a.idx)
			}
		}
	}
	for _, a := range w.agents {
		chosen := map[int32]bool{}
		for _, nb := range a.nbrs {
			chosen[nb] = true
		}
		for _, p := range inbound[a.idx] {
			if !chosen[p] {
				chosen[p] = true
				a.nbrs = append(a.nbrs, p)
			}
		}
	}
}

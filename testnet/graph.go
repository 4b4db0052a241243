package testnet

import "github.com/libp2p/go-libp2p/core/peer"

// Graph is who lists whom as a neighbour: a directed graph of agents.
type Graph map[peer.ID][]peer.ID

// StronglyConnected reports whether every agent of g reaches every other
// along neighbour links, which is what a flood from any agent needs. Links
// to agents that are not keys of g are ignored. An empty graph is
// connected.
func (g Graph) StronglyConnected() bool {
	for start := range g {
		return g.reach(start) == len(g) && g.reverse().reach(start) == len(g)
	}
	return true
}

// Reach counts the agents reachable from start, start included.
func (g Graph) reach(start peer.ID) int {
	seen := map[peer.ID]bool{start: true}
	queue := []peer.ID{start}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, q := range g[p] {
			if _, ok := g[q]; ok && !seen[q] {
				seen[q] = true
				queue = append(queue, q)
			}
		}
	}
	return len(seen)
}

func (g Graph) reverse() Graph {
	r := make(Graph, len(g))
	for p, out := range g {
		if _, ok := r[p]; !ok {
			r[p] = nil
		}
		for _, q := range out {
			if _, ok := g[q]; ok {
				r[q] = append(r[q], p)
			}
		}
	}
	return r
}

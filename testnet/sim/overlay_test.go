package sim

import (
	"slices"
	"testing"

	"github.com/zorilla-p2p/zorilla/overlay"
)

// TestOverlayFormsByExchange checks the overlay the exchange forms from
// the bootstraps, on both topologies: every agent has its K nearest and
// Random long-range neighbours among the peers it knows, at most
// MaxInbound more chose it, its table holds at most Candidates peers,
// every flood from any agent can reach every other (the neighbour graph
// is strongly connected), and its nearest neighbours are of its own site.
func TestOverlayFormsByExchange(t *testing.T) {
	for _, topo := range []string{"internet", "grid5000"} {
		cfg := DefaultConfig(300, 0, 1)
		cfg.Topology = topo
		w, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		k, chosen := cfg.Neighbours, cfg.Neighbours+cfg.LongRange
		near, local := 0, 0
		for _, a := range w.agents {
			if len(a.known) > cfg.Candidates || len(a.nbrs) < chosen || len(a.nbrs) > chosen+overlay.DefaultConfig().MaxInbound {
				t.Fatalf("%s: agent %d knows %d peers and has %d neighbours", topo, a.idx, len(a.known), len(a.nbrs))
			}
			for i, p := range a.nbrs {
				if p == a.idx || slices.Contains(a.nbrs[:i], p) || i < chosen && !slices.Contains(a.knownIdx, p) {
					t.Fatalf("%s: agent %d: neighbours %v: itself, twice, or a stranger chosen", topo, a.idx, a.nbrs)
				}
			}
			for _, p := range a.nbrs[:k] {
				near++
				if w.topo.group(int(p)) == w.topo.group(int(a.idx)) {
					local++
				}
			}
		}
		if local*100 < near*95 {
			t.Errorf("%s: %d of %d nearest neighbours of the agents' own sites, want 95%%", topo, local, near)
		}
		if n := reached(w, false); n != len(w.agents) {
			t.Errorf("%s: a flood from agent 0 reaches %d of %d agents", topo, n, len(w.agents))
		}
		if n := reached(w, true); n != len(w.agents) {
			t.Errorf("%s: a flood reaches agent 0 from %d of %d agents", topo, n, len(w.agents))
		}
	}
}

// reached counts the agents a flood from agent 0 reaches over the
// neighbours (back: that reach agent 0).
func reached(w *World, back bool) int {
	adj := make([][]int32, len(w.agents))
	for _, a := range w.agents {
		for _, p := range a.nbrs {
			if back {
				adj[p] = append(adj[p], a.idx)
			} else {
				adj[a.idx] = append(adj[a.idx], p)
			}
		}
	}
	seen, queue := map[int32]bool{0: true}, []int32{0}
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		for _, p := range adj[x] {
			if !seen[p] {
				seen[p] = true
				queue = append(queue, p)
			}
		}
	}
	return len(seen)
}

// TestOverlayFullView: with a full view, as on the simulated Grid'5000,
// every agent knows every other.
func TestOverlayFullView(t *testing.T) {
	w, err := New(Grid5000Config(1))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range w.agents {
		if len(a.known) != len(w.agents)-1 {
			t.Fatalf("agent %d knows %d of the %d others", a.idx, len(a.known), len(w.agents)-1)
		}
	}
	cfg := DefaultConfig(300, 0, 1)
	cfg.FullView = true
	if _, err := New(cfg); err == nil {
		t.Fatal("a full view with tables of 48 peers was accepted")
	}
}

package testnet

import (
	"context"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/node"
	"github.com/zorilla-p2p/zorilla/overlay"
)

// TestNetworksStayApart: two nets of three agents, each with a network
// name of its own, are connected to each other at the libp2p level (every
// agent of one to every agent of the other). Once each agent has seen the
// other net's protocols, no agent has a neighbour of the other network, and
// a job flooded in one gets offers from its own agents only: the other
// net's agents never receive its advert.
func TestNetworksStayApart(t *testing.T) {
	configure := func(_ int, cfg *node.Config) { e2eConfig(cfg, 1) }
	a, b := startLoopback(t, 3, configure), startLoopback(t, 3, configure)
	if a.network == b.network {
		t.Fatalf("two nets share the network name %q", a.network)
	}
	connected(t, a, 2)
	connected(t, b, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, x := range a.Nodes {
		for _, y := range b.Nodes {
			if err := x.Host().Connect(ctx, y.AddrInfo()); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Identify has run both ways: each side knows the other's protocols,
	// so the overlay could have taken it as a neighbour if it spoke its.
	awaitNet(t, a, "identify across the nets", func() bool {
		for _, x := range a.Nodes {
			for _, y := range b.Nodes {
				pa, _ := x.Host().Peerstore().SupportsProtocols(y.ID(), overlay.ExchangeProtocol(b.network))
				pb, _ := y.Host().Peerstore().SupportsProtocols(x.ID(), overlay.ExchangeProtocol(a.network))
				if len(pa) == 0 || len(pb) == 0 {
					return false
				}
			}
		}
		return true
	})
	d := job.NewDescription("job.sh", nil, 6)
	d.Strategy, d.Deadline = job.Spread, 3*time.Second
	rec := awaitEnd(t, a.Nodes[0], submit(t, a.Nodes[0], d, upload(t, a.Nodes[0], "true"), true))
	if got := len(offerers(t, a, rec.Offers)); got != len(rec.Offers) || got > 3 {
		t.Errorf("offers %v: want only the 3 agents of the job's own network", rec.Offers)
	}
	for i, nd := range b.Nodes {
		if st := nd.Flooder().Stats(); st.Received > 0 {
			t.Errorf("agent %d of the other network received %d adverts", i, st.Received)
		}
	}
	for _, pair := range [][2]*Net{{a, b}, {b, a}} {
		for i, nd := range pair[0].Nodes {
			for _, nb := range nd.Overlay().Neighbours() {
				if pair[1].Index(nb) >= 0 {
					t.Errorf("agent %d of %s has %s of the other network as a neighbour", i, pair[0].network, nb)
				}
			}
		}
	}
}

package testnet

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/zorilla-p2p/zorilla/internal/clock"
	"github.com/zorilla-p2p/zorilla/node"
)

// rendezvousCounter reads a counter of the rendezvous from nd's /metrics.
func rendezvousCounter(t *testing.T, nd *node.Node, name string) float64 {
	t.Helper()
	resp, err := http.Get(nd.Web() + "metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	f := fams[name]
	if f == nil || len(f.GetMetric()) != 1 {
		t.Fatalf("/metrics of %s has no %s", nd.ID(), name)
	}
	return f.GetMetric()[0].GetCounter().GetValue()
}

// awaitNeighbours waits, up to a minute, until every agent has least
// neighbours.
func awaitNeighbours(t *testing.T, nodes []*node.Node, least int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, nd := range nodes {
		for len(nd.Overlay().Neighbours()) < least {
			select {
			case <-ctx.Done():
				t.Fatalf("agent %s has %d neighbours, want %d", nd.ID(), len(nd.Overlay().Neighbours()), least)
			case <-time.After(20 * time.Millisecond): // polling interval
			}
		}
	}
}

// awaitWaiting waits until n loops wait on clk: each has seen the last
// jump and done what it led to.
func awaitWaiting(t *testing.T, clk *clock.Jump, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for clk.Waiting() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d rendezvous loops waiting on the clock", clk.Waiting(), n)
		}
		time.Sleep(time.Millisecond) // polling interval
	}
}

// TestPublicRendezvousQuiet: three agents that know only a stand-in public
// DHT become neighbours through it as fast as before, and then leave the
// DHT alone: over the next two minutes of their rendezvous' clock (jumped
// forward a second at a time), each makes at most one lookup, as its
// /metrics counts them.
func TestPublicRendezvousQuiet(t *testing.T) {
	if testing.Short() {
		t.Skip("a stand-in DHT and agents on loopback")
	}
	public := standInDHT(t, 3)
	clk := &clock.Jump{}
	start := time.Now()
	var nodes []*node.Node
	for range 3 {
		nodes = append(nodes, publicAgent(t, "rdv-quiet", public, func(cfg *node.Config) {
			cfg.Web, cfg.Rendezvous.Clock, cfg.Rendezvous.Check = "127.0.0.1:0", clk, time.Second
		}))
	}
	awaitNeighbours(t, nodes, 2)
	t.Logf("3 agents, each with 2 neighbours through the stand-in public DHT, %v after the first started",
		time.Since(start).Round(time.Millisecond))
	awaitWaiting(t, clk, len(nodes))
	before := make([]float64, len(nodes))
	for i, nd := range nodes {
		before[i] = rendezvousCounter(t, nd, "zorilla_rendezvous_lookups_total")
	}
	for range 120 {
		clk.Advance(time.Second)
		awaitWaiting(t, clk, len(nodes))
	}
	for i, nd := range nodes {
		after := rendezvousCounter(t, nd, "zorilla_rendezvous_lookups_total")
		st := nd.Rendezvous().Status()
		t.Logf("agent %d: %v lookups before, %v after two minutes; %v announcements; next lookup in %v",
			i, before[i], after, st.Provides, st.NextLookup.Sub(clk.Now()).Round(time.Second))
		if after-before[i] > 1 {
			t.Errorf("agent %d made %v lookups in the two minutes after it had its neighbours, want at most 1", i, after-before[i])
		}
		if provides := rendezvousCounter(t, nd, "zorilla_rendezvous_provides_total"); provides != float64(st.Provides) {
			t.Errorf("agent %d: /metrics counts %v announcements, its status %d", i, provides, st.Provides)
		}
	}
}

// TestPublicRendezvousCutOff: an agent whose neighbours are all killed is
// cut off: it says it lacks peers, looks the key up again (its schedule,
// within Backoff of the cut, is TestObserveThenLookup's), and its lookups
// find the agent that started since, which becomes its neighbour.
func TestPublicRendezvousCutOff(t *testing.T) {
	if testing.Short() {
		t.Skip("a stand-in DHT and agents on loopback")
	}
	public := standInDHT(t, 3)
	web := func(cfg *node.Config) { cfg.Web = "127.0.0.1:0" }
	a := publicAgent(t, "rdv-cut", public, web)
	b, c := publicAgent(t, "rdv-cut", public, web), publicAgent(t, "rdv-cut", public, web)
	awaitNeighbours(t, []*node.Node{a, b, c}, 2)
	_ = b.Close()
	_ = c.Close()
	deadline := time.Now().Add(time.Minute)
	for live(a) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("agent a still has %d live peers after the others stopped", live(a))
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
	cut := time.Now()
	lookups, found := rendezvousCounter(t, a, "zorilla_rendezvous_lookups_total"), a.Rendezvous().Status().Found
	for st := a.Rendezvous().Status(); !st.Hungry; st = a.Rendezvous().Status() {
		if time.Now().After(deadline) {
			t.Fatalf("agent a, cut off, does not say it lacks peers: %+v", st)
		}
		time.Sleep(5 * time.Millisecond) // polling interval
	}
	for rendezvousCounter(t, a, "zorilla_rendezvous_lookups_total") == lookups {
		if time.Now().After(deadline) {
			t.Fatal("agent a, cut off, did not look up again")
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
	t.Logf("cut off, agent a looked up again %v later", time.Since(cut).Round(time.Millisecond))
	d := publicAgent(t, "rdv-cut", public, web)
	for a.Rendezvous().Status().Found <= found || !neighbours(a, d) {
		if time.Now().After(deadline) {
			t.Fatalf("agent a found %d agents (%d before), neighbours %v: not rejoined through its lookups",
				a.Rendezvous().Status().Found, found, a.Overlay().Neighbours())
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
	t.Logf("agent a rejoined through its own lookup %v after it was cut off", time.Since(cut).Round(time.Millisecond))
}

// live counts the peers nd's overlay knows that are not dead.
func live(nd *node.Node) int {
	n := 0
	for _, p := range nd.Overlay().Peers() {
		if !p.Dead {
			n++
		}
	}
	return n
}

package testnet

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/control"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/node"
)

// noDirect is a connection gater that lets its agent reach every peer but
// one (other) only through a relay, as two homes behind NATs that hole
// punching cannot open.
type noDirect struct{ other *peer.ID }

func relayed(a ma.Multiaddr) bool {
	_, err := a.ValueForProtocol(ma.P_CIRCUIT)
	return err == nil
}

func (g noDirect) InterceptPeerDial(peer.ID) bool { return true }
func (g noDirect) InterceptAddrDial(p peer.ID, a ma.Multiaddr) bool {
	return p != *g.other || relayed(a)
}
func (g noDirect) InterceptAccept(network.ConnMultiaddrs) bool { return true }
func (g noDirect) InterceptSecured(_ network.Direction, p peer.ID, c network.ConnMultiaddrs) bool {
	return p != *g.other || relayed(c.RemoteMultiaddr())
}
func (g noDirect) InterceptUpgraded(network.Conn) (bool, control.DisconnectReason) { return true, 0 }

// TestRelayedJob: two private agents that cannot dial each other and one
// public agent, all joining through a stand-in public DHT. The private
// ones reserve slots on the public one's relay, find each other through
// it, become neighbours over relayed connections (zorilla peers would say
// "relayed"), and run an MPI job spanning both.
func TestRelayedJob(t *testing.T) {
	if testing.Short() {
		t.Skip("a stand-in DHT, a relay and agents on loopback")
	}
	public := standInDHT(t, 2)
	var ids [2]peer.ID
	start := func(reach string, labels []string, opts ...node.Option) *node.Node {
		cfg := node.DefaultConfig()
		e2eConfig(&cfg, 1)
		cfg.Network, cfg.Open, cfg.Labels, cfg.Reachability = "relay-test", true, labels, reach
		cfg.Listen = []string{"/ip4/127.0.0.1/tcp/0"}
		cfg.Bootstrap, cfg.PublicBootstrap = []string{node.PublicBootstrapWord}, public
		cfg.Rendezvous.Find, cfg.Rendezvous.Backoff = 200*time.Millisecond, 200*time.Millisecond
		cfg.ShutdownTimeout = time.Second
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		nd, err := node.New(ctx, cfg, opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = nd.Close() })
		return nd
	}
	relay := start(node.ReachPublic, nil)
	a := start(node.ReachPrivate, []string{"home"}, node.WithConnectionGater(noDirect{&ids[1]}))
	ids[0] = a.ID()
	b := start(node.ReachPrivate, []string{"home"}, node.WithConnectionGater(noDirect{&ids[0]}))
	ids[1] = b.ID()
	begun := time.Now()
	deadline := begun.Add(time.Minute)
	for !neighbours(a, b) || !neighbours(b, a) {
		if time.Now().After(deadline) {
			t.Fatalf("private agents not neighbours through the relay: a has %v, b has %v (relay %s); a's addrs %v, b's %v; relay supports hop: %v",
				a.Overlay().Neighbours(), b.Overlay().Neighbours(), relay.ID(), a.Host().Addrs(), b.Host().Addrs(), relay.Host().Mux().Protocols())
		}
		time.Sleep(100 * time.Millisecond) // polling interval
	}
	for _, c := range a.Host().Network().ConnsToPeer(b.ID()) {
		if !relayed(c.RemoteMultiaddr()) {
			t.Fatalf("a direct connection between the private agents: %s", c.RemoteMultiaddr())
		}
	}
	t.Logf("the private agents are neighbours over the relay %v after the last started", time.Since(begun).Round(time.Millisecond))
	prog := buildExample(t, a, "is")
	d := job.NewDescription("is", []string{"S"}, 2)
	d.Strategy, d.Require.Labels = job.Spread, []string{"home"}
	rec, ups := run(t, a, d, prog)
	var out []string
	for _, u := range ups {
		if u.Kind == "output" {
			out = append(out, u.Line)
		}
	}
	if rec.State != job.Done || !strings.Contains(strings.Join(out, "\n"), "SUCCESSFUL") {
		t.Fatalf("job over the relay ended %s (%s):\n%s", rec.State, rec.Reason, strings.Join(out, "\n"))
	}
	if rec.Plan.Procs(b.ID()) == nil || rec.Plan.Procs(a.ID()) == nil {
		t.Fatalf("plan %v: want a rank on each private agent", rec.Plan.Peers())
	}
}

// neighbours reports whether x has y as a neighbour.
func neighbours(x, y *node.Node) bool {
	for _, p := range x.Overlay().Neighbours() {
		if p == y.ID() {
			return true
		}
	}
	return false
}

package testnet

import (
	"os"
	"strconv"
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
	a, b := homesBehindRelay(t, true)
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

// homesBehindRelay starts a stand-in public DHT, one public agent and two
// private ones labelled "home", all joining through the DHT, and waits
// until the two private ones are neighbours. With gate the private ones
// cannot dial each other (a connection gater) and meet through the public
// agent's relay; without, they connect directly.
func homesBehindRelay(t *testing.T, gate bool) (a, b *node.Node) {
	t.Helper()
	public := standInDHT(t, 2)
	var ids [2]peer.ID
	start := func(reach string, labels []string, opts ...node.Option) *node.Node {
		return publicAgent(t, "relay-test", public, func(cfg *node.Config) {
			cfg.Labels, cfg.Reachability = labels, reach
		}, opts...)
	}
	gater := func(other *peer.ID) []node.Option {
		if !gate {
			return nil
		}
		return []node.Option{node.WithConnectionGater(noDirect{other})}
	}
	relay := start(node.ReachPublic, nil)
	a = start(node.ReachPrivate, []string{"home"}, gater(&ids[1])...)
	ids[0] = a.ID()
	b = start(node.ReachPrivate, []string{"home"}, gater(&ids[0])...)
	ids[1] = b.ID()
	begun := time.Now()
	deadline := begun.Add(time.Minute)
	for !neighbours(a, b) || !neighbours(b, a) {
		if time.Now().After(deadline) {
			t.Fatalf("private agents not neighbours: a has %v, b has %v (relay %s)",
				a.Overlay().Neighbours(), b.Overlay().Neighbours(), relay.ID())
		}
		time.Sleep(100 * time.Millisecond) // polling interval
	}
	for _, c := range a.Host().Network().ConnsToPeer(b.ID()) {
		if relayed(c.RemoteMultiaddr()) != gate {
			t.Fatalf("gated %v, but a connection between the private agents is %s", gate, c.RemoteMultiaddr())
		}
	}
	t.Logf("the private agents are neighbours (relayed: %v) %v after the last started", gate, time.Since(begun).Round(time.Millisecond))
	return a, b
}

// TestRelayFigures measures MPI ping-pong between two agents relayed by a
// third and between two agents connected directly, on loopback, in
// interleaved rounds. It runs by hand:
// ZORILLA_RELAY_FIGURES=3 go test -run TestRelayFigures -v ./testnet
func TestRelayFigures(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("ZORILLA_RELAY_FIGURES"))
	if rounds < 1 {
		t.Skip("set ZORILLA_RELAY_FIGURES=N to measure N rounds")
	}
	pairs := map[string][2]*node.Node{}
	for _, gate := range []bool{false, true} {
		a, b := homesBehindRelay(t, gate)
		pairs[map[bool]string{false: "direct", true: "relayed"}[gate]] = [2]*node.Node{a, b}
	}
	for r := range rounds {
		for _, kind := range []string{"direct", "relayed"} {
			a := pairs[kind][0]
			d := job.NewDescription("pingpong", []string{"1048576"}, 2)
			d.Strategy, d.Require.Labels = job.Spread, []string{"home"}
			rec, ups := run(t, a, d, buildExample(t, a, "pingpong"))
			if rec.State != job.Done {
				t.Fatalf("%s pingpong ended %s: %s", kind, rec.State, rec.Reason)
			}
			for _, u := range ups {
				if u.Kind == "output" && u.Rank == 0 && (strings.HasPrefix(strings.TrimSpace(u.Line), "1 ") ||
					strings.HasPrefix(strings.TrimSpace(u.Line), "8 ") || strings.HasPrefix(strings.TrimSpace(u.Line), "1048576 ")) {
					t.Logf("round %d %s: %s", r+1, kind, u.Line)
				}
			}
		}
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

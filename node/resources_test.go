package node

import (
	"fmt"
	"testing"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/mpi/router"
)

// TestAgentLimitsAreExplicit: the limits do not depend on the machine.
func TestAgentLimitsAreExplicit(t *testing.T) {
	a, b := agentLimits().ToPartialLimitConfig(), agentLimits().ToPartialLimitConfig()
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatal("two calls give different limits")
	}
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"system conns", int(a.System.Conns), agentConns},
		{"system inbound streams", int(a.System.StreamsInbound), agentStreamsIn},
		{"system memory", int(a.System.Memory), agentMemory},
		{"peer conns", int(a.PeerDefault.Conns), peerConns},
		{"protocol-peer inbound streams", int(a.ProtocolPeerDefault.StreamsInbound), protoPeerStreamsIn},
		{"mpi protocol-peer inbound streams", int(a.ProtocolPeer[router.ProtocolID].StreamsInbound), mpiPeerStreamsIn},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", c.name, c.got, c.want)
		}
	}
}

// TestAgentLimitsPerPeer opens streams and connections against the real
// resource manager: one peer gets protoPeerStreamsIn inbound streams of a
// request protocol, more of the MPI protocol, and peerConns connections.
func TestAgentLimitsPerPeer(t *testing.T) {
	rm, err := newResourceManager(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rm.Close()
	p := peer.ID("abuser")
	streams := func(proto protocol.ID, n int) int {
		ok := 0
		for range n {
			s, err := rm.OpenStream(p, network.DirInbound)
			if err != nil {
				continue
			}
			defer s.Done()
			if err := s.SetProtocol(proto); err != nil {
				continue
			}
			ok++
		}
		return ok
	}
	if got := streams(proto.LeaseProtocol, 300); got != protoPeerStreamsIn {
		t.Errorf("%d inbound lease streams of one peer accepted, want %d", got, protoPeerStreamsIn)
	}
	if got := streams(router.ProtocolID, 600); got != mpiPeerStreamsIn {
		t.Errorf("%d inbound MPI streams of one peer accepted, want %d", got, mpiPeerStreamsIn)
	}
	conns := 0
	for i := range 20 {
		c, err := rm.OpenConnection(network.DirInbound, true, ma.StringCast(fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", 2000+i)))
		if err != nil {
			continue
		}
		defer c.Done()
		if err := c.SetPeer(p); err == nil {
			conns++
		}
	}
	if conns != peerConns {
		t.Errorf("%d connections of one peer accepted, want %d", conns, peerConns)
	}
}

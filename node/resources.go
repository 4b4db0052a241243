package node

import (
	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/protocol"
	rcmgr "github.com/libp2p/go-libp2p/p2p/host/resource-manager"

	"github.com/zorilla-p2p/zorilla/mpi/router"
)

// The resource manager limits of an agent, chosen for what an agent does
// rather than scaled from the machine's memory as libp2p's defaults are:
// every agent enforces the same limits wherever it runs, and they are
// sized by the largest jobs and testnets Zorilla runs (hundreds of agents,
// every host of a job linked to every other). Each is per agent; an
// in-process testnet has one resource manager per agent.
const (
	// 512 inbound and 1024 connections in all: a job's hosts link to one
	// another and its submitter to all of them, so a 350-host job needs
	// 349 connections on each, plus the DHT's and the neighbours'.
	agentConns, agentConnsIn = 1024, 512
	// 8192 streams, 4096 inbound: one MPI stream per job and linked agent
	// lives as long as the job, request streams last seconds.
	agentStreams, agentStreamsIn = 8192, 4096
	// 4096 descriptors: one per TCP connection (QUIC shares one socket).
	agentFD = 4096
	// 2 GiB: what libp2p may buffer in all. yamux grows a stream's receive
	// window (up to 16 MiB) only while it can reserve memory, so this
	// bounds buffering without refusing streams.
	agentMemory = 2 << 30
	// 8 connections per peer (TCP and QUIC, and a relayed one, need 3);
	// 512 inbound streams per peer, 128 per protocol: one peer cannot take
	// more than a slice of the agent's streams, and a peer sending adverts
	// or lease requests as fast as it can holds at most 128 handlers of
	// that protocol at once (each ends within its stream timeout).
	peerConns, peerStreamsIn, peerStreams = 8, 512, 1024
	protoPeerStreamsIn, protoPeerStreams  = 128, 256
	// 256 MiB per peer: a fast MPI link's windows, with room to spare.
	peerMemory = 256 << 20
	// The MPI link protocol: one stream per job between two agents, so as
	// many as jobs at once (worker.MaxJobsLimit is 1024; 512 is plenty).
	mpiPeerStreamsIn, mpiPeerStreams = 512, 1024
	// Connections and streams still in their handshake or protocol
	// negotiation: 128 inbound connections and 512 inbound streams.
	transientConnsIn, transientStreamsIn = 128, 512
)

// agentLimits returns the resource manager limits of an agent. libp2p's
// own services (identify, ping, relay, AutoNAT, hole punching) keep the
// shape libp2p gives them, computed for a fixed 4 GiB and 4096
// descriptors rather than for this machine.
func agentLimits() rcmgr.ConcreteLimitConfig {
	base := rcmgr.DefaultLimits
	libp2p.SetDefaultServiceLimits(&base)
	scaled := base.Scale(4<<30, agentFD)
	lv := func(n int) rcmgr.LimitVal { return rcmgr.LimitVal(n) }
	mem := func(n int64) rcmgr.LimitVal64 { return rcmgr.LimitVal64(n) }
	p := rcmgr.PartialLimitConfig{
		System: rcmgr.ResourceLimits{Conns: lv(agentConns), ConnsInbound: lv(agentConnsIn), ConnsOutbound: lv(agentConns),
			Streams: lv(agentStreams), StreamsInbound: lv(agentStreamsIn), StreamsOutbound: lv(agentStreams),
			FD: lv(agentFD), Memory: mem(agentMemory)},
		Transient: rcmgr.ResourceLimits{Conns: lv(2 * transientConnsIn), ConnsInbound: lv(transientConnsIn),
			ConnsOutbound: lv(2 * transientConnsIn), Streams: lv(2 * transientStreamsIn),
			StreamsInbound: lv(transientStreamsIn), StreamsOutbound: lv(2 * transientStreamsIn),
			FD: lv(agentFD / 4), Memory: mem(agentMemory / 8)},
		PeerDefault: rcmgr.ResourceLimits{Conns: lv(peerConns), ConnsInbound: lv(peerConns), ConnsOutbound: lv(peerConns),
			Streams: lv(peerStreams), StreamsInbound: lv(peerStreamsIn), StreamsOutbound: lv(peerStreams),
			FD: lv(peerConns), Memory: mem(peerMemory)},
		ProtocolDefault: rcmgr.ResourceLimits{Streams: lv(agentStreams / 2), StreamsInbound: lv(agentStreamsIn / 2),
			StreamsOutbound: lv(agentStreams / 2), Memory: mem(agentMemory / 2)},
		ProtocolPeerDefault: rcmgr.ResourceLimits{Streams: lv(protoPeerStreams), StreamsInbound: lv(protoPeerStreamsIn),
			StreamsOutbound: lv(protoPeerStreams), Memory: mem(peerMemory / 4)},
		ProtocolPeer: map[protocol.ID]rcmgr.ResourceLimits{
			router.ProtocolID: {Streams: lv(mpiPeerStreams), StreamsInbound: lv(mpiPeerStreamsIn),
				StreamsOutbound: lv(mpiPeerStreams), Memory: mem(peerMemory)},
		},
	}
	return p.Build(scaled)
}

package mpitest

import (
	"sync"

	"github.com/libp2p/go-libp2p/core/control"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"
)

// gate is a connection gater that can cut an agent off the others: while
// a host is cut, no connection between it and another host is dialled or
// accepted, as when its network is down but its agent lives.
type gate struct {
	mu    sync.Mutex
	cut   map[peer.ID]bool
	pairs map[[2]peer.ID]bool // pairs cut from each other only
}

func (g *gate) blocked(a, b peer.ID) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cut[a] || g.cut[b] || g.pairs[[2]peer.ID{a, b}] || g.pairs[[2]peer.ID{b, a}]
}

// gater is one host's view of the gate.
type gater struct {
	g    *gate
	self *peer.ID // set once the host exists
}

func (v gater) InterceptPeerDial(p peer.ID) bool { return !v.g.blocked(*v.self, p) }
func (v gater) InterceptAddrDial(p peer.ID, _ multiaddr.Multiaddr) bool {
	return !v.g.blocked(*v.self, p)
}
func (v gater) InterceptAccept(network.ConnMultiaddrs) bool { return true }
func (v gater) InterceptSecured(_ network.Direction, p peer.ID, _ network.ConnMultiaddrs) bool {
	return !v.g.blocked(*v.self, p)
}
func (v gater) InterceptUpgraded(network.Conn) (bool, control.DisconnectReason) { return true, 0 }

// Cut cuts agent i off the others: its connections close and no new one
// is made until Heal. Its router and ranks keep running.
func (c *Cluster) Cut(i int) {
	c.gate.mu.Lock()
	c.gate.cut[c.Hosts[i].ID()] = true
	c.gate.mu.Unlock()
	for j, h := range c.Hosts {
		if j != i {
			_ = c.Hosts[i].Network().ClosePeer(h.ID())
			_ = h.Network().ClosePeer(c.Hosts[i].ID())
		}
	}
}

// CutPair cuts agents a and b off each other only: each still reaches
// every other agent.
func (c *Cluster) CutPair(a, b int) {
	pa, pb := c.Hosts[a].ID(), c.Hosts[b].ID()
	c.gate.mu.Lock()
	c.gate.pairs[[2]peer.ID{pa, pb}] = true
	c.gate.mu.Unlock()
	_ = c.Hosts[a].Network().ClosePeer(pb)
	_ = c.Hosts[b].Network().ClosePeer(pa)
}

// Heal lets agent i connect to the others again.
func (c *Cluster) Heal(i int) {
	c.gate.mu.Lock()
	delete(c.gate.cut, c.Hosts[i].ID())
	c.gate.mu.Unlock()
}

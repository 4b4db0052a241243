package testnet

import (
	"sync"

	"github.com/libp2p/go-libp2p/core/control"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/zorilla-p2p/zorilla/node"
)

// cuts cuts agents of a net off from each other, as a network cut would:
// every agent's connection gater refuses the agents it is cut off from,
// directly or through a relay.
type cuts struct {
	mu    sync.Mutex
	ids   map[int]peer.ID
	apart map[[2]peer.ID]bool
}

func newCuts() *cuts { return &cuts{ids: map[int]peer.ID{}, apart: map[[2]peer.ID]bool{}} }

// options gives agent i its gater.
func (c *cuts) options(i int) []node.Option {
	return []node.Option{node.WithConnectionGater(&cutGater{c: c, i: i})}
}

// cut cuts agents i and j off from each other and closes their
// connections; heal lets them meet again.
func (ln *launchNet) cut(i, j int) {
	a, b := ln.Nodes[i].Host().ID(), ln.Nodes[j].Host().ID()
	ln.cuts.mu.Lock()
	ln.cuts.ids[i], ln.cuts.ids[j] = a, b
	ln.cuts.mu.Unlock()
	ln.cuts.set(a, b, true)
	_ = ln.Nodes[i].Host().Network().ClosePeer(b) // a cut breaks what is open
	_ = ln.Nodes[j].Host().Network().ClosePeer(a)
}

func (ln *launchNet) heal(i, j int) {
	ln.cuts.set(ln.Nodes[i].Host().ID(), ln.Nodes[j].Host().ID(), false)
}

func (c *cuts) set(a, b peer.ID, apart bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.apart[[2]peer.ID{a, b}], c.apart[[2]peer.ID{b, a}] = apart, apart
}

func (c *cuts) allowed(self int, p peer.ID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.apart[[2]peer.ID{c.ids[self], p}]
}

// cutGater is agent i's gater (its ID is known to cuts once cut).
type cutGater struct {
	c *cuts
	i int
}

func (g *cutGater) InterceptPeerDial(p peer.ID) bool                 { return g.c.allowed(g.i, p) }
func (g *cutGater) InterceptAddrDial(p peer.ID, _ ma.Multiaddr) bool { return g.c.allowed(g.i, p) }
func (g *cutGater) InterceptAccept(network.ConnMultiaddrs) bool      { return true }
func (g *cutGater) InterceptSecured(_ network.Direction, p peer.ID, c network.ConnMultiaddrs) bool {
	return g.c.allowed(g.i, p)
}
func (g *cutGater) InterceptUpgraded(c network.Conn) (bool, control.DisconnectReason) {
	return g.c.allowed(g.i, c.RemotePeer()), 0
}

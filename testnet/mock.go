package testnet

import (
	"fmt"

	"github.com/libp2p/go-libp2p/core/host"
	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"
	ma "github.com/multiformats/go-multiaddr"
)

// mockAddr is agent i's address on the mocknet: 10.<site>.x.y, so logs
// show where an agent is.
func mockAddr(site, i int) ma.Multiaddr {
	return ma.StringCast(fmt.Sprintf("/ip4/10.%d.%d.%d/tcp/4001", site, (i>>8)&0xff, i&0xff))
}

// mockAll adds every agent to the mocknet and links every pair, before
// any agent starts.
func (n *Net) mockAll() error {
	n.hosts = make([]host.Host, len(n.ids))
	for i := range n.ids {
		h, err := n.mn.AddPeer(n.keys[i], mockAddr(n.sites[i], i))
		if err != nil {
			return fmt.Errorf("testnet: mocknet agent %d: %w", i, err)
		}
		n.hosts[i] = h
		for j := range i {
			if err := n.link(i, j); err != nil {
				return err
			}
		}
	}
	return nil
}

// link links agents i and j with half their sites' RTT as latency:
// mocknet delays each write by a link's latency, one way.
func (n *Net) link(i, j int) error {
	l, err := n.mn.LinkPeers(n.ids[i], n.ids[j])
	if err != nil {
		return fmt.Errorf("testnet: link agents %d and %d: %w", i, j, err)
	}
	l.SetOptions(mocknet.LinkOptions{Latency: n.topo.RTT(n.sites[i], n.sites[j]) / 2})
	return nil
}

// mockHost is agent i's mocknet host: the one mockAll made, or after a
// restart a new one with the same key, linked again to every agent.
func (n *Net) mockHost(i int) (host.Host, error) {
	if h := n.hosts[i]; h != nil {
		n.hosts[i] = nil
		return h, nil
	}
	for j := range n.ids {
		for _, l := range n.mn.LinksBetweenPeers(n.ids[i], n.ids[j]) {
			if err := n.mn.Unlink(l); err != nil {
				return nil, fmt.Errorf("testnet: unlink agents %d and %d: %w", i, j, err)
			}
		}
	}
	h, err := n.mn.AddPeer(n.keys[i], mockAddr(n.sites[i], i))
	if err != nil {
		return nil, fmt.Errorf("testnet: mocknet agent %d: %w", i, err)
	}
	for j := range n.ids {
		if j != i {
			if err := n.link(i, j); err != nil {
				return nil, err
			}
		}
	}
	return h, nil
}

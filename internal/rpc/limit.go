package rpc

import (
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/zorilla-p2p/zorilla/internal/ratelimit"
)

// peerLimit is one protocol's per-peer rate limit and the name its
// refusals are counted under.
type peerLimit struct {
	name  string
	peers *ratelimit.Peers
}

// Limit rate-limits the inbound streams of protocol p per remote peer: a
// stream over lim is reset before a byte of it is read, and counted under
// name in Refusals. Streams an agent opens to itself are never limited.
// Call it before or after Handle; a later call replaces the limit.
func (e *Endpoint) Limit(p protocol.ID, name string, lim ratelimit.Limit) error {
	peers, err := ratelimit.NewPeers(lim, 0)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.limits[p] = &peerLimit{name: name, peers: peers}
	return nil
}

// admit applies p's limit to a stream from peer from.
func (e *Endpoint) admit(p protocol.ID, from peer.ID) bool {
	e.mu.RLock()
	l := e.limits[p]
	e.mu.RUnlock()
	if l == nil || l.peers.Allow(from, time.Now()) {
		return true
	}
	e.refused.Add(l.name)
	return false
}

// Refusals counts the streams refused by a limit, by the limit's name.
func (e *Endpoint) Refusals() map[string]uint64 { return e.refused.Snapshot() }

package overlay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/discovery/mdns"
)

// MDNSService is the DNS-SD service agents of network announce on the local
// network: "_z" and 12 hex digits of a hash of the name, since a service
// label holds at most 15 characters. Two networks whose names share it
// still never become neighbours: the neighbour exchange is per network.
func MDNSService(network string) string {
	sum := sha256.Sum256([]byte("zorilla network " + network))
	return "_z" + hex.EncodeToString(sum[:6]) + "._udp"
}

// LAN finds the agents of the same network on the local network by
// multicast DNS, with no bootstrap peer at all: each one heard of joins the
// overlay as a bootstrap peer would. Its goroutines end on Close.
type LAN struct {
	svc    mdns.Service
	ov     *Overlay
	self   peer.ID
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex // guards closed, so no goroutine starts once Close waits
	closed bool
}

// StartLAN announces h on the local network and starts listening for the
// other agents of network.
func StartLAN(h host.Host, ov *Overlay, network string) (*LAN, error) {
	if err := CheckNetwork(network); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &LAN{ov: ov, self: h.ID(), ctx: ctx, cancel: cancel}
	l.svc = mdns.NewMdnsService(h, MDNSService(network), l)
	if err := l.svc.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("overlay: mdns: %w", err)
	}
	return l, nil
}

// HandlePeerFound is mdns's callback: join the agent heard of, off the
// caller's goroutine.
func (l *LAN) HandlePeerFound(p peer.AddrInfo) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p.ID == l.self || l.closed {
		return
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		ctx, cancel := context.WithTimeout(l.ctx, 10*time.Second)
		defer cancel()
		if err := l.ov.Bootstrap(ctx, []peer.AddrInfo{p}); err != nil {
			log.Debugw("agent heard of on the LAN not reached", "peer", p.ID, "err", err)
		}
	}()
}

// Close stops announcing and listening.
func (l *LAN) Close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.cancel()
	err := l.svc.Close()
	l.wg.Wait()
	return err
}

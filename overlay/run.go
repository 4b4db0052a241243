package overlay

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/host/eventbus"
	"github.com/libp2p/go-libp2p/p2p/protocol/ping"
)

// run is the loop that owns the table: it applies what others hand it,
// and on every tick starts the probes, walks and exchanges that are due.
//
// A change is published at once when the last snapshot is a tick old or
// readers must see it now (a peer marked dead), else on the next tick:
// publishing sorts the whole table, and while an agent measures its peers
// every probe changes it (350 agents in one testnet spent a sixth of their
// CPU re-sorting).
func (o *Overlay) run() {
	defer o.wg.Done()
	tick := time.NewTicker(o.cfg.Tick)
	defer tick.Stop()
	for {
		var due bool // a change, if any, is to be published now
		select {
		case <-o.ctx.Done():
			return
		case f := <-o.inbox:
			now := time.Now()
			f(now)
			due = o.urgent || now.Sub(o.published) >= o.cfg.Tick
		case now := <-tick.C:
			o.onTick(now)
			due = true
		}
		if o.dirty && due {
			o.publish(time.Now())
		}
	}
}

func (o *Overlay) onTick(now time.Time) {
	if o.tab.expire(now) {
		o.dirty = true
	}
	o.startProbes(now)
	o.startWalk(now)
	o.startExchange(now)
	o.startRebootstrap(now)
}

// publish reselects the neighbours and makes a new snapshot for readers.
func (o *Overlay) publish(now time.Time) {
	o.dirty, o.urgent, o.published = false, false, now
	o.tab.reselect(now, o.rng)
	o.tab.markShown()
	s := &snapshot{
		outbound: o.tab.outbound(),
		peers:    o.tab.infos(now),
		rtt:      map[peer.ID]time.Duration{},
	}
	for _, p := range s.peers {
		if p.Measured && !p.Dead {
			s.rtt[p.ID] = p.RTT
		}
	}
	s.neighbours = neighbours(s.peers, s.outbound)
	o.view.Store(s)
	o.protect(s.neighbours)
}

// protect keeps the connection manager from trimming neighbour
// connections, and releases peers that are no longer neighbours.
func (o *Overlay) protect(nb []peer.ID) {
	cm := o.h.ConnManager()
	keep := make(map[peer.ID]bool, len(nb))
	for _, p := range nb {
		keep[p] = true
		if !o.protected[p] {
			cm.Protect(p, protectTag)
			o.protected[p] = true
		}
	}
	for p := range o.protected {
		if !keep[p] {
			cm.Unprotect(p, protectTag)
			delete(o.protected, p)
		}
	}
}

// startProbes pings the most urgent peers, at most ProbesPerTick at a time.
func (o *Overlay) startProbes(now time.Time) {
	for _, p := range o.tab.due(now, o.cfg.ProbesPerTick-o.inflight) {
		o.inflight++
		o.spawn(func() {
			rtt, err := o.measure(o.ctx, p)
			if err != nil {
				log.Debugw("probe failed", "peer", p, "err", err)
			}
			o.do(func(now time.Time) {
				o.inflight--
				_, visible := o.tab.observe(p, rtt, err != nil, now)
				o.dirty = o.dirty || visible
			})
		})
	}
}

// measure sends PingsPerProbe pings on one stream and returns the smallest
// RTT: the minimum filters out the delays of a busy scheduler.
func (o *Overlay) measure(ctx context.Context, p peer.ID) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, o.cfg.PingTimeout)
	defer cancel()
	results := ping.Ping(ctx, o.h, p)
	var best time.Duration
	for i := range o.cfg.PingsPerProbe {
		select {
		case r, ok := <-results:
			if !ok {
				return 0, fmt.Errorf("ping %s: %w", p, context.Cause(ctx))
			}
			if r.Error != nil {
				return 0, fmt.Errorf("ping %s: %w", p, r.Error)
			}
			if i == 0 || r.RTT < best {
				best = r.RTT
			}
		case <-ctx.Done():
			return 0, fmt.Errorf("ping %s: %w", p, ctx.Err())
		}
	}
	return best, nil
}

// startWalk runs a random-walk lookup: a DHT query for a random key,
// which meets peers all over the key space.
func (o *Overlay) startWalk(now time.Time) {
	if o.walking || now.Before(o.nextWalk) {
		return
	}
	o.walking, o.nextWalk = true, now.Add(o.cfg.WalkInterval)
	o.spawn(func() {
		ctx, cancel := context.WithTimeout(o.ctx, o.cfg.WalkTimeout)
		defer cancel()
		key := make([]byte, 32)
		_, _ = rand.Read(key)
		found, err := o.dht.GetClosestPeers(ctx, string(key))
		if err != nil {
			log.Debugw("random walk", "err", err)
		}
		o.do(func(now time.Time) {
			o.walking = false
			for _, p := range found {
				o.dirty = o.tab.add(p, now) || o.dirty
			}
			o.discoverLocal(now)
		})
	})
}

// discoverLocal adds the peers of the DHT routing table and the connected
// peers that speak the overlay protocol. The host's identification events
// (watch) bring the connected ones as they come; this scan, after each
// random walk, catches those identified before the overlay listened.
// Peers the table knows already are not looked up in the peerstore: that
// lookup, for every connected peer at every exchange, was a seventh of
// the CPU of 350 idle agents.
func (o *Overlay) discoverLocal(now time.Time) {
	o.discoverRouted(now)
	for _, p := range o.h.Network().Peers() {
		if o.tab.knows(p) {
			continue
		}
		if ok, _ := o.h.Peerstore().SupportsProtocols(p, o.proto); len(ok) > 0 {
			o.dirty = o.tab.add(p, now) || o.dirty
		}
	}
}

// discoverRouted adds the peers of the DHT routing table.
func (o *Overlay) discoverRouted(now time.Time) {
	for _, p := range o.dht.RoutingTable().ListPeers() {
		o.dirty = o.tab.add(p, now) || o.dirty
	}
}

// startRebootstrap connects to the bootstrap peers again when no live
// peer is known, e.g. after every peer restarted.
func (o *Overlay) startRebootstrap(now time.Time) {
	if o.booting || now.Before(o.nextBoot) || o.anyLive(now) {
		return
	}
	boot := o.bootPeers()
	if len(boot) == 0 {
		return
	}
	o.booting, o.nextBoot = true, now.Add(o.cfg.WalkInterval)
	o.spawn(func() {
		ctx, cancel := context.WithTimeout(o.ctx, o.cfg.PingTimeout)
		defer cancel()
		reached, err := o.connect(ctx, boot)
		if err != nil {
			log.Debugw("bootstrap again", "err", err)
		}
		o.do(func(now time.Time) {
			o.booting = false
			for _, p := range reached {
				o.tab.revive(p, now)
			}
			o.dirty = true
		})
	})
}

// anyLive reports whether some known peer is alive (it stops at the first).
func (o *Overlay) anyLive(now time.Time) bool {
	for _, e := range o.tab.peers {
		if !e.dead(now) {
			return true
		}
	}
	return false
}

// connect dials peers in parallel and returns those it reached, and the
// errors of the others.
func (o *Overlay) connect(ctx context.Context, peers []peer.AddrInfo) ([]peer.ID, error) {
	var (
		mu      sync.Mutex
		reached []peer.ID
		errs    []error
		wg      sync.WaitGroup
	)
	for _, p := range peers {
		wg.Go(func() {
			err := o.h.Connect(ctx, p)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("connect %s: %w", p.ID, err))
				return
			}
			reached = append(reached, p.ID)
		})
	}
	wg.Wait()
	return reached, errors.Join(errs...)
}

// watch follows the host's events: a neighbour that disconnects is probed
// at once, and an agent that identifies itself (it speaks the overlay
// protocol) becomes known, or alive again if it was marked dead.
func (o *Overlay) watch() error {
	sub, err := o.h.EventBus().Subscribe([]any{
		new(event.EvtPeerConnectednessChanged),
		new(event.EvtPeerIdentificationCompleted),
	}, eventbus.BufSize(256), eventbus.Name("zorilla/overlay"))
	if err != nil {
		return fmt.Errorf("overlay: subscribe to host events: %w", err)
	}
	o.owned = append(o.owned, sub.Close)
	o.spawn(func() {
		for {
			select {
			case <-o.ctx.Done():
				return
			case ev := <-sub.Out():
				o.onEvent(ev)
			}
		}
	})
	return nil
}

func (o *Overlay) onEvent(ev any) {
	switch ev := ev.(type) {
	case event.EvtPeerConnectednessChanged:
		if ev.Connectedness == network.NotConnected {
			o.do(func(now time.Time) { o.tab.disconnected(ev.Peer, now) })
		}
	case event.EvtPeerIdentificationCompleted:
		for _, p := range ev.Protocols {
			if p == o.proto {
				o.do(func(now time.Time) {
					o.dirty = o.tab.revive(ev.Peer, now) || o.dirty
				})
				return
			}
		}
	}
}

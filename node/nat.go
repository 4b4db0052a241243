package node

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/host/autorelay"
	"github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/client"
	relayv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/zorilla-p2p/zorilla/overlay"
)

// Reachability settings: auto lets AutoNAT v2 find out; public and private
// force it (an owner who knows, and tests).
const (
	ReachAuto    = "auto"
	ReachPublic  = "public"
	ReachPrivate = "private"
)

// hopProtocol is circuit relay v2's hop protocol, served by relays.
const hopProtocol = "/libp2p/circuit/relay/0.2.0/hop"

// natSide is what the host's NAT options need from the agent once it
// runs: which peers are of its network (the relay serves only them) and
// which known peers may be relays. It is filled in after the host exists.
type natSide struct {
	isPeer atomic.Pointer[func(peer.ID) bool]
	known  atomic.Pointer[func() []peer.AddrInfo]
	// confirmed is AutoNAT v2's last verdict on the host's addresses.
	confirmed atomic.Pointer[event.EvtHostReachableAddrsChanged]
	// slots is how many relay slots the agent holds (holdSlots).
	slots atomic.Int32
}

// confirmedAddrs lists the addresses AutoNAT v2 found others can dial and
// those it found they cannot.
func (s *natSide) confirmedAddrs() (reachable, unreachable []string) {
	ev := s.confirmed.Load()
	if ev == nil {
		return nil, nil
	}
	for _, a := range ev.Reachable {
		reachable = append(reachable, a.String())
	}
	for _, a := range ev.Unreachable {
		unreachable = append(unreachable, a.String())
	}
	return reachable, unreachable
}

// AllowReserve lets only agents of this network hold a relay slot.
func (s *natSide) AllowReserve(p peer.ID, _ ma.Multiaddr) bool { return s.member(p) }

// AllowConnect lets only agents of this network be relayed (to agents that
// hold a slot, so of this network too).
func (s *natSide) AllowConnect(src peer.ID, _ ma.Multiaddr, _ peer.ID) bool { return s.member(src) }

func (s *natSide) member(p peer.ID) bool {
	f := s.isPeer.Load()
	return f != nil && (*f)(p)
}

// relays offers autorelay the known agents that serve the relay protocol.
func (s *natSide) relays(ctx context.Context, num int) <-chan peer.AddrInfo {
	out := make(chan peer.AddrInfo, num)
	defer close(out)
	if f := s.known.Load(); f != nil {
		for _, p := range (*f)() {
			if len(out) == num {
				break
			}
			out <- p
		}
	}
	return out
}

// relayIDs lists the known agents that serve the relay protocol.
func (s *natSide) relayIDs() []peer.ID {
	f := s.known.Load()
	if f == nil {
		return nil
	}
	var out []peer.ID
	for _, p := range (*f)() {
		out = append(out, p.ID)
	}
	return out
}

// relayBuffer is the relay's copy buffer per direction of a circuit.
// libp2p's 2 KiB suits signalling; a job's megabytes crossed a loopback
// relay at a quarter of the direct bandwidth with it (TestRelayFigures).
const relayBuffer = 64 << 10

// reserveEvery is how often an agent that is not publicly reachable
// checks its relay slots; maxSlots is how many relays it holds one on.
const (
	reserveEvery = 5 * time.Second
	maxSlots     = 2
)

// holdSlots keeps a slot on up to maxSlots known relays while the agent is
// not known to be publicly reachable, renewing each before it expires.
// libp2p's autorelay does this too, but only once AutoNAT has said
// "private" (an agent whose reachability stays unknown would hold none)
// and it advertises only relays with public IPs; the rendezvous dials
// through these slots instead (RendezvousConfig.Relays).
func (n *Node) holdSlots(ctx context.Context) {
	slots := map[peer.ID]time.Time{} // relay -> expiry
	t := time.NewTicker(reserveEvery)
	defer t.Stop()
	for {
		if reach, _ := n.reach.Load().(string); reach != "public" {
			now := time.Now()
			for p, exp := range slots {
				if now.After(exp.Add(-time.Minute)) {
					delete(slots, p) // renew below
				}
			}
			for _, p := range n.nat.relayIDs() {
				if len(slots) >= maxSlots {
					break
				}
				if _, held := slots[p]; held || p == n.ID() {
					continue
				}
				rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				r, err := client.Reserve(rctx, n.h, peer.AddrInfo{ID: p})
				cancel()
				if err != nil {
					log.Debugw("relay slot not reserved", "relay", p, "err", err)
					continue
				}
				slots[p] = r.Expiration
			}
			n.nat.slots.Store(int32(len(slots)))
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}

// dialable tells the rendezvous whether agents that find this one can
// reach it: unless AutoNAT found it behind a NAT, or while it holds a slot
// on a relay of its network.
func (n *Node) dialable() bool {
	reach, _ := n.reach.Load().(string)
	return reach != ReachPrivate || n.nat.slots.Load() > 0
}

// natOptions are the host options of an agent on the public network: it
// learns its reachability (AutoNAT v2, or as the owner forces it), serves
// circuit relay v2 to the agents of its network when it is reachable,
// reserves slots on such relays when it is not, and upgrades relayed
// connections to direct ones by hole punching (DCUtR). A relayed
// connection carries a job's traffic, so it has no data or time limit (a
// public relay's 128 KiB / 2 min would cut any job); what bounds the relay
// is who may use it (this network's agents only) and how many slots and
// circuits it gives (RelayReservations, RelayCircuits).
func natOptions(cfg Config, side *natSide) []libp2p.Option {
	res := relayv2.DefaultResources()
	res.Limit = nil
	res.MaxReservations, res.MaxCircuits = cfg.RelayReservations, cfg.RelayCircuits
	res.BufferSize = relayBuffer
	opts := []libp2p.Option{
		libp2p.EnableRelay(),
		libp2p.EnableRelayService(relayv2.WithResources(res), relayv2.WithACL(side)),
		libp2p.EnableAutoRelayWithPeerSource(side.relays,
			autorelay.WithBootDelay(0), autorelay.WithMinCandidates(1), autorelay.WithMinInterval(5*time.Second),
			autorelay.WithBackoff(30*time.Second)),
		libp2p.EnableHolePunching(),
		libp2p.EnableAutoNATv2(),
		libp2p.EnableNATService(),
	}
	switch cfg.Reachability {
	case ReachPublic:
		opts = append(opts, libp2p.ForceReachabilityPublic())
	case ReachPrivate:
		opts = append(opts, libp2p.ForceReachabilityPrivate())
	}
	return opts
}

// joinNAT tells the NAT side which peers are of the network and which can
// relay, once the overlay runs.
func (n *Node) joinNAT() {
	if n.nat == nil {
		return
	}
	proto := overlay.ExchangeProtocol(n.cfg.Network)
	isPeer := func(p peer.ID) bool {
		ok, _ := n.h.Peerstore().SupportsProtocols(p, proto)
		return len(ok) > 0
	}
	known := func() []peer.AddrInfo {
		var out []peer.AddrInfo
		for _, pi := range n.ov.Peers() {
			if ok, _ := n.h.Peerstore().SupportsProtocols(pi.ID, hopProtocol); len(ok) > 0 {
				out = append(out, peer.AddrInfo{ID: pi.ID, Addrs: n.h.Peerstore().Addrs(pi.ID)})
			}
		}
		return out
	}
	n.nat.isPeer.Store(&isPeer)
	n.nat.known.Store(&known)
}

// watchReachability keeps the reachability AutoNAT (or the owner) last
// gave the host, for zorilla id; it is "unknown" until then. libp2p's
// verdict for the host is AutoNAT v1's (it runs v1 beside v2); AutoNAT
// v2's per address is kept too, for an agent joining publicly.
func (n *Node) watchReachability() error {
	n.reach.Store("unknown")
	sub, err := n.h.EventBus().Subscribe([]any{new(event.EvtLocalReachabilityChanged), new(event.EvtHostReachableAddrsChanged)})
	if err != nil {
		return fmt.Errorf("node: watch reachability: %w", err)
	}
	n.OnClose(sub.Close)
	go func() {
		for e := range sub.Out() { // ends when sub closes
			switch ev := e.(type) {
			case event.EvtLocalReachabilityChanged:
				n.reach.Store(strings.ToLower(ev.Reachability.String()))
			case event.EvtHostReachableAddrsChanged:
				if n.nat != nil {
					n.nat.confirmed.Store(&ev)
				}
			}
		}
	}()
	return nil
}

// checkNAT checks the NAT settings.
func checkNAT(c Config) error {
	if !slices.Contains([]string{ReachAuto, ReachPublic, ReachPrivate}, c.Reachability) {
		return fmt.Errorf("reachability %q: want auto, public or private", c.Reachability)
	}
	if c.RelayReservations < 1 || c.RelayCircuits < 1 {
		return fmt.Errorf("relay reservations %d and circuits %d must be >= 1", c.RelayReservations, c.RelayCircuits)
	}
	return nil
}

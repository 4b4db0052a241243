package overlay

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ipfs/go-cid"
	dht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	mh "github.com/multiformats/go-multihash"
)

// RendezvousConfig tunes how an agent finds the other agents of its
// network through a public DHT, and how little it asks of that DHT: the
// DHT's servers are other people's machines, and every lookup of the key
// ends at the same ~20 of them.
type RendezvousConfig struct {
	// Network is the network whose agents to find; its name gives the
	// rendezvous key (RendezvousKey).
	Network string
	// Peers are the public DHT's bootstrap peers: the Amino DHT's (those
	// go-libp2p-kad-dht ships) or a community's own.
	Peers []peer.AddrInfo
	// Providers is about how many agents announce themselves under the key,
	// whatever the network's size (ShouldProvide). 32: a lookup returns
	// every record of the key, so 32 keep its answer to a few kilobytes,
	// and leave enough live, dialable agents among records of agents that
	// left (records live 48 h).
	Providers int
	// Provide is how often an agent that announces itself renews its
	// record. Records live 48 h in the Amino DHT and their addresses 24 h;
	// 6 h renews them well before, and after a restart of the agent's DHT
	// neighbourhood.
	Provide time.Duration
	// Backoff is the first wait after a try that reached no public peer,
	// and between the lookups of an agent that still lacks peers; it
	// doubles with each that did not help. 10 s: the overlay meets the
	// agents a lookup found, and those they know, within a few seconds (a
	// random walk of its DHT), so a newcomer rarely looks up twice. After
	// failures the wait stops at MaxBackoff (5 min: an agent whose internet
	// comes back finds its network soon); while hungry at the heal period.
	Backoff, MaxBackoff time.Duration
	// Heal is how often an agent that has its peers looks up anyway, to
	// join parts of the network that lost each other. HealRate bounds the
	// heal lookups of the whole network per second: each agent waits at
	// least Estimate/HealRate seconds. 1 h and 0.5/s: beyond 1,800 agents
	// the key sees one heal lookup every 2 s, however large the network.
	Heal     time.Duration
	HealRate float64
	// Check is how often the rendezvous looks at the overlay to see whether
	// the agent became hungry (cut off). 1 s: a lookup soon after, and the
	// look is a count over at most MaxKnown peers.
	Check time.Duration
	// Relays, if set, lists agents that serve circuit relay v2: an agent
	// found that cannot be dialled directly (both behind NATs) is tried
	// through them, since it holds a slot on such a relay.
	Relays func() []peer.ID
	// Dialable, if set, tells whether agents that find this one can reach
	// it (not known to be behind a NAT, or holding a relay slot); only
	// dialable agents announce themselves. Nil: always.
	Dialable func() bool
	// Clock is the rendezvous' time source; nil: the system clock. Tests
	// inject one to run hours of schedule in seconds.
	Clock Clock
}

// Clock is the time source of a Rendezvous.
type Clock interface {
	Now() time.Time
	// After fires once, d from now, as time.After does.
	After(d time.Duration) <-chan time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time                         { return time.Now() }
func (systemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// DefaultRendezvousConfig returns the settings of a real agent for network.
func DefaultRendezvousConfig(network string, peers []peer.AddrInfo) RendezvousConfig {
	return RendezvousConfig{Network: network, Peers: peers, Providers: 32,
		Provide: 6 * time.Hour, Backoff: 10 * time.Second, MaxBackoff: 5 * time.Minute,
		Heal: time.Hour, HealRate: 0.5, Check: time.Second}
}

func (c RendezvousConfig) validate() error {
	if err := CheckNetwork(c.Network); err != nil {
		return err
	}
	if len(c.Peers) == 0 {
		return errors.New("overlay: rendezvous: no public bootstrap peer")
	}
	if c.Provide <= 0 || c.Backoff <= 0 || c.MaxBackoff < c.Backoff || c.Heal < c.Backoff ||
		c.Check <= 0 || !(c.HealRate > 0) || c.Providers < 1 {
		return fmt.Errorf("overlay: rendezvous: want positive periods, Providers and HealRate, and MaxBackoff and Heal >= Backoff: %+v", c)
	}
	return nil
}

// RendezvousKey is the content ID an agent of network announces itself
// under in the public DHT: a hash of the network name, so that a network's
// agents find each other and no one else.
func RendezvousKey(network string) cid.Cid {
	sum, err := mh.Sum([]byte("zorilla network "+network), mh.SHA2_256, -1)
	if err != nil {
		panic(err) // sha2-256 is always there
	}
	return cid.NewCidV1(cid.Raw, sum)
}

// RendezvousStatus is what `zorilla id` and /metrics show of the
// rendezvous.
type RendezvousStatus struct {
	Network     string    `json:"network"`
	PublicPeers int       `json:"public_peers"`      // connected peers of the public DHT's routing table
	Found       int       `json:"found"`             // agents of the network found so far
	Lookups     uint64    `json:"lookups"`           // lookups of the key made
	Provides    uint64    `json:"provides"`          // announcements made
	Providing   bool      `json:"providing"`         // the agent is one of those that announce themselves
	Provided    time.Time `json:"provided,omitzero"` // when the agent last announced itself
	// NextLookup is when the agent looks the key up next (zero: now);
	// Hungry whether it lacks peers, and so looks up often (Hungry).
	NextLookup time.Time `json:"next_lookup,omitzero"`
	Hungry     bool      `json:"hungry"`
	// Estimate is the network's size as the agent estimates it.
	Estimate int       `json:"network_estimate"`
	Error    string    `json:"error,omitempty"`     // the last problem, if the last try failed
	Retry    time.Time `json:"next_retry,omitzero"` // when it tries again after a failure
}

// Rendezvous finds the agents of a network through a public Kademlia DHT
// (the Amino DHT, /ipfs/kad/1.0.0) that the agents use as clients only: a
// few dialable agents announce themselves as providers of RendezvousKey,
// and an agent looks the key up while it lacks peers (and rarely after, to
// heal partitions); the agents it finds join its private overlay as
// bootstrap peers would. Once joined, the overlay is as before; the public
// DHT is only how agents meet. Its goroutine ends on Close.
type Rendezvous struct {
	cfg   RendezvousConfig
	h     host.Host
	ov    *Overlay
	dht   *dht.IpfsDHT
	key   cid.Cid
	clock Clock
	draw  float64 // ProviderDraw of this agent

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex // guards status and found
	status RendezvousStatus
	found  map[peer.ID]bool
}

// StartRendezvous starts a client of the public DHT on h and the loop that
// looks up and announces this agent, and joins the others it finds to ov.
func StartRendezvous(h host.Host, ov *Overlay, cfg RendezvousConfig) (*Rendezvous, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	d, err := dht.New(ctx, h, dht.Mode(dht.ModeClient), dht.BootstrapPeers(cfg.Peers...))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("overlay: public dht client: %w", err)
	}
	r := &Rendezvous{cfg: cfg, h: h, ov: ov, dht: d, key: RendezvousKey(cfg.Network), clock: cfg.Clock,
		draw: ProviderDraw(cfg.Network, h.ID()),
		ctx:  ctx, cancel: cancel, done: make(chan struct{}), found: map[peer.ID]bool{},
		status: RendezvousStatus{Network: cfg.Network}}
	if r.clock == nil {
		r.clock = systemClock{}
	}
	go r.run()
	return r, nil
}

// Status reports how the rendezvous goes.
func (r *Rendezvous) Status() RendezvousStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.status
	st.PublicPeers = r.dht.RoutingTable().Size()
	return st
}

// Close stops the loop and the public DHT client.
func (r *Rendezvous) Close() error {
	r.cancel()
	<-r.done
	return r.dht.Close()
}

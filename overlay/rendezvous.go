package overlay

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ipfs/go-cid"
	dht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	mh "github.com/multiformats/go-multihash"
)

// RendezvousConfig tunes how an agent finds the other agents of its
// network through a public DHT.
type RendezvousConfig struct {
	// Network is the network whose agents to find; its name gives the
	// rendezvous key (RendezvousKey).
	Network string
	// Peers are the public DHT's bootstrap peers: the Amino DHT's (those
	// go-libp2p-kad-dht ships) or a community's own.
	Peers []peer.AddrInfo
	// Provide is how often the agent announces itself under the key.
	// Provider records live 48 h in the Amino DHT; 6 h renews them long
	// before, and after a restart of the agent's DHT neighbourhood.
	Provide time.Duration
	// Find is how often the agent looks up the other agents under the key.
	Find time.Duration
	// Backoff is the first wait after no public peer answered; it doubles
	// up to MaxBackoff while none does.
	Backoff, MaxBackoff time.Duration
	// Relays, if set, lists agents that serve circuit relay v2: an agent
	// found that cannot be dialled directly (both behind NATs) is tried
	// through them, since it holds a slot on such a relay.
	Relays func() []peer.ID
}

// DefaultRendezvousConfig returns the settings of a real agent for network.
func DefaultRendezvousConfig(network string, peers []peer.AddrInfo) RendezvousConfig {
	return RendezvousConfig{Network: network, Peers: peers,
		Provide: 6 * time.Hour, Find: 30 * time.Second, Backoff: 5 * time.Second, MaxBackoff: 5 * time.Minute}
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

// RendezvousStatus is what `zorilla id` shows of the rendezvous.
type RendezvousStatus struct {
	Network     string    `json:"network"`
	PublicPeers int       `json:"public_peers"`        // connected peers of the public DHT's routing table
	Provided    time.Time `json:"provided,omitzero"`   // when the agent last announced itself
	Found       int       `json:"found"`               // agents of the network found so far
	Error       string    `json:"error,omitempty"`     // the last problem, if the last try failed
	Retry       time.Time `json:"next_retry,omitzero"` // when it tries again after a failure
}

// Rendezvous finds the agents of a network through a public Kademlia DHT
// (the Amino DHT, /ipfs/kad/1.0.0) that the agents use as clients only:
// each announces itself as a provider of RendezvousKey and looks the others
// up, and the ones it finds join its private overlay as bootstrap peers
// would. Once joined, the overlay is as before; the public DHT is only how
// agents meet. Its goroutine ends on Close.
type Rendezvous struct {
	cfg RendezvousConfig
	h   host.Host
	ov  *Overlay
	dht *dht.IpfsDHT
	key cid.Cid

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex // guards status and found
	status RendezvousStatus
	found  map[peer.ID]bool
}

// StartRendezvous starts a client of the public DHT on h and the loop that
// announces this agent and joins the others it finds to ov.
func StartRendezvous(h host.Host, ov *Overlay, cfg RendezvousConfig) (*Rendezvous, error) {
	if err := CheckNetwork(cfg.Network); err != nil {
		return nil, err
	}
	if len(cfg.Peers) == 0 {
		return nil, errors.New("overlay: rendezvous: no public bootstrap peer")
	}
	if cfg.Provide <= 0 || cfg.Find <= 0 || cfg.Backoff <= 0 || cfg.MaxBackoff < cfg.Backoff {
		return nil, fmt.Errorf("overlay: rendezvous: periods must be positive and MaxBackoff >= Backoff: %+v", cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d, err := dht.New(ctx, h, dht.Mode(dht.ModeClient), dht.BootstrapPeers(cfg.Peers...))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("overlay: public dht client: %w", err)
	}
	r := &Rendezvous{cfg: cfg, h: h, ov: ov, dht: d, key: RendezvousKey(cfg.Network),
		ctx: ctx, cancel: cancel, done: make(chan struct{}), found: map[peer.ID]bool{},
		status: RendezvousStatus{Network: cfg.Network}}
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

// run announces and looks up until Close. A round that reaches no public
// peer is tried again after a backoff that doubles; a round that does is
// followed by the next after cfg.Find.
func (r *Rendezvous) run() {
	defer close(r.done)
	backoff := r.cfg.Backoff
	var provided time.Time
	for {
		wait := r.cfg.Find
		if err := r.round(&provided); err != nil {
			wait = backoff
			backoff = min(2*backoff, r.cfg.MaxBackoff)
			log.Infow("public rendezvous failed; trying again", "in", wait, "err", err)
			r.note(err, time.Now().Add(wait))
		} else {
			backoff = r.cfg.Backoff
			r.note(nil, time.Time{})
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-r.ctx.Done():
			t.Stop()
			return
		}
	}
}

// round connects to the public DHT, announces this agent when due, and
// joins the network's agents it finds.
func (r *Rendezvous) round(provided *time.Time) error {
	ctx, cancel := context.WithTimeout(r.ctx, time.Minute)
	defer cancel()
	if r.dht.RoutingTable().Size() == 0 {
		reached := 0
		var errs []error
		for _, p := range r.cfg.Peers {
			if err := r.h.Connect(ctx, p); err != nil {
				errs = append(errs, err)
				continue
			}
			reached++
		}
		if reached == 0 {
			return fmt.Errorf("no public bootstrap peer answered: %w", errors.Join(errs...))
		}
		if err := r.dht.Bootstrap(ctx); err != nil {
			return fmt.Errorf("public dht bootstrap: %w", err)
		}
		if err := r.awaitRoutingTable(ctx); err != nil {
			return err
		}
	}
	if time.Since(*provided) >= r.cfg.Provide {
		if err := r.dht.Provide(ctx, r.key, true); err != nil {
			return fmt.Errorf("announce under %s: %w", r.key, err)
		}
		*provided = time.Now()
		r.mu.Lock()
		r.status.Provided = *provided
		r.mu.Unlock()
	}
	for p := range r.dht.FindProvidersAsync(ctx, r.key, 0) {
		if p.ID == r.h.ID() || len(p.Addrs) == 0 {
			continue
		}
		if err := r.join(ctx, p); err != nil {
			log.Debugw("agent found by rendezvous not reached", "peer", p.ID, "err", err)
			continue
		}
		r.mu.Lock()
		if !r.found[p.ID] {
			r.found[p.ID] = true
			r.status.Found = len(r.found)
		}
		r.mu.Unlock()
	}
	return nil
}

// maxRelayTries bounds the relays an unreachable agent is tried through.
const maxRelayTries = 4

// join makes p a bootstrap peer of the overlay: directly if it can be
// dialled, else through the relays this agent knows (a circuit address
// /p2p/RELAY/p2p-circuit for each), once already connected skipped.
func (r *Rendezvous) join(ctx context.Context, p peer.AddrInfo) error {
	if r.h.Network().Connectedness(p.ID) == network.Connected {
		return r.ov.Bootstrap(ctx, []peer.AddrInfo{{ID: p.ID}})
	}
	err := r.ov.Bootstrap(ctx, []peer.AddrInfo{p})
	if err == nil || r.cfg.Relays == nil {
		return err
	}
	var circuits []ma.Multiaddr
	for _, relay := range r.cfg.Relays() {
		if relay == p.ID || relay == r.h.ID() || len(circuits) == maxRelayTries {
			continue
		}
		a, cerr := ma.NewMultiaddr("/p2p/" + relay.String() + "/p2p-circuit")
		if cerr == nil {
			circuits = append(circuits, a)
		}
	}
	if len(circuits) == 0 {
		return err
	}
	if rerr := r.ov.Bootstrap(ctx, []peer.AddrInfo{{ID: p.ID, Addrs: circuits}}); rerr != nil {
		return errors.Join(err, rerr)
	}
	return nil
}

// awaitRoutingTable waits until the public DHT client has a peer to ask:
// connections to its bootstrap peers fill the table once identify has
// run on them.
func (r *Rendezvous) awaitRoutingTable(ctx context.Context) error {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for r.dht.RoutingTable().Size() == 0 {
		select {
		case <-t.C:
		case <-ctx.Done():
			return fmt.Errorf("public dht: no peer in the routing table: %w", ctx.Err())
		}
	}
	return nil
}

func (r *Rendezvous) note(err error, retry time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status.Error, r.status.Retry = "", retry
	if err != nil {
		r.status.Error = strings.Join(strings.Fields(err.Error()), " ") // one line, for zorilla id
	}
}

package overlay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// roundTimeout bounds one lookup, and one announcement, on the public DHT.
const roundTimeout = time.Minute

// lookupResult is what one lookup of the key found: agents (itself left
// out), the base providers among those it reached, and those it had not
// found before.
type lookupResult struct {
	found, foundBase, fresh int
}

// maxFound bounds the providers one lookup takes, per Providers: the
// lookup stops there, and so do the agents it dials.
const maxFound = 4

// round connects to the public DHT if need be, looks the key up and joins
// the agents it finds; estimate tells base providers (IsBase) apart.
func (r *Rendezvous) round(estimate int) (lookupResult, error) {
	ctx, cancel := context.WithTimeout(r.ctx, roundTimeout)
	defer cancel()
	if err := r.connectPublic(ctx); err != nil {
		return lookupResult{}, err
	}
	r.mu.Lock()
	r.status.Lookups++
	r.mu.Unlock()
	var res lookupResult
	for p := range r.dht.FindProvidersAsync(ctx, r.key, maxFound*r.cfg.Providers) {
		if p.ID == r.h.ID() {
			continue
		}
		res.found++
		if err := r.join(ctx, p); err != nil {
			log.Debugw("agent found by rendezvous not reached", "peer", p.ID, "err", err)
			continue
		}
		if r.cfg.IsBase(ProviderDraw(r.cfg.Network, p.ID), estimate) {
			res.foundBase++
		}
		r.mu.Lock()
		if !r.found[p.ID] {
			r.found[p.ID] = true
			r.status.Found = len(r.found)
			res.fresh++
		}
		r.mu.Unlock()
	}
	return res, nil
}

// provide announces this agent under the key.
func (r *Rendezvous) provide() error {
	ctx, cancel := context.WithTimeout(r.ctx, roundTimeout)
	defer cancel()
	if err := r.connectPublic(ctx); err != nil {
		return err
	}
	r.mu.Lock()
	r.status.Provides++
	r.mu.Unlock()
	if err := r.dht.Provide(ctx, r.key, true); err != nil {
		return fmt.Errorf("announce under %s: %w", r.key, err)
	}
	return nil
}

// connectPublic makes sure the public DHT client has a peer to ask:
// while its routing table is empty it dials the bootstrap peers and
// bootstraps.
func (r *Rendezvous) connectPublic(ctx context.Context) error {
	if r.dht.RoutingTable().Size() > 0 {
		return nil
	}
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
	return r.awaitRoutingTable(ctx)
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
	if len(p.Addrs) == 0 {
		return errors.New("no address")
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

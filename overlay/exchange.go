package overlay

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/zorilla-p2p/zorilla/internal/wire"
)

// The neighbour exchange (ExchangeProtocol, one per network): the
// requester says whether it has chosen the responder as a neighbour (a
// lease, renewed every round), the responder answers with peers it knows,
// its neighbours first. Neighbours of a near peer are likely near too, so
// locality spreads without measuring everyone.

// Bounds of the exchange protocol.
const (
	maxRequestSize  = 256
	maxResponseSize = 32 << 10
	maxRecords      = 32 // peers in one answer
	maxRecordAddrs  = 8  // addresses of one peer
	maxServing      = 16 // inbound exchanges served at once
	extraRecords    = 8  // random known peers added to the neighbours
)

type exchangeRequest struct {
	Neighbour bool `json:"neighbour"` // "you are one of my neighbours"
}

type exchangeResponse struct {
	Peers []peerRecord `json:"peers"`
}

type peerRecord struct {
	ID    string   `json:"id"`
	Addrs []string `json:"addrs"`
}

// decodeRequest decodes an exchange request.
func decodeRequest(b []byte) (exchangeRequest, error) {
	var r exchangeRequest
	if len(b) > maxRequestSize {
		return r, fmt.Errorf("overlay: request of %d bytes exceeds %d", len(b), maxRequestSize)
	}
	if err := wire.DecodeJSON(b, &r); err != nil {
		return r, fmt.Errorf("overlay: decode request: %w", err)
	}
	return r, nil
}

// decodeResponse decodes and checks an exchange answer. One bad record
// refuses the whole answer, so a broken or lying peer adds nothing.
func decodeResponse(b []byte) ([]peer.AddrInfo, error) {
	var r exchangeResponse
	if len(b) > maxResponseSize {
		return nil, fmt.Errorf("overlay: response of %d bytes exceeds %d", len(b), maxResponseSize)
	}
	if err := wire.DecodeJSON(b, &r); err != nil {
		return nil, fmt.Errorf("overlay: decode response: %w", err)
	}
	if len(r.Peers) > maxRecords {
		return nil, fmt.Errorf("overlay: response of %d peers exceeds %d", len(r.Peers), maxRecords)
	}
	out := make([]peer.AddrInfo, 0, len(r.Peers))
	for i, rec := range r.Peers {
		ai, err := rec.decode()
		if err != nil {
			return nil, fmt.Errorf("overlay: response peer %d: %w", i, err)
		}
		out = append(out, ai)
	}
	return out, nil
}

func (rec peerRecord) decode() (peer.AddrInfo, error) {
	id, err := peer.Decode(rec.ID)
	if err != nil {
		return peer.AddrInfo{}, fmt.Errorf("peer id %q: %w", rec.ID, err)
	}
	if len(rec.Addrs) > maxRecordAddrs {
		return peer.AddrInfo{}, fmt.Errorf("%d addresses exceed %d", len(rec.Addrs), maxRecordAddrs)
	}
	ai := peer.AddrInfo{ID: id}
	for _, s := range rec.Addrs {
		a, err := ma.NewMultiaddr(s)
		if err != nil {
			return peer.AddrInfo{}, fmt.Errorf("address %q: %w", s, err)
		}
		ai.Addrs = append(ai.Addrs, a)
	}
	return ai, nil
}

func encodeRecord(ai peer.AddrInfo) peerRecord {
	rec := peerRecord{ID: ai.ID.String(), Addrs: []string{}}
	for _, a := range ai.Addrs[:min(len(ai.Addrs), maxRecordAddrs)] {
		rec.Addrs = append(rec.Addrs, a.String())
	}
	return rec
}

// startExchange asks the next neighbour in turn (any live peer while there
// is no neighbour) for its peers, and renews our lease with it. It also
// picks up peers from the routing table.
func (o *Overlay) startExchange(now time.Time) {
	if o.exchanging || now.Before(o.nextSwap) {
		return
	}
	o.nextSwap = now.Add(o.cfg.ExchangeInterval)
	o.discoverRouted(now)
	target, isNeighbour := o.exchangeTarget(now)
	if target == "" {
		return
	}
	o.exchanging = true
	o.spawn(func() {
		found, err := o.exchange(target, isNeighbour)
		if err != nil {
			log.Debugw("exchange", "peer", target, "err", err)
		}
		o.do(func(now time.Time) {
			o.exchanging = false
			o.learn(found, now)
		})
	})
}

func (o *Overlay) exchangeTarget(now time.Time) (peer.ID, bool) {
	var live []peer.ID
	out := o.tab.outbound()
	if len(out) == 0 {
		for id, e := range o.tab.peers {
			if !e.dead(now) {
				live = append(live, id)
			}
		}
	}
	target, neighbour, _ := ExchangeTarget(out, live, &o.round, o.rng)
	return target, neighbour
}

// learn adds the peers an exchange returned, with their addresses.
func (o *Overlay) learn(found []peer.AddrInfo, now time.Time) {
	for _, ai := range found {
		if ai.ID == o.h.ID() {
			continue
		}
		if o.h.Network().Connectedness(ai.ID) != network.Connected {
			o.h.Peerstore().AddAddrs(ai.ID, ai.Addrs, peerstore.TempAddrTTL)
		}
		o.dirty = o.tab.add(ai.ID, now) || o.dirty
	}
}

// exchange is the requester's side of the exchange.
func (o *Overlay) exchange(p peer.ID, neighbour bool) ([]peer.AddrInfo, error) {
	ctx, cancel := context.WithTimeout(o.ctx, o.cfg.ExchangeTimeout)
	defer cancel()
	s, err := o.h.NewStream(ctx, p, o.proto)
	if err != nil {
		return nil, fmt.Errorf("exchange with %s: %w", p, err)
	}
	stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
	defer stop()
	deadline, _ := ctx.Deadline()
	_ = s.SetDeadline(deadline) // mocknet has no deadlines; the AfterFunc bounds it there
	found, err := o.roundTrip(s, neighbour)
	if err != nil {
		_ = s.Reset()
		return nil, fmt.Errorf("exchange with %s: %w", p, err)
	}
	return found, s.Close()
}

func (o *Overlay) roundTrip(s network.Stream, neighbour bool) ([]peer.AddrInfo, error) {
	if err := wire.WriteJSON(s, exchangeRequest{Neighbour: neighbour}); err != nil {
		return nil, err
	}
	b, err := wire.ReadFrame(bufio.NewReader(s), maxResponseSize)
	if err != nil {
		return nil, err
	}
	return decodeResponse(b)
}

// handleExchange is the responder's side of the exchange.
func (o *Overlay) handleExchange(s network.Stream) {
	select {
	case o.slots <- struct{}{}:
		defer func() { <-o.slots }()
	default:
		_ = s.Reset() // busy, or closed
		return
	}
	ctx, cancel := context.WithTimeout(o.ctx, o.cfg.ExchangeTimeout)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
	defer stop()
	deadline, _ := ctx.Deadline()
	_ = s.SetDeadline(deadline)
	if err := o.serve(s); err != nil {
		log.Debugw("serve exchange", "peer", s.Conn().RemotePeer(), "err", err)
		_ = s.Reset()
		return
	}
	_ = s.Close()
}

func (o *Overlay) serve(s network.Stream) error {
	from := s.Conn().RemotePeer()
	r := bufio.NewReader(s)
	b, err := wire.ReadFrame(r, maxRequestSize)
	if err != nil {
		return err
	}
	req, err := decodeRequest(b)
	if err != nil {
		return err
	}
	o.do(func(now time.Time) {
		// Only a change readers see is published: most exchanges renew a
		// lease, and 350 agents publishing after each one re-sorted their
		// tables for a fifth of the CPU of the Grid'5000 simulation.
		changed := false
		if req.Neighbour {
			_, changed = o.tab.leaseInbound(from, now)
		} else {
			changed = o.tab.revive(from, now)
		}
		o.dirty = o.dirty || changed
	})
	resp, err := json.Marshal(o.answer(from))
	if err != nil {
		return err
	}
	if err := wire.WriteFrame(s, resp); err != nil {
		return err
	}
	// Wait for the requester to close first. Closing right after a small
	// write would let mocknet deliver it without its link latency.
	if _, err := r.ReadByte(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("expected end of stream, got %v", err)
	}
	return nil
}

// answer is ExchangeAnswer with the peers' addresses, leaving out the
// requester and peers without a known address.
func (o *Overlay) answer(to peer.ID) exchangeResponse {
	view := o.view.Load()
	var others []peer.ID
	for _, p := range view.peers {
		if p.Measured && !p.Dead && !p.Near && !p.LongRange {
			others = append(others, p.ID)
		}
	}
	resp := exchangeResponse{Peers: []peerRecord{}}
	for _, p := range ExchangeAnswer(view.outbound, others, to, sharedRand) {
		if addrs := o.h.Peerstore().Addrs(p); len(addrs) > 0 {
			resp.Peers = append(resp.Peers, encodeRecord(peer.AddrInfo{ID: p, Addrs: addrs}))
		}
	}
	return resp
}

// sharedRand draws from the runtime's generator, which is safe for
// concurrent use: answers are made on the handlers' goroutines, and o.rng
// belongs to the run loop.
var sharedRand = rand.New(runtimeSource{})

type runtimeSource struct{}

func (runtimeSource) Uint64() uint64 { return rand.Uint64() }

package testnet

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"

	"github.com/zorilla-p2p/zorilla/flood"
	"github.com/zorilla-p2p/zorilla/internal/rpc"
	"github.com/zorilla-p2p/zorilla/internal/wire"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/overlay"
)

// probe is a submitter for the flood benchmark: a host on the net's
// mocknet with its own overlay and Flooder, whose offer handler records
// when each offer arrives. Both loops under comparison (ours, and
// Zorilla's fixed schedule) flood from it and collect offers through it,
// the same way: each offer is measured first (overlay.Measure), as the
// agent's submitter does, and kept (its lease held) until the run ends and
// every lease is cancelled.
type probe struct {
	h  host.Host
	ov *overlay.Overlay
	fl *flood.Flooder
	ep *rpc.Endpoint

	mu  sync.Mutex // guards run
	run *collect
}

// collect is one run's offers.
type collect struct {
	id     job.ID
	n      int
	start  time.Time
	offers []job.Offer
	from   map[peer.ID]bool
	enough chan struct{} // closed once the offers are feasible
	at     time.Duration // when they became feasible, from start
	open   bool          // false once the run is over: later offers are refused
}

// addProbe puts a probe in site of net's mocknet, linked to every agent
// with the topology's latency, and joins it to the overlay.
func addProbe(ctx context.Context, net *Net, site int, ov overlay.Config) (*probe, error) {
	key, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		return nil, err
	}
	id, err := peer.IDFromPrivateKey(key)
	if err != nil {
		return nil, err
	}
	h, err := net.mn.AddPeer(key, mockAddr(site, len(net.Nodes)))
	if err != nil {
		return nil, fmt.Errorf("probe host: %w", err)
	}
	for j, nd := range net.Nodes {
		l, err := net.mn.LinkPeers(id, nd.ID())
		if err != nil {
			return nil, fmt.Errorf("link probe to agent %d: %w", j, err)
		}
		l.SetOptions(mocknet.LinkOptions{Latency: net.topo.RTT(site, net.SiteOf(j)) / 2})
	}
	p := &probe{h: h, ep: rpc.New(h)}
	p.ep.Handle(proto.OfferProtocol, p.handleOffer)
	if p.ov, err = overlay.New(h, ov); err != nil {
		return nil, err
	}
	if p.fl, err = flood.New(h, p.ov, func(context.Context, flood.Advert) {}, flood.DefaultConfig()); err != nil {
		return nil, err
	}
	return p, p.ov.Bootstrap(ctx, []peer.AddrInfo{net.Nodes[0].AddrInfo()})
}

func (p *probe) Close() error {
	return errors.Join(p.fl.Close(), p.ep.Close(), p.ov.Close(), p.h.Close())
}

// begin opens the collection of offers for a new job of n slots.
func (p *probe) begin(n int) *collect {
	c := &collect{id: proto.NewJobID(), n: n, start: time.Now(), from: map[peer.ID]bool{},
		enough: make(chan struct{}), open: true}
	p.mu.Lock()
	p.run = c
	p.mu.Unlock()
	return c
}

// end refuses further offers and returns those kept.
func (p *probe) end(c *collect) []job.Offer {
	p.mu.Lock()
	defer p.mu.Unlock()
	c.open = false
	return append([]job.Offer(nil), c.offers...)
}

// feasible reports whether the run's offers can hold its job.
func (p *probe) feasible(c *collect) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return c.at > 0
}

// handleOffer answers a worker's offer as submitter.Submitter does: ping the
// worker, then keep the offer if its job is collecting.
func (p *probe) handleOffer(ctx context.Context, from peer.ID, st rpc.Stream) {
	_ = st.SetDeadline(time.Now().Add(10 * time.Second))
	var msg proto.OfferMsg
	if err := wire.ReadJSON(bufio.NewReader(st), proto.MaxOfferSize, &msg); err != nil {
		_ = st.Reset()
		return
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	rtt, err := p.ov.Measure(pctx, from) // as the agent's submitter does
	if err != nil {
		rtt = time.Hour // unmeasured: last in the rlist
	}
	cancel()
	reply := p.take(from, msg, rtt)
	if err := wire.WriteJSON(st, reply); err != nil {
		_ = st.Reset()
		return
	}
	_ = st.Close()
}

func (p *probe) take(from peer.ID, msg proto.OfferMsg, rtt time.Duration) proto.OfferReply {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.run
	if c == nil || !c.open || msg.Job != c.id || c.from[from] {
		return proto.OfferReply{Reason: "not collecting"}
	}
	c.from[from] = true
	c.offers = append(c.offers, job.Offer{Peer: from, Lease: msg.Lease, Slots: msg.Slots, Cores: msg.Cores, RTT: rtt})
	job.SortRList(c.offers)
	if c.at == 0 && job.Enough(job.Concentrate, c.offers, c.n, 1) {
		c.at = time.Since(c.start)
		close(c.enough)
	}
	return proto.OfferReply{Keep: true}
}

// cancelAll cancels the leases of offers, 32 at a time.
func (p *probe) cancelAll(ctx context.Context, id job.ID, offers []job.Offer) {
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	for _, o := range offers {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			var rep proto.LeaseReply
			req := proto.LeaseRequest{Op: proto.OpCancel, Job: id, Lease: o.Lease}
			_ = p.ep.Call(ctx, o.Peer, proto.LeaseProtocol, req, &rep, proto.MaxReplySize)
		}()
	}
	wg.Wait()
}

package flood

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	logging "github.com/ipfs/go-log/v2"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/zorilla-p2p/zorilla/internal/ratelimit"
	"github.com/zorilla-p2p/zorilla/internal/wire"
)

var log = logging.Logger("zorilla/flood")

// DefaultNetwork is the network of an agent whose owner names none (the
// overlay's default too).
const DefaultNetwork = "zorilla"

// Protocol is a network's advert protocol: one stream carries one
// length-prefixed JSON message {ttl, envelope}, the envelope a libp2p
// signed envelope of the advert record.
func Protocol(network string) protocol.ID {
	return protocol.ID("/zorilla/net/" + network + "/flood/1.0.0")
}

// ProtocolID is the advert protocol of the default network.
var ProtocolID = Protocol(DefaultNetwork)

// ErrClosed is returned by a Flooder after Close.
var ErrClosed = errors.New("flood: closed")

// Neighbours lists the peers floods travel on. The overlay satisfies it. It
// is called from the Flooder's run loop for every forward, so it must be
// quick and safe for concurrent use.
type Neighbours interface{ Neighbours() []peer.ID }

// DeliverFunc hands an advert to the local worker. It is called from one
// goroutine, in order, and should return quickly: while it runs, later
// adverts queue (DeliverQueue) and are dropped when the queue is full. ctx
// ends when the Flooder closes. The same job may be delivered again with a
// larger TTL; the worker de-duplicates.
type DeliverFunc func(ctx context.Context, a Advert)

// Flooder floods signed adverts over the neighbours and delivers the adverts
// it receives. Its run loop alone owns the seen-cache.
type Flooder struct {
	h       host.Host
	nb      Neighbours
	deliver DeliverFunc
	cfg     Config
	key     crypto.PrivKey
	lim     *ratelimit.Peers
	stats   counters

	events   chan event   // to the run loop
	sendQ    chan sendJob // to the senders
	deliverQ chan Advert  // to the deliverer

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex // guards closed, so that no goroutine is added once Close waits
	closed bool
}

// event is one advert for the run loop: received from a peer, its
// envelope not opened yet (received, env), or originated by this one (a;
// from is then the local peer and ttl radius+1).
type event struct {
	a        Advert
	received bool
	env      []byte
	from     peer.ID
	ttl      int
}

type sendJob struct {
	to  peer.ID
	msg []byte
}

// New starts a Flooder on h: it serves Protocol(cfg.Network) until Close. nb gives the
// neighbours to flood to; deliver receives adverts for the local worker,
// including this peer's own.
func New(h host.Host, nb Neighbours, deliver DeliverFunc, cfg Config) (*Flooder, error) {
	if h == nil || nb == nil || deliver == nil {
		return nil, errors.New("flood: host, neighbours and deliver are required")
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Clock == nil {
		cfg.Clock = systemClock{}
	}
	key := h.Peerstore().PrivKey(h.ID())
	if key == nil {
		return nil, fmt.Errorf("flood: no private key for %s in the peerstore", h.ID())
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &Flooder{
		h: h, nb: nb, deliver: deliver, cfg: cfg, key: key,
		lim:      ratelimit.MustPeers(ratelimit.Limit{Rate: cfg.Rate, Burst: cfg.Burst}, 0),
		events:   make(chan event),
		sendQ:    make(chan sendJob, cfg.SendQueue),
		deliverQ: make(chan Advert, cfg.DeliverQueue),
		ctx:      ctx, cancel: cancel,
	}
	f.wg.Add(2 + cfg.Senders)
	go f.run()
	go f.deliverLoop()
	for range cfg.Senders {
		go f.sender()
	}
	h.SetStreamHandler(Protocol(cfg.Network), f.handleStream)
	return f, nil
}

// Flood signs a with this peer's key and floods it with the given radius:
// the neighbours receive TTL radius, and this peer delivers it to itself
// too. It fills what a leaves empty: Submitter (this peer; another is an
// error), Addrs (the host's), Issued (now) and Expires (AdvertLifetime
// later). It returns once the advert is handed to the run loop; sends go on
// in the background.
func (f *Flooder) Flood(ctx context.Context, a Advert, radius int) error {
	if f.ctx.Err() != nil {
		return ErrClosed
	}
	if radius < 1 || radius > f.cfg.MaxTTL {
		return fmt.Errorf("flood %s: radius %d outside 1..%d", a.Job, radius, f.cfg.MaxTTL)
	}
	a, err := prepare(a, f.h.ID(), f.h.Addrs(), f.key, f.cfg)
	if err != nil {
		return err
	}
	a.TTL = radius
	select {
	case f.events <- event{a: a, from: f.h.ID(), ttl: radius + 1}:
		f.stats.originated.Add(1)
		return nil
	case <-ctx.Done():
		return fmt.Errorf("flood %s: %w", a.Job, ctx.Err())
	case <-f.ctx.Done():
		return ErrClosed
	}
}

// Stats returns the counters so far.
func (f *Flooder) Stats() Stats { return f.stats.snapshot() }

// Close stops serving, ends every goroutine of the Flooder and waits for
// them. It is idempotent.
func (f *Flooder) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	f.mu.Unlock()
	f.h.RemoveStreamHandler(Protocol(f.cfg.Network))
	f.cancel()
	f.wg.Wait()
	return nil
}

// track counts one more goroutine unless the Flooder is closed.
func (f *Flooder) track() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.wg.Add(1)
	return true
}

// run owns the seen-cache and the verified envelopes: it opens each
// advert received, and decides whether to deliver and whether to forward.
// Opening here, not in the stream's goroutine, is what lets the copies of
// an envelope that arrive together be verified once.
func (f *Flooder) run() {
	defer f.wg.Done()
	seen := newSeenCache(f.cfg.SeenSize, f.cfg.SeenTTL)
	verified := newVerifiedCache(verifiedSize)
	for {
		select {
		case <-f.ctx.Done():
			return
		case ev := <-f.events:
			if ev.received && !f.open(verified, &ev) {
				continue
			}
			f.process(seen, ev)
		}
	}
}

// open verifies the envelope of a received event (once per envelope) and
// fills its advert; a bad one is counted and dropped.
func (f *Flooder) open(verified *verifiedCache, ev *event) bool {
	a, err := verified.open(ev.env)
	if err == nil {
		a, err = withTTL(a, ev.ttl, f.limits(), f.cfg.Clock.Now())
	}
	if err != nil {
		f.stats.drop(reasonOf(err))
		log.Debugf("advert from %s dropped: %v", ev.from.ShortString(), err)
		return false
	}
	f.stats.received.Add(1)
	ev.a = a
	return true
}

func (f *Flooder) limits() limits {
	return limits{maxTTL: f.cfg.MaxTTL, maxLifetime: f.cfg.MaxLifetime}
}

func (f *Flooder) process(seen *seenCache, ev event) {
	k := seenKey{submitter: ev.a.Submitter, job: ev.a.Job}
	now := f.cfg.Clock.Now()
	v := decide(seen.get(k, now), ev.ttl)
	seen.put(k, v.next, now)
	if !v.deliver && v.forward == 0 {
		f.stats.stale.Add(1)
		return
	}
	// Forward before delivering: once the worker sees an advert, this
	// peer's forwarding decision for it is already made and counted.
	if v.forward > 0 {
		f.forward(ev.a, ev.from, v.forward)
	}
	if v.deliver {
		select {
		case f.deliverQ <- ev.a:
		default:
			f.stats.drop(DropQueueFull)
		}
	}
}

// forward queues a's envelope with the given TTL for every neighbour but
// the one it came from.
func (f *Flooder) forward(a Advert, from peer.ID, ttl int) {
	if from != f.h.ID() {
		f.stats.forwarded.Add(1)
	}
	msg, err := encodeMessage(a.env, ttl)
	if err != nil {
		log.Warnf("forward %s: %v", a.Job, err)
		return
	}
	done := map[peer.ID]bool{from: true, f.h.ID(): true}
	for _, p := range f.nb.Neighbours() {
		if done[p] {
			continue
		}
		done[p] = true
		select {
		case f.sendQ <- sendJob{to: p, msg: msg}:
		default:
			f.stats.drop(DropQueueFull)
		}
	}
}

func (f *Flooder) deliverLoop() {
	defer f.wg.Done()
	for {
		select {
		case <-f.ctx.Done():
			return
		case a := <-f.deliverQ:
			f.deliver(f.ctx, a)
			f.stats.delivered.Add(1)
		}
	}
}

func (f *Flooder) sender() {
	defer f.wg.Done()
	for {
		select {
		case <-f.ctx.Done():
			return
		case j := <-f.sendQ:
			if err := f.send(j); err != nil {
				f.stats.sendErrors.Add(1)
				log.Debugf("send advert to %s: %v", j.to.ShortString(), err)
				continue
			}
			f.stats.sent.Add(1)
		}
	}
}

// send writes one message on a new stream to j.to.
func (f *Flooder) send(j sendJob) error {
	ctx, cancel := context.WithTimeout(f.ctx, f.cfg.StreamTimeout)
	defer cancel()
	s, err := f.h.NewStream(ctx, j.to, Protocol(f.cfg.Network))
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
	defer stop()
	_ = s.SetDeadline(time.Now().Add(f.cfg.StreamTimeout))
	if err := wire.WriteFrame(s, j.msg); err != nil {
		_ = s.Reset()
		return err
	}
	return s.Close()
}

// handleStream serves one inbound stream: rate limit, read, then hand the
// message to the run loop, which verifies it. A bad frame is dropped,
// counted, and the stream reset.
func (f *Flooder) handleStream(s network.Stream) {
	if !f.track() {
		_ = s.Reset()
		return
	}
	defer f.wg.Done()
	stop := context.AfterFunc(f.ctx, func() { _ = s.Reset() })
	defer stop()
	from := s.Conn().RemotePeer()
	m, err := f.receive(s, from)
	if err != nil {
		f.stats.drop(reasonOf(err))
		log.Debugf("advert from %s dropped: %v", from.ShortString(), err)
		_ = s.Reset()
		return
	}
	_ = s.Close()
	select {
	case f.events <- event{received: true, env: m.Envelope, from: from, ttl: m.TTL}:
	case <-f.ctx.Done():
	}
}

func (f *Flooder) receive(s network.Stream, from peer.ID) (message, error) {
	if !f.lim.Allow(from, f.cfg.Clock.Now()) {
		return message{}, errRateLimited
	}
	_ = s.SetDeadline(time.Now().Add(f.cfg.StreamTimeout))
	b, err := wire.ReadFrame(bufio.NewReaderSize(s, 1024), f.cfg.MaxAdvertSize)
	switch {
	case errors.Is(err, wire.ErrTooLarge):
		return message{}, fmt.Errorf("%w: %w", ErrOversized, err)
	case err != nil:
		return message{}, fmt.Errorf("%w: %w", ErrGarbage, err)
	}
	return decodeFrame(b, f.limits())
}

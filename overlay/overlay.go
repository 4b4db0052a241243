package overlay

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	logging "github.com/ipfs/go-log/v2"
	dht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/p2p/protocol/ping"
)

var log = logging.Logger("zorilla/overlay")

// ErrClosed is returned by an Overlay's methods after Close.
var ErrClosed = errors.New("overlay: closed")

// protectTag marks neighbour connections in the connection manager.
const protectTag = "zorilla-overlay"

// Overlay keeps this agent's view of the network: a private DHT for
// membership, the measured RTT of known peers, and the neighbour set.
//
// One goroutine (run) owns the peer table and every other field marked
// "run loop"; everyone else hands it closures through inbox. Readers get
// an immutable snapshot that the loop publishes after each change.
type Overlay struct {
	cfg   Config
	h     host.Host
	proto protocol.ID // the network's neighbour exchange
	dht   *dht.IpfsDHT
	view  atomic.Pointer[snapshot]

	ctx    context.Context // the overlay's lifetime; cancelled by Close
	cancel context.CancelFunc
	inbox  chan func(now time.Time)
	wg     sync.WaitGroup // run loop, event loop, probes, walks, exchanges
	slots  chan struct{}  // one per inbound exchange being served
	once   sync.Once
	err    error
	owned  []func() error // undo what New set up on the host, in order

	bootMu sync.Mutex // guards boot, also read by the DHT's goroutines
	boot   []peer.AddrInfo

	// run loop
	tab        *table
	rng        *rand.Rand
	dirty      bool      // the table changed since the last publish
	urgent     bool      // ... in a way readers must see at once (a dead peer)
	published  time.Time // when the last snapshot was published
	inflight   int
	walking    bool
	exchanging bool
	booting    bool
	nextWalk   time.Time
	nextSwap   time.Time
	nextBoot   time.Time
	round      int
	protected  map[peer.ID]bool
}

// snapshot is what readers see; it is never modified once published.
type snapshot struct {
	neighbours []peer.ID
	outbound   []peer.ID
	peers      []PeerInfo
	rtt        map[peer.ID]time.Duration
}

// New starts the overlay on h: a private Kademlia DHT in server mode under
// cfg.Network, the exchange protocol, and the loop that measures
// peers and keeps the neighbour set. It finds nobody until Bootstrap is
// given a peer or another agent bootstraps from this one. The overlay
// lives until Close; it does not close h.
func New(h host.Host, cfg Config) (*Overlay, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	o := &Overlay{
		cfg: cfg, h: h, ctx: ctx, cancel: cancel, proto: ExchangeProtocol(cfg.Network),
		inbox:     make(chan func(time.Time), 64),
		slots:     make(chan struct{}, maxServing),
		tab:       newTable(cfg, h.ID()),
		rng:       rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
		protected: map[peer.ID]bool{},
	}
	o.view.Store(&snapshot{})
	if err := o.start(); err != nil {
		return nil, errors.Join(err, o.Close())
	}
	return o, nil
}

// start sets up the DHT, the protocol handlers and the loops.
func (o *Overlay) start() error {
	d, err := dht.New(o.ctx, o.h,
		dht.ProtocolPrefix(dhtPrefix(o.cfg.Network)),
		dht.Mode(dht.ModeServer),
		dht.BootstrapPeersFunc(o.bootPeers),
		dht.RoutingTableRefreshPeriod(o.cfg.DHTRefresh),
	)
	if err != nil {
		return fmt.Errorf("overlay: start dht: %w", err)
	}
	o.dht = d
	o.owned = append(o.owned, d.Close)
	if !slices.Contains(o.h.Mux().Protocols(), ping.ID) {
		// Hosts built without libp2p's ping service (mocknet) still answer.
		ping.NewPingService(o.h)
		o.owned = append(o.owned, func() error { o.h.RemoveStreamHandler(ping.ID); return nil })
	}
	o.h.SetStreamHandler(o.proto, o.handleExchange)
	if err := o.watch(); err != nil {
		return err
	}
	o.wg.Add(1)
	go o.run()
	return nil
}

// Bootstrap connects to the given peers and starts discovery from them.
// Peers are remembered: if the overlay ever knows no live peer, it
// connects to them again. It fails only if peers is not empty and none
// could be reached; an agent without bootstrap peers is a valid first
// agent that others bootstrap from.
func (o *Overlay) Bootstrap(ctx context.Context, peers []peer.AddrInfo) error {
	if o.ctx.Err() != nil {
		return ErrClosed
	}
	peers = slices.DeleteFunc(slices.Clone(peers), func(p peer.AddrInfo) bool { return p.ID == o.h.ID() })
	o.bootMu.Lock()
	o.boot = mergeAddrInfos(o.boot, peers)
	o.bootMu.Unlock()
	reached, err := o.connect(ctx, peers)
	o.do(func(now time.Time) {
		for _, p := range reached {
			o.tab.revive(p, now)
		}
		o.nextWalk, o.nextSwap = now, now
		o.dirty = true
	})
	if len(peers) > 0 && len(reached) == 0 {
		return fmt.Errorf("overlay: bootstrap: no peer reachable: %w", err)
	}
	if err != nil {
		log.Infow("some bootstrap peers unreachable", "err", err)
	}
	return nil
}

// Neighbours lists the peers that floods travel on: the K nearest (by
// RTT, ascending), the random long-range peers, then the peers that chose
// this agent as their neighbour. The slice is the caller's.
func (o *Overlay) Neighbours() []peer.ID { return slices.Clone(o.view.Load().neighbours) }

// RTT is the smoothed application-level round-trip time to p, if p is a
// live peer that has been measured.
func (o *Overlay) RTT(p peer.ID) (time.Duration, bool) {
	d, ok := o.view.Load().rtt[p]
	return d, ok
}

// Peers lists every peer the overlay knows: live ones by RTT (unmeasured
// last), then the dead ones. The slice is the caller's.
func (o *Overlay) Peers() []PeerInfo { return slices.Clone(o.view.Load().peers) }

// DHT is the overlay's DHT, for services that look peers or records up.
func (o *Overlay) DHT() *dht.IpfsDHT { return o.dht }

// MarkDead reports that p did not answer (a reservation, a flood): the
// overlay drops it from the neighbour set and ignores it for DeadFor,
// unless it connects again.
func (o *Overlay) MarkDead(p peer.ID) {
	o.do(func(now time.Time) {
		o.tab.kill(p, now)
		o.dirty, o.urgent = true, true
	})
}

// Measure pings p now and returns the smallest of PingsPerProbe RTTs; the
// sample also feeds the overlay's table. Services use it for peers the
// overlay does not track, such as the offerers of a job.
func (o *Overlay) Measure(ctx context.Context, p peer.ID) (time.Duration, error) {
	if o.ctx.Err() != nil {
		return 0, ErrClosed
	}
	rtt, err := o.measure(ctx, p)
	if err == nil {
		o.do(func(now time.Time) {
			added := o.tab.add(p, now)
			_, visible := o.tab.observe(p, rtt, false, now)
			o.dirty = o.dirty || added || visible
		})
	}
	return rtt, err
}

// Close stops the overlay: it stops serving, ends its loops and the DHT,
// and unprotects its neighbours. It does not close the host. It is safe to
// call more than once.
func (o *Overlay) Close() error {
	o.once.Do(func() {
		o.h.RemoveStreamHandler(o.proto)
		o.cancel()
		for range cap(o.slots) { // wait for inbound exchanges to end
			o.slots <- struct{}{}
		}
		o.wg.Wait()
		var errs []error
		for _, undo := range o.owned {
			errs = append(errs, undo())
		}
		for p := range o.protected {
			o.h.ConnManager().Unprotect(p, protectTag)
		}
		o.err = errors.Join(errs...)
	})
	return o.err
}

// do hands f to the run loop. It returns false once the overlay is closed.
func (o *Overlay) do(f func(now time.Time)) bool {
	select {
	case o.inbox <- f:
		return true
	case <-o.ctx.Done():
		return false
	}
}

// spawn runs f in a goroutine that Close waits for.
func (o *Overlay) spawn(f func()) {
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		f()
	}()
}

func (o *Overlay) bootPeers() []peer.AddrInfo {
	o.bootMu.Lock()
	defer o.bootMu.Unlock()
	return slices.Clone(o.boot)
}

// mergeAddrInfos adds the peers of more to list, merging addresses.
func mergeAddrInfos(list, more []peer.AddrInfo) []peer.AddrInfo {
	for _, p := range more {
		i := slices.IndexFunc(list, func(q peer.AddrInfo) bool { return q.ID == p.ID })
		if i < 0 {
			list = append(list, peer.AddrInfo{ID: p.ID, Addrs: slices.Clone(p.Addrs)})
			continue
		}
		for _, a := range p.Addrs {
			if !slices.ContainsFunc(list[i].Addrs, a.Equal) {
				list[i].Addrs = append(list[i].Addrs, a)
			}
		}
	}
	return list
}

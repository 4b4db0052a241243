package node

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"

	logging "github.com/ipfs/go-log/v2"
	"github.com/libp2p/go-libp2p"
	dht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p/core/connmgr"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/metrics"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/zorilla-p2p/zorilla/flood"
	"github.com/zorilla-p2p/zorilla/internal/blob"
	"github.com/zorilla-p2p/zorilla/internal/chunk"
	"github.com/zorilla-p2p/zorilla/internal/rpc"
	"github.com/zorilla-p2p/zorilla/job/submitter"
	"github.com/zorilla-p2p/zorilla/mpi/router"
	"github.com/zorilla-p2p/zorilla/node/web"
	"github.com/zorilla-p2p/zorilla/overlay"
	"github.com/zorilla-p2p/zorilla/worker"
)

var log = logging.Logger("zorilla/node")

// ErrClosed is returned by a Node's methods after Close.
var ErrClosed = errors.New("node: closed")

// Node is a running agent: its host, its services and its control API.
type Node struct {
	cfg   Config
	h     host.Host
	ov    *overlay.Overlay
	flood *flood.Flooder
	sub   *submitter.Submitter
	chunk *chunk.Service
	blobs *blob.Store
	lease *worker.Leases
	trust *trust // the allow and deny lists, applied to lease's policy
	work  *worker.Service
	ep    *rpc.Endpoint // the job protocols' endpoint, with its rate limits

	jobsDir string              // where job folders go
	sandbox SandboxInfo         // what the sandbox of jobs enforces
	rdv     *overlay.Rendezvous // nil unless the agent joins through the public DHT
	nat     *natSide            // nil unless the agent joins through the public DHT
	reach   atomic.Value        // string: the host's reachability (watchReachability)
	mux     *http.ServeMux
	web     *web.Server               // nil without Config.Web
	bw      *metrics.BandwidthCounter // bytes by protocol; nil without Config.Web
	mpi     *router.Router            // the MPI router, for its totals in /metrics

	mu      sync.Mutex // guards closers and closed
	closers []func() error
	closed  bool
	once    sync.Once
	err     error // set once by Close
}

// Option changes how New assembles a Node.
type Option func(*options)

type options struct {
	host   host.Host
	key    crypto.PrivKey
	gater  connmgr.ConnectionGater
	report func(string)
}

// WithConnectionGater makes the Node's host ask g before every connection;
// tests use it to keep two agents from dialling each other directly.
func WithConnectionGater(g connmgr.ConnectionGater) Option { return func(o *options) { o.gater = g } }

// WithHost makes the Node use h instead of building its own TCP+QUIC
// host; testnets pass a mocknet host. The Node owns h from then on: Close
// closes it. Config.Listen is ignored and the identity is h's.
func WithHost(h host.Host) Option { return func(o *options) { o.host = h } }

// WithIdentity makes the Node use key instead of the one in the data dir
// (or a fresh in-memory one when DataDir is empty), so an in-process
// agent keeps its peer ID across restarts.
func WithIdentity(key crypto.PrivKey) Option { return func(o *options) { o.key = key } }

// New starts an agent: identity, host, overlay, control API, then joins
// the network through cfg.Bootstrap. ctx bounds start-up only; the agent
// runs until Close. An unreachable bootstrap peer is logged, not fatal:
// the overlay keeps trying. Config errors wrap ErrInvalidConfig, data dir
// errors ErrDataDir.
func New(ctx context.Context, cfg Config, opts ...Option) (*Node, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.Overlay.Network, cfg.Services.Flood.Network = cfg.Network, cfg.Network
	if err := checkReadable(cfg.AllowFile, cfg.DenyFile); err != nil {
		return nil, err
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	n := &Node{cfg: cfg, mux: http.NewServeMux()}
	if err := n.start(ctx, o); err != nil {
		return nil, errors.Join(err, n.Close())
	}
	return n, nil
}

// start wires the agent. Services are built from the host and the overlay,
// register their stream handlers, API routes and OnClose hooks; Close
// undoes them in reverse order.
func (n *Node) start(ctx context.Context, o options) error {
	if err := n.startHost(o); err != nil {
		return err
	}
	ov, err := overlay.New(n.h, n.cfg.Overlay)
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.ov = ov
	n.OnClose(ov.Close)
	n.joinNAT()
	if err := n.watchReachability(); err != nil {
		return err
	}
	n.routes()
	if err := n.startServices(); err != nil {
		return err
	}
	if err := n.startWeb(); err != nil {
		return err
	}
	if n.cfg.DataDir != "" {
		api, err := serveAPI(n.cfg.DataDir, n.mux, n.cfg.ShutdownTimeout)
		if err != nil {
			return err
		}
		n.OnClose(api.Close)
	}
	return n.bootstrap(ctx, o.report)
}

func (n *Node) startHost(o options) error {
	if n.cfg.DataDir != "" {
		if err := prepareDataDir(n.cfg.DataDir); err != nil {
			return err
		}
		if err := checkNotRunning(n.cfg.DataDir); err != nil {
			return err // before any service takes a socket or a file
		}
	}
	if o.host != nil {
		n.h = o.host
		n.OnClose(o.host.Close)
		return nil
	}
	key, err := n.identity(o)
	if err != nil {
		return err
	}
	if !n.cfg.ReusePort {
		if err := checkPortsFree(n.cfg.Listen); err != nil {
			return err
		}
	}
	if n.cfg.Public() {
		n.nat = &natSide{}
	}
	var extra []libp2p.Option
	if n.cfg.Web != "" {
		// Bytes by protocol for /metrics, the MPI router's among them:
		// counted only where the agent serves its view.
		n.bw = metrics.NewBandwidthCounter()
		extra = append(extra, libp2p.BandwidthReporter(n.bw))
	}
	h, err := newHost(n.cfg, key, n.nat, o.gater, extra...)
	if err != nil {
		return err
	}
	n.h = h
	n.OnClose(h.Close)
	return nil
}

func (n *Node) identity(o options) (crypto.PrivKey, error) {
	switch {
	case o.key != nil:
		return o.key, nil
	case n.cfg.DataDir != "":
		return loadIdentity(n.cfg.DataDir)
	}
	key, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		return nil, fmt.Errorf("node: generate identity: %w", err)
	}
	return key, nil
}

// bootstrap joins the network through the bootstrap peers, LAN discovery
// and the public rendezvous, as configured. Bootstrap peers that cannot be
// reached are tried again with backoff, and report (or a warning) says
// when the agent reaches none, and when it does again.
func (n *Node) bootstrap(ctx context.Context, report func(string)) error {
	peers, err := ParseBootstrap(n.cfg.Bootstrap)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	first := n.ov.Bootstrap(ctx, peers) // nil without peers: a first agent
	if len(peers) > 0 {
		if report == nil {
			report = func(msg string) { log.Warn(msg) }
		}
		n.watchBootstrap(peers, first, report)
	}
	if n.cfg.MDNS {
		lan, err := overlay.StartLAN(n.h, n.ov, n.cfg.Network)
		if err != nil {
			// A machine with no multicast interface still joins by its
			// other means.
			log.Warnw("local network discovery (mDNS) not started", "err", err)
		} else {
			n.OnClose(lan.Close)
		}
	}
	if n.cfg.Public() {
		return n.startRendezvous()
	}
	return nil
}

// startRendezvous starts finding the network's agents through the public
// DHT: the given public bootstrap peers, or the Amino DHT's.
func (n *Node) startRendezvous() error {
	public, err := ParseBootstrap(n.cfg.PublicBootstrap)
	if err != nil {
		return fmt.Errorf("%w: public %w", ErrInvalidConfig, err)
	}
	if len(public) == 0 {
		public = dht.GetDefaultBootstrapPeerAddrInfos()
	}
	rc := n.cfg.Rendezvous
	rc.Network, rc.Peers = n.cfg.Network, public
	if n.nat != nil {
		rc.Relays, rc.Dialable = n.nat.relayIDs, n.dialable
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); n.holdSlots(ctx) }()
		n.OnClose(func() error { cancel(); <-done; return nil })
	}
	r, err := overlay.StartRendezvous(n.h, n.ov, rc)
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	n.rdv = r
	n.OnClose(r.Close)
	return nil
}

// Rendezvous is the agent's public rendezvous, or nil when it does not join
// through the public DHT.
func (n *Node) Rendezvous() *overlay.Rendezvous { return n.rdv }

// Host is the agent's libp2p host.
func (n *Node) Host() host.Host { return n.h }

// Overlay is the agent's overlay (neighbours, RTTs).
func (n *Node) Overlay() *overlay.Overlay { return n.ov }

// ID is the agent's peer ID.
func (n *Node) ID() peer.ID { return n.h.ID() }

// Config is the configuration the agent runs with.
func (n *Node) Config() Config { return n.cfg }

// Addrs are the agent's full addresses, ending in /p2p/<peer ID>: what
// another agent passes as a bootstrap address.
func (n *Node) Addrs() []ma.Multiaddr {
	addrs, err := peer.AddrInfoToP2pAddrs(&peer.AddrInfo{ID: n.h.ID(), Addrs: n.h.Addrs()})
	if err != nil { // only for an invalid peer ID, which a host never has
		return nil
	}
	return addrs
}

// AddrInfo is the agent's peer ID and listen addresses.
func (n *Node) AddrInfo() peer.AddrInfo {
	return peer.AddrInfo{ID: n.h.ID(), Addrs: slices.Clone(n.h.Addrs())}
}

// Handle adds a control API route: a Go 1.22 ServeMux pattern such as
// "GET /v1/peers". It panics, like ServeMux, if pattern conflicts with a
// route already added: that is a programming error.
func (n *Node) Handle(pattern string, h http.Handler) { n.mux.Handle(pattern, h) }

// API is the control API's handler, for in-process use (tests, and agents
// started without a data dir, which serve no socket).
func (n *Node) API() http.Handler { return n.mux }

// OnClose registers f to run when the agent closes. Hooks run in reverse
// order of registration, so a service stops before what it was built on.
// After Close, f runs at once.
func (n *Node) OnClose(f func() error) {
	n.mu.Lock()
	if !n.closed {
		n.closers = append(n.closers, f)
		n.mu.Unlock()
		return
	}
	n.mu.Unlock()
	if err := f(); err != nil {
		log.Warnw("close hook after close", "err", err)
	}
}

// Drain prepares the agent to stop (see worker.Service.Drain): no new
// job starts here, and the jobs running here leave so that replicated
// ones carry on elsewhere and the others start again elsewhere. It returns
// when they have ended, or when ctx ends; Close still has to be called.
func (n *Node) Drain(ctx context.Context, why string) error {
	if n.work == nil {
		return nil
	}
	return n.work.Drain(ctx, why)
}

// Close stops the agent: the API, the services, the overlay, then the
// host. It returns every error joined; later calls wait for the first and
// return the same result.
func (n *Node) Close() error {
	n.once.Do(func() {
		n.mu.Lock()
		n.closed = true
		closers := n.closers
		n.closers = nil
		n.mu.Unlock()
		var errs []error
		for _, f := range slices.Backward(closers) {
			errs = append(errs, f())
		}
		n.err = errors.Join(errs...)
	})
	return n.err
}

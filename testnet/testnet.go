package testnet

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"

	"github.com/zorilla-p2p/zorilla/node"
	"github.com/zorilla-p2p/zorilla/overlay"
)

// Options tune the agents of a Net.
type Options struct {
	// Overlay is every agent's overlay config; the zero value means
	// overlay.ScaledConfig(size): FastConfig up to 32 agents, so a testnet
	// converges in seconds, and slower periods beyond so hundreds of
	// agents fit on a small machine.
	Overlay overlay.Config
	// Seed chooses who bootstraps from whom; the same seed, the same tree.
	Seed uint64
	// Configure, if set, adjusts agent i's config before it starts (a data
	// dir, labels, owner settings).
	Configure func(i int, cfg *node.Config)
	// NodeOptions, if set, gives agent i's node options of its own (a
	// connection gater that cuts it off from some agents).
	NodeOptions func(i int) []node.Option
}

// Net is a set of agents running in this process. Nodes[i] is agent i; it
// stays in place (closed) after Stop, and is replaced by Restart.
type Net struct {
	Nodes []*node.Node

	network string // the agents' network name: this net's own
	opts    Options
	rng     *rand.Rand
	sites   []int // site of each agent
	keys    []crypto.PrivKey
	ids     []peer.ID
	cfgs    []node.Config
	stopped []bool
	topo    Topology
	mn      mocknet.Mocknet // nil on loopback
	hosts   []host.Host     // mocknet hosts made by mockAll, not yet used
	once    sync.Once
	err     error
}

// Loopback starts n agents on 127.0.0.1 TCP, each bootstrapped from one
// agent started before it (chosen with opts.Seed). They form one site.
func Loopback(ctx context.Context, n int, opts Options) (*Net, error) {
	if n < 1 {
		return nil, fmt.Errorf("testnet: %d agents, want at least 1", n)
	}
	net, err := newNet(opts, Topology{Sites: []Site{{Name: "loopback", Hosts: n}}})
	if err != nil {
		return nil, err
	}
	if err := net.startAll(ctx); err != nil {
		return nil, errors.Join(err, net.Close())
	}
	return net, nil
}

// Mocknet starts the agents of topo on go-libp2p's mocknet: every pair of
// agents linked, with half the RTT of their sites as link latency. Agent
// i's site is SiteOf(i); agents are numbered site after site. Each agent
// bootstraps from one agent started before it.
func Mocknet(ctx context.Context, topo Topology, opts Options) (*Net, error) {
	if err := topo.validate(); err != nil {
		return nil, err
	}
	net, err := newNet(opts, topo)
	if err != nil {
		return nil, err
	}
	net.mn = mocknet.New()
	if err := net.mockAll(); err != nil {
		return nil, errors.Join(err, net.Close())
	}
	if err := net.startAll(ctx); err != nil {
		return nil, errors.Join(err, net.Close())
	}
	return net, nil
}

func newNet(opts Options, topo Topology) (*Net, error) {
	if opts.Overlay == (overlay.Config{}) {
		opts.Overlay = overlay.ScaledConfig(topo.Size())
	}
	n := &Net{opts: opts, topo: topo, network: newNetworkName(), rng: rand.New(rand.NewPCG(opts.Seed, 0x7a6f72696c6c61))}
	for s, site := range topo.Sites {
		for range site.Hosts {
			n.sites = append(n.sites, s)
		}
	}
	size := len(n.sites)
	n.Nodes, n.stopped = make([]*node.Node, size), make([]bool, size)
	for i := range size {
		key, _, err := crypto.GenerateEd25519Key(nil)
		if err != nil {
			return nil, fmt.Errorf("testnet: agent %d key: %w", i, err)
		}
		id, err := peer.IDFromPrivateKey(key)
		if err != nil {
			return nil, fmt.Errorf("testnet: agent %d id: %w", i, err)
		}
		n.keys, n.ids, n.cfgs = append(n.keys, key), append(n.ids, id), append(n.cfgs, n.config(i))
	}
	return n, nil
}

// startConcurrency bounds how many agents start at once.
const startConcurrency = 16

// startAll starts agent 0, then waves of agents that double in size, each
// agent of a wave in parallel and bootstrapped from an agent of an earlier
// wave: start-up takes log2(n) waves instead of n network round trips.
func (n *Net) startAll(ctx context.Context) error {
	size := len(n.sites)
	for lo := 0; lo < size; {
		hi := min(size, max(1, 2*lo))
		boot := make([][]string, hi-lo)
		for i := lo; i < hi; i++ {
			boot[i-lo] = n.bootstrapFor(i) // in order, so Seed decides
		}
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			errs []error
			sem  = make(chan struct{}, startConcurrency)
		)
		for i := lo; i < hi; i++ {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				if err := n.start(ctx, i, boot[i-lo]); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(errs) > 0 {
			return errors.Join(errs...)
		}
		lo = hi
	}
	return nil
}

func (n *Net) config(i int) node.Config {
	cfg := node.DefaultConfig()
	cfg.Network = n.network
	cfg.Listen = []string{"/ip4/127.0.0.1/tcp/0"}
	cfg.Overlay = n.opts.Overlay
	cfg.Open = true
	cfg.ShutdownTimeout = time.Second
	if c := n.topo.Sites[n.sites[i]].Cores; c > 0 {
		cfg.Cores, cfg.MaxProcs = c, c
	}
	if n.opts.Configure != nil {
		n.opts.Configure(i, &cfg)
	}
	return cfg
}

// netCount numbers the nets of this process, for their network names.
var netCount atomic.Int64

// newNetworkName is a network name of this net's own, so that its agents
// never join another net's, nor a real network on the same machine.
func newNetworkName() string {
	return fmt.Sprintf("testnet-%d-%d", os.Getpid(), netCount.Add(1))
}

// bootstrapFor picks one running agent other than i, started before i
// when there is one.
func (n *Net) bootstrapFor(i int) []string {
	var live []int
	for j, nd := range n.Nodes {
		if j != i && nd != nil && !n.stopped[j] && (j < i || len(live) == 0) {
			live = append(live, j)
		}
	}
	if len(live) == 0 {
		return nil
	}
	var out []string
	for _, a := range n.Nodes[live[n.rng.IntN(len(live))]].Addrs() {
		out = append(out, a.String())
	}
	return out
}

// start builds agent i from its saved key and config.
func (n *Net) start(ctx context.Context, i int, bootstrap []string) error {
	cfg := n.cfgs[i]
	cfg.Bootstrap = bootstrap
	opts := []node.Option{}
	if cfg.DataDir == "" {
		opts = append(opts, node.WithIdentity(n.keys[i]))
	}
	if n.mn != nil {
		h, err := n.mockHost(i)
		if err != nil {
			return err
		}
		opts = append(opts, node.WithHost(h))
	}
	if n.opts.NodeOptions != nil {
		opts = append(opts, n.opts.NodeOptions(i)...)
	}
	nd, err := node.New(ctx, cfg, opts...)
	if err != nil {
		return fmt.Errorf("testnet: agent %d: %w", i, err)
	}
	n.Nodes[i], n.stopped[i] = nd, false
	return nil
}

// SiteOf is the index in the topology's Sites of agent i's site.
func (n *Net) SiteOf(i int) int { return n.sites[i] }

// Topology is the net's topology (one site for Loopback).
func (n *Net) Topology() Topology { return n.topo }

// Live reports whether agent i runs (it started and was not stopped).
func (n *Net) Live(i int) bool { return n.Nodes[i] != nil && !n.stopped[i] }

// Stop closes agent i, as if its machine died. Its peers are not told.
func (n *Net) Stop(i int) error {
	if !n.Live(i) {
		return nil
	}
	n.stopped[i] = true
	return n.Nodes[i].Close()
}

// Restart starts stopped agent i again with the same identity (from its
// data dir if it has one, else its saved key) and config, bootstrapped
// from another live agent.
func (n *Net) Restart(ctx context.Context, i int) error {
	if n.Live(i) {
		return fmt.Errorf("testnet: restart agent %d: it is running", i)
	}
	return n.start(ctx, i, n.bootstrapFor(i))
}

// Graph is the neighbour graph of the live agents.
func (n *Net) Graph() Graph {
	g := Graph{}
	for i, nd := range n.Nodes {
		if n.Live(i) {
			g[nd.ID()] = nd.Overlay().Neighbours()
		}
	}
	return g
}

// Index returns the agent with peer ID p, or -1.
func (n *Net) Index(p peer.ID) int {
	for i, nd := range n.Nodes {
		if nd != nil && nd.ID() == p {
			return i
		}
	}
	return -1
}

// Await polls cond until it holds, or fails when ctx ends.
func (n *Net) Await(ctx context.Context, what string, cond func() bool) error {
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("testnet: %s: %w", what, ctx.Err())
		case <-tick.C:
		}
	}
	return nil
}

// Close stops every agent, then the mocknet. It is safe to call again.
func (n *Net) Close() error {
	n.once.Do(func() {
		var errs []error
		for i, nd := range n.Nodes {
			if nd != nil && !n.stopped[i] {
				n.stopped[i] = true
				errs = append(errs, nd.Close())
			}
		}
		if n.mn != nil {
			errs = append(errs, n.mn.Close())
		}
		n.err = errors.Join(errs...)
	})
	return n.err
}

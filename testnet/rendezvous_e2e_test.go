package testnet

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	dht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/node"
)

// standInDHT starts n plain kad-dht servers speaking the public protocol
// (/ipfs/kad/1.0.0) on loopback, joined to each other: not agents, only
// what the public Amino DHT is to an agent. It returns their full
// addresses.
func standInDHT(t *testing.T, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var infos []peer.AddrInfo
	var addrs []string
	for range n {
		h, err := libp2p.New(libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"))
		if err != nil {
			t.Fatal(err)
		}
		d, err := dht.New(context.Background(), h, dht.Mode(dht.ModeServer))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d.Close(); _ = h.Close() })
		for _, p := range infos {
			if err := h.Connect(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		infos = append(infos, peer.AddrInfo{ID: h.ID(), Addrs: h.Addrs()})
		addrs = append(addrs, fmt.Sprintf("%s/p2p/%s", h.Addrs()[0], h.ID()))
	}
	return addrs
}

// publicAgent starts an agent that knows no other agent: only the
// stand-in public DHT, through which it finds its network's agents.
// configure, if set, changes its config further; opts go to node.New.
func publicAgent(t *testing.T, network string, public []string, configure func(*node.Config), opts ...node.Option) *node.Node {
	t.Helper()
	cfg := node.DefaultConfig()
	e2eConfig(&cfg, 1)
	cfg.Network, cfg.Open = network, true
	cfg.Listen = []string{"/ip4/127.0.0.1/tcp/0"}
	cfg.Bootstrap, cfg.PublicBootstrap = []string{node.PublicBootstrapWord}, public
	rc := &cfg.Rendezvous
	rc.Backoff, rc.MaxBackoff, rc.Check = 200*time.Millisecond, 2*time.Second, 50*time.Millisecond
	cfg.ShutdownTimeout = time.Second
	if configure != nil {
		configure(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nd, err := node.New(ctx, cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nd.Close() })
	return nd
}

// TestPublicRendezvous: agents that know only a stand-in public DHT find
// the other agents of their network through its rendezvous key, become
// neighbours and run a job together; agents of another network on the same
// DHT never become their neighbours.
func TestPublicRendezvous(t *testing.T) {
	if testing.Short() {
		t.Skip("a stand-in DHT and agents on loopback")
	}
	public := standInDHT(t, 3)
	start := time.Now()
	var ours, theirs []*node.Node
	for range 3 {
		ours = append(ours, publicAgent(t, "rdv-ours", public, nil))
		theirs = append(theirs, publicAgent(t, "rdv-theirs", public, nil))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, group := range [][]*node.Node{ours, theirs} {
		for _, nd := range group {
			for len(nd.Overlay().Neighbours()) < 2 {
				select {
				case <-ctx.Done():
					t.Fatalf("agent %s found %d neighbours through the rendezvous: %+v", nd.ID(), len(nd.Overlay().Neighbours()), nd.Config().Network)
				case <-time.After(50 * time.Millisecond):
				}
			}
		}
	}
	t.Logf("6 agents of 2 networks, each with 2 neighbours through the stand-in public DHT, %v after the first started", time.Since(start).Round(time.Millisecond))
	in := func(group []*node.Node, p peer.ID) bool {
		for _, nd := range group {
			if nd.ID() == p {
				return true
			}
		}
		return false
	}
	for _, pair := range [][2][]*node.Node{{ours, theirs}, {theirs, ours}} {
		for _, nd := range pair[0] {
			for _, nb := range nd.Overlay().Neighbours() {
				if in(pair[1], nb) {
					t.Errorf("%s of %s has a neighbour of the other network", nd.ID(), nd.Config().Network)
				}
			}
		}
	}
	prog := upload(t, ours[0], `echo "rank $ZORILLA_RANK on $ZORILLA_AGENT"`)
	d := job.NewDescription("job.sh", nil, 3)
	d.Strategy = job.Spread
	rec := awaitEnd(t, ours[0], submit(t, ours[0], d, prog, false))
	if rec.State != job.Done || rec.Plan == nil || len(rec.Plan.Hosts) != 3 {
		t.Fatalf("job ended %s (%s), plan %v", rec.State, rec.Reason, rec.Plan)
	}
	for _, h := range rec.Plan.Hosts {
		if !in(ours, h.Offer.Peer) {
			t.Errorf("the job ran on %s, not an agent of its network", h.Offer.Peer)
		}
	}
}

// TestPublicRendezvousUnreachable: an agent whose public DHT does not
// answer starts anyway, says why its rendezvous fails and when it tries
// again, and keeps trying with a growing wait.
func TestPublicRendezvousUnreachable(t *testing.T) {
	h, err := libp2p.New(libp2p.NoListenAddrs)
	if err != nil {
		t.Fatal(err)
	}
	nobody := fmt.Sprintf("/ip4/127.0.0.1/tcp/1/p2p/%s", h.ID()) // nothing listens on port 1
	_ = h.Close()
	nd := publicAgent(t, "rdv-alone", []string{nobody}, nil)
	deadline := time.Now().Add(30 * time.Second)
	var retries []time.Time
	for len(retries) < 2 {
		st := nd.Rendezvous().Status()
		if st.Error != "" && (len(retries) == 0 || st.Retry.After(retries[len(retries)-1])) {
			retries = append(retries, st.Retry)
		}
		if time.Now().After(deadline) {
			t.Fatalf("rendezvous status %+v: want failures with a next try", st)
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
	st := nd.Rendezvous().Status()
	if st.Network != "rdv-alone" || st.PublicPeers != 0 || st.Found != 0 {
		t.Errorf("status %+v", st)
	}
	t.Logf("failing rendezvous says: %s", st.Error)
}

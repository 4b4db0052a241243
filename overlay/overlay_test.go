package overlay

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"
)

// cluster is a handful of overlays on mocknet, in sites: one-way latency
// local inside a site and remote between sites.
type cluster struct {
	mn    mocknet.Mocknet
	hosts []host.Host
	ovs   []*Overlay
	site  map[peer.ID]int
}

func newCluster(t *testing.T, sites, perSite int, local, remote time.Duration, cfg Config) *cluster {
	t.Helper()
	c := &cluster{mn: mocknet.New(), site: map[peer.ID]int{}}
	t.Cleanup(func() { _ = c.mn.Close() })
	for s := range sites {
		for range perSite {
			h, err := c.mn.GenPeer()
			if err != nil {
				t.Fatal(err)
			}
			c.hosts = append(c.hosts, h)
			c.site[h.ID()] = s
		}
	}
	for i, a := range c.hosts {
		for _, b := range c.hosts[i+1:] {
			l, err := c.mn.LinkPeers(a.ID(), b.ID())
			if err != nil {
				t.Fatal(err)
			}
			lat := remote
			if c.site[a.ID()] == c.site[b.ID()] {
				lat = local
			}
			l.SetOptions(mocknet.LinkOptions{Latency: lat})
		}
	}
	for _, h := range c.hosts {
		o, err := New(h, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = o.Close() })
		c.ovs = append(c.ovs, o)
	}
	// Each overlay knows only the one before it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := 1; i < len(c.hosts); i++ {
		prev := c.hosts[i-1]
		if err := c.ovs[i].Bootstrap(ctx, []peer.AddrInfo{{ID: prev.ID(), Addrs: prev.Addrs()}}); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not a stand-in for the condition
	}
}

func full(o *Overlay, k, random int) bool {
	near, far := 0, 0
	for _, p := range o.Peers() {
		if p.Near {
			near++
		}
		if p.LongRange {
			far++
		}
	}
	return near == k && far == random
}

func TestOverlayLocalityOnMocknet(t *testing.T) {
	cfg := FastConfig()
	cfg.K, cfg.Random = 3, 1
	c := newCluster(t, 2, 5, 500*time.Microsecond, 10*time.Millisecond, cfg)
	waitFor(t, 20*time.Second, "every overlay has 3 near + 1 long-range neighbours in its own site", func() bool {
		for _, o := range c.ovs {
			if !full(o, cfg.K, cfg.Random) {
				return false
			}
			for _, p := range o.Peers() {
				if p.Near && c.site[p.ID] != c.site[o.h.ID()] {
					return false
				}
			}
		}
		return true
	})
	// A near peer is measured, and never faster than its 1 ms link (a
	// mocknet delay never ends early). How much slower is the machine's
	// load, not the overlay's doing: no upper bound (at load 7-9 a
	// 5 ms bound failed 4 to 6 runs in 100). Locality itself is the
	// site check above.
	o := c.ovs[0]
	for _, p := range o.Peers() {
		rtt, ok := o.RTT(p.ID)
		if p.Near && (!ok || rtt < time.Millisecond) {
			t.Errorf("near peer %s RTT %v %v, want at least the link's 1ms", p.ID, rtt, ok)
		}
	}
	// Neighbours lists the chosen ones first, nearest first.
	nb := o.Neighbours()
	if len(nb) < 4 {
		t.Fatalf("neighbours %v", nb)
	}
	for i := 1; i < 3; i++ {
		a, _ := o.RTT(nb[i-1])
		b, _ := o.RTT(nb[i])
		if b < a {
			t.Fatalf("neighbours not nearest first: %v", nb)
		}
	}
}

func TestOverlayMarkDeadAndClose(t *testing.T) {
	cfg := FastConfig()
	cfg.K, cfg.Random = 2, 0
	c := newCluster(t, 1, 4, 500*time.Microsecond, 0, cfg)
	o := c.ovs[3]
	waitFor(t, 20*time.Second, "overlay 3 has 2 neighbours", func() bool { return full(o, 2, 0) })

	victim := o.Neighbours()[0]
	o.MarkDead(victim)
	waitFor(t, 5*time.Second, "a peer marked dead leaves the neighbours", func() bool {
		if slices.Contains(o.Neighbours(), victim) {
			return false
		}
		i := slices.IndexFunc(o.Peers(), func(p PeerInfo) bool { return p.ID == victim })
		return i >= 0 && o.Peers()[i].Dead
	})
	if _, ok := o.RTT(victim); ok {
		t.Fatal("a dead peer still has an RTT")
	}

	// A peer that closes is noticed by its neighbours and dropped.
	gone := c.ovs[0].h.ID()
	_ = c.ovs[0].Close()
	_ = c.hosts[0].Close()
	waitFor(t, 10*time.Second, "a closed peer leaves every neighbour set", func() bool {
		for _, o := range c.ovs[1:] {
			if slices.Contains(o.Neighbours(), gone) {
				return false
			}
		}
		return true
	})

	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if err := o.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := o.Bootstrap(context.Background(), nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Bootstrap after Close: %v", err)
	}
	if _, err := o.Measure(context.Background(), victim); !errors.Is(err, ErrClosed) {
		t.Fatalf("Measure after Close: %v", err)
	}
	o.MarkDead(victim) // must not block or panic
}

func TestOverlayBootstrapUnreachable(t *testing.T) {
	mn := mocknet.New()
	t.Cleanup(func() { _ = mn.Close() })
	a, _ := mn.GenPeer()
	b, _ := mn.GenPeer() // never linked: unreachable
	o, err := New(a, FastConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := o.Bootstrap(ctx, []peer.AddrInfo{{ID: b.ID(), Addrs: b.Addrs()}}); err == nil {
		t.Fatal("bootstrap from an unreachable peer succeeded")
	}
	// Its own address is skipped, and no peer at all is a valid first agent.
	if err := o.Bootstrap(ctx, []peer.AddrInfo{{ID: a.ID(), Addrs: a.Addrs()}}); err != nil {
		t.Fatalf("bootstrap from itself: %v", err)
	}
	if _, err := New(a, Config{}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("New with a zero Config: %v", err)
	}
}

package flood

import (
	"context"
	"fmt"
	"math/rand"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	mocknet "github.com/libp2p/go-libp2p/p2p/net/mock"
	ma "github.com/multiformats/go-multiaddr"
)

// testConfig is the fast profile: short timeouts, no rate limit in the way.
func testConfig() Config {
	c := DefaultConfig()
	c.StreamTimeout = 2 * time.Second
	c.Rate, c.Burst = 1000, 1000
	return c
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}

// fakeClock has a settable now and hands each After to the test, which
// fires it when the scenario is ready.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	waits chan fakeWait
}

type fakeWait struct {
	d    time.Duration
	fire chan time.Time
}

func newFakeClock(now time.Time) *fakeClock {
	return &fakeClock{now: now, waits: make(chan fakeWait, 64)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) set(now time.Time) {
	c.mu.Lock()
	c.now = now
	c.mu.Unlock()
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	w := fakeWait{d: d, fire: make(chan time.Time, 1)}
	c.waits <- w
	return w.fire
}

// nextWait returns the next After the code under test asked for.
func (c *fakeClock) nextWait(t testing.TB) fakeWait {
	t.Helper()
	select {
	case w := <-c.waits:
		return w
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for a wait")
		return fakeWait{}
	}
}

// staticNeighbours is a fixed topology.
type staticNeighbours []peer.ID

func (s staticNeighbours) Neighbours() []peer.ID { return s }

// delivery is one advert a peer's worker received.
type delivery struct {
	job string
	ttl int
}

// recorder is a DeliverFunc that remembers what it got.
type recorder struct {
	mu   sync.Mutex
	got  []delivery
	hook func(Advert)
}

func (r *recorder) deliver(_ context.Context, a Advert) {
	r.mu.Lock()
	r.got = append(r.got, delivery{a.Job, a.TTL})
	hook := r.hook
	r.mu.Unlock()
	if hook != nil {
		hook(a)
	}
}

func (r *recorder) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

// newHosts makes n mocknet hosts with seeded Ed25519 keys, all linked.
func newHosts(t testing.TB, n int) []host.Host {
	t.Helper()
	mn := mocknet.New()
	t.Cleanup(func() { _ = mn.Close() })
	hosts := make([]host.Host, n)
	for i := range n {
		sk, _, err := crypto.GenerateEd25519Key(rand.New(rand.NewSource(int64(i + 1))))
		if err != nil {
			t.Fatal(err)
		}
		addr := ma.StringCast(fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", 20000+i))
		if hosts[i], err = mn.AddPeer(sk, addr); err != nil {
			t.Fatal(err)
		}
	}
	if err := mn.LinkAll(); err != nil {
		t.Fatal(err)
	}
	return hosts
}

// cluster is one Flooder per node of a topology.
type cluster struct {
	hosts []host.Host
	fl    []*Flooder
	rec   []*recorder
}

// newCluster builds adj's topology (adj[i] lists i's neighbours) on mocknet;
// cfgFor may change each node's config.
func newCluster(t testing.TB, adj [][]int, cfgFor func(i int, c *Config)) *cluster {
	t.Helper()
	return newClusterWithBare(t, adj, 0, cfgFor)
}

// newClusterWithBare adds bare hosts, without a Flooder, after adj's nodes
// on the same mocknet: hosts[len(adj):].
func newClusterWithBare(t testing.TB, adj [][]int, bare int, cfgFor func(i int, c *Config)) *cluster {
	t.Helper()
	c := &cluster{hosts: newHosts(t, len(adj)+bare)}
	for i, nbs := range adj {
		var nb staticNeighbours
		for _, j := range nbs {
			nb = append(nb, c.hosts[j].ID())
		}
		cfg := testConfig()
		if cfgFor != nil {
			cfgFor(i, &cfg)
		}
		r := &recorder{}
		f, err := New(c.hosts[i], nb, r.deliver, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.Close() })
		c.fl, c.rec = append(c.fl, f), append(c.rec, r)
	}
	return c
}

// line is 0 - 1 - 2 - ... - n-1.
func line(n int) [][]int {
	adj := make([][]int, n)
	for i := range n {
		if i > 0 {
			adj[i] = append(adj[i], i-1)
		}
		if i < n-1 {
			adj[i] = append(adj[i], i+1)
		}
	}
	return adj
}

// grid is a w×h grid, node y*w+x linked to its 4 neighbours.
func grid(w, h int) [][]int {
	adj := make([][]int, w*h)
	for y := range h {
		for x := range w {
			i := y*w + x
			for _, d := range [][2]int{{-1, 0}, {1, 0}, {0, -1}, {0, 1}} {
				nx, ny := x+d[0], y+d[1]
				if nx >= 0 && nx < w && ny >= 0 && ny < h {
					adj[i] = append(adj[i], ny*w+nx)
				}
			}
		}
	}
	return adj
}

// hops is the hop distance from src to every node.
func hops(adj [][]int, src int) []int {
	d := make([]int, len(adj))
	for i := range d {
		d[i] = -1
	}
	d[src] = 0
	for q := []int{src}; len(q) > 0; q = q[1:] {
		for _, j := range adj[q[0]] {
			if d[j] < 0 {
				d[j] = d[q[0]] + 1
				q = append(q, j)
			}
		}
	}
	return d
}

// floodGoroutines lists the goroutines running a Flooder's code.
func floodGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "flood.(*Flooder)") {
			out = append(out, g)
		}
	}
	return out
}

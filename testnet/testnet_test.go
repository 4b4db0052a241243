package testnet

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/node"
	"github.com/zorilla-p2p/zorilla/overlay"
)

// fullSets reports whether every live agent has K nearest and Random
// long-range neighbours.
func fullSets(net *Net, cfg overlay.Config) bool {
	for i, nd := range net.Nodes {
		if !net.Live(i) {
			continue
		}
		near, far := roles(nd)
		if len(near) != cfg.K || len(far) != cfg.Random {
			return false
		}
	}
	return true
}

func roles(nd *node.Node) (near, far []int) {
	for i, p := range nd.Overlay().Peers() {
		if p.Near {
			near = append(near, i)
		}
		if p.LongRange {
			far = append(far, i)
		}
	}
	return near, far
}

func TestLoopback32Converge(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	net, err := Loopback(ctx, 32, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	started := time.Since(start)
	cfg := overlay.FastConfig()
	if err := net.Await(ctx, "32 agents with full neighbour sets and a connected graph", func() bool {
		return fullSets(net, cfg) && net.Graph().StronglyConnected()
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("32 loopback agents: started in %v, converged %v after start", started, time.Since(start))
	for i, nd := range net.Nodes {
		if known := len(nd.Overlay().Peers()); known < 8 {
			t.Errorf("agent %d knows %d peers", i, known)
		}
	}
}

func TestMocknetThreeSitesLocality(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	topo := ThreeSites(12)
	start := time.Now()
	net, err := Mocknet(ctx, topo, Options{Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	cfg := overlay.FastConfig()
	// share is, over all agents, the fraction of nearest neighbours in the
	// agent's own site; worst is the lowest fraction of any one agent.
	share := func() (all, worst float64) {
		same, total := 0, 0
		worst = 1
		for i, nd := range net.Nodes {
			s, n := 0, 0
			for _, p := range nd.Overlay().Peers() {
				if p.Near {
					n++
					if net.SiteOf(net.Index(p.ID)) == net.SiteOf(i) {
						s++
					}
				}
			}
			same, total = same+s, total+n
			if n > 0 {
				worst = min(worst, float64(s)/float64(n))
			}
		}
		return float64(same) / float64(max(total, 1)), worst
	}
	if err := net.Await(ctx, "36 agents in 3 sites: full sets, >=90% of every agent's nearest in its site, connected", func() bool {
		_, worst := share()
		return fullSets(net, cfg) && worst >= 0.9 && net.Graph().StronglyConnected()
	}); err != nil {
		all, worst := share()
		t.Fatalf("%v (same-site share %.2f, worst agent %.2f)", err, all, worst)
	}
	all, worst := share()
	cross := 0
	for i, nd := range net.Nodes {
		for _, p := range nd.Overlay().Peers() {
			if p.LongRange && net.SiteOf(net.Index(p.ID)) != net.SiteOf(i) {
				cross++
			}
		}
	}
	t.Logf("3 sites x 12: converged in %v; nearest in own site %.0f%% (worst agent %.0f%%); %d of %d long-range links cross sites",
		time.Since(start), 100*all, 100*worst, cross, 2*len(net.Nodes))
	if cross == 0 {
		t.Fatal("no long-range link crosses sites")
	}
	// Mocknet never delivers faster than the link latency (a loaded
	// machine only adds delay), so no RTT is below the topology's.
	nd := net.Nodes[0]
	for _, p := range nd.Overlay().Peers() {
		j := net.Index(p.ID)
		if want := topo.RTT(net.SiteOf(0), net.SiteOf(j)); p.Measured && p.RTT < want {
			t.Errorf("RTT to agent %d (site %d): %v, below the topology's %v", j, net.SiteOf(j), p.RTT, want)
		}
	}
}

func TestLoopbackKillAndRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir, err := os.MkdirTemp("", "ztn")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	const victim = 3
	net, err := Loopback(ctx, 12, Options{Seed: 3, Configure: func(i int, c *node.Config) {
		if i == victim {
			c.DataDir = dir // a real data dir: the identity must come back from disk
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	cfg := overlay.FastConfig()
	if err := net.Await(ctx, "12 agents converge", func() bool { return fullSets(net, cfg) }); err != nil {
		t.Fatal(err)
	}
	id := net.Nodes[victim].ID()
	listedBy := func() int {
		n := 0
		for i, nd := range net.Nodes {
			if i != victim && net.Live(i) && slices.Contains(nd.Overlay().Neighbours(), id) {
				n++
			}
		}
		return n
	}
	// Full sets can come before any exchange has told the victim's
	// neighbours that it chose them: wait for one to list it.
	if err := net.Await(ctx, "someone has the victim as a neighbour before the kill", func() bool { return listedBy() > 0 }); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if err := net.Stop(victim); err != nil {
		t.Fatal(err)
	}
	if err := net.Await(ctx, "the killed agent leaves every neighbour set", func() bool {
		return listedBy() == 0 && fullSets(net, cfg)
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed agent gone from all neighbour sets after %v", time.Since(killed))

	if err := net.Restart(ctx, victim); err != nil {
		t.Fatal(err)
	}
	if got := net.Nodes[victim].ID(); got != id {
		t.Fatalf("restarted agent has peer ID %s, want %s", got, id)
	}
	restarted := time.Now()
	if err := net.Await(ctx, "the restarted agent rejoins", func() bool {
		return fullSets(net, cfg) && listedBy() > 0 && net.Graph().StronglyConnected()
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("restarted agent rejoined after %v", time.Since(restarted))
}

func TestMocknetStopAndRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	net, err := Mocknet(ctx, Topology{Sites: []Site{{Name: "x", Hosts: 6, Cores: 4}}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	if c := net.Nodes[0].Config(); c.Cores != 4 || c.MaxProcs != 4 {
		t.Fatalf("site cores not applied: %d %d", c.Cores, c.MaxProcs)
	}
	cfg := overlay.FastConfig()
	cfg.K, cfg.Random = 3, 1
	_ = cfg
	id := net.Nodes[1].ID()
	if err := net.Stop(1); err != nil {
		t.Fatal(err)
	}
	if err := net.Restart(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if net.Nodes[1].ID() != id {
		t.Fatal("restart on mocknet changed the peer ID")
	}
	if err := net.Await(ctx, "restarted mocknet agent measures its peers", func() bool {
		return len(net.Nodes[1].Overlay().Neighbours()) == 5
	}); err != nil {
		t.Fatal(err)
	}
	if err := net.Close(); err != nil {
		t.Fatal(err)
	}
	if err := net.Close(); err != nil {
		t.Fatal(err)
	}
}

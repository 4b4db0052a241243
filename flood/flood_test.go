package flood

import (
	"context"
	"fmt"
	"testing"
)

// lastTTL is the TTL of the last delivery of job, or 0.
func lastTTL(ds []delivery, job string) int {
	ttl := 0
	for _, d := range ds {
		if d.job == job {
			ttl = d.ttl
		}
	}
	return ttl
}

// floodAndCheckBall floods radius r from src and checks that exactly the
// peers within r hops receive it. Absence needs no sleep: once every peer
// at distance r has delivered with TTL 1 it has decided not to forward, and
// in the topologies used (line, grid: bipartite) a peer farther away can
// only hear from one of them.
func floodAndCheckBall(t *testing.T, c *cluster, adj [][]int, src, r int) {
	t.Helper()
	job := "job-ball"
	if err := c.fl[src].Flood(context.Background(), Advert{Job: job, Body: []byte("need")}, r); err != nil {
		t.Fatalf("flood radius %d: %v", r, err)
	}
	dist := hops(adj, src)
	for i, d := range dist {
		if d == 0 || d > r {
			continue
		}
		want := r - d + 1
		waitFor(t, fmt.Sprintf("peer %d (distance %d) to get TTL %d", i, d, want), func() bool {
			return lastTTL(c.rec[i].deliveries(), job) == want
		})
	}
	waitFor(t, "submitter's own delivery", func() bool { return lastTTL(c.rec[src].deliveries(), job) == r })
	for i, d := range dist {
		switch {
		case d == r && c.fl[i].Stats().Forwarded != 0:
			t.Fatalf("radius %d: peer %d at the edge forwarded", r, i)
		case d > r && (len(c.rec[i].deliveries()) != 0 || c.fl[i].Stats().Received != 0):
			t.Fatalf("radius %d: peer %d at distance %d was reached", r, i, d)
		}
	}
}

func TestRadiusOnLine(t *testing.T) {
	adj := line(6)
	c := newCluster(t, adj, nil)
	for r := 1; r <= 3; r++ {
		floodAndCheckBall(t, c, adj, 0, r)
	}
}

func TestRadiusOnGrid(t *testing.T) {
	adj := grid(5, 5)
	c := newCluster(t, adj, nil)
	const center = 12
	for r := 1; r <= 3; r++ {
		floodAndCheckBall(t, c, adj, center, r)
	}
	// Radius 1 went to the 4 neighbours only; each later radius reached
	// every peer again with a larger TTL.
	if got := c.fl[center].Stats(); got.Originated != 3 {
		t.Fatalf("submitter stats %+v, want 3 originated", got)
	}
}

// Floods of radius 1..R sent back to back race through a grid, so TTLs
// arrive out of order along paths of different lengths. Every peer still
// forwards one job at most once per distinct TTL it sees.
func TestNoStormOnGrid(t *testing.T) {
	adj := grid(5, 5)
	c := newCluster(t, adj, nil)
	const src, R, job = 0, 6, "job-storm"
	for r := 1; r <= R; r++ {
		if err := c.fl[src].Flood(context.Background(), Advert{Job: job}, r); err != nil {
			t.Fatal(err)
		}
	}
	dist := hops(adj, src)
	for i, d := range dist {
		if d > 0 && d <= R {
			waitFor(t, fmt.Sprintf("peer %d's final TTL", i), func() bool {
				return lastTTL(c.rec[i].deliveries(), job) == R-d+1
			})
		}
	}
	expect := waitSent(t, c, adj)
	for i := range adj {
		st, ds := c.fl[i].Stats(), c.rec[i].deliveries()
		withRoom := 0
		for k, dl := range ds {
			if k > 0 && dl.ttl <= ds[k-1].ttl {
				t.Fatalf("peer %d delivered TTLs %v: not strictly growing", i, ds)
			}
			if dl.ttl >= 2 {
				withRoom++
			}
		}
		if i != src && st.Forwarded != uint64(withRoom) {
			t.Fatalf("peer %d forwarded %d times for deliveries %v", i, st.Forwarded, ds)
		}
		if st.Forwarded > uint64(len(ds)) {
			t.Fatalf("peer %d forwarded %d times but saw %d distinct TTLs", i, st.Forwarded, len(ds))
		}
	}
	t.Logf("%d peers, radii 1..%d: %d advert messages (%.1f per peer)", len(adj), R, expect, float64(expect)/float64(len(adj)))
}

// An agent is a worker too: with no neighbours, the submitter still
// delivers its own advert to itself.
func TestSubmitterDeliversToItself(t *testing.T) {
	c := newCluster(t, [][]int{{}}, nil)
	if err := c.fl[0].Flood(context.Background(), Advert{Job: "solo"}, 2); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "self delivery", func() bool { return lastTTL(c.rec[0].deliveries(), "solo") == 2 })
	if err := c.fl[0].Flood(context.Background(), Advert{Job: "solo"}, 2); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the repeat to be de-duplicated", func() bool { return c.fl[0].Stats().Stale == 1 })
	if n := len(c.rec[0].deliveries()); n != 1 {
		t.Fatalf("%d self deliveries, want 1", n)
	}
}

func TestFloodRefusesBadAdverts(t *testing.T) {
	c := newCluster(t, line(2), nil)
	f := c.fl[0]
	ctx := context.Background()
	for name, tc := range map[string]struct {
		a      Advert
		radius int
	}{
		"radius 0":           {Advert{Job: "j"}, 0},
		"radius over cap":    {Advert{Job: "j"}, f.cfg.MaxTTL + 1},
		"no job":             {Advert{}, 1},
		"long job":           {Advert{Job: string(make([]byte, MaxJobLen+1))}, 1},
		"someone else's":     {Advert{Job: "j", Submitter: c.hosts[1].ID()}, 1},
		"oversized body":     {Advert{Job: "j", Body: make([]byte, f.cfg.MaxAdvertSize)}, 1},
		"expired":            {Advert{Job: "j", Issued: f.cfg.Clock.Now().Add(-2 * f.cfg.MaxLifetime), Expires: f.cfg.Clock.Now().Add(-f.cfg.MaxLifetime)}, 1},
		"lives for too long": {Advert{Job: "j", Expires: f.cfg.Clock.Now().Add(2 * f.cfg.MaxLifetime)}, 1},
	} {
		if err := f.Flood(ctx, tc.a, tc.radius); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if st := f.Stats(); st.Originated != 0 {
		t.Fatalf("refused floods were counted: %+v", st)
	}
}

func TestNewRefusesBadArguments(t *testing.T) {
	h := newHosts(t, 1)[0]
	nb, deliver := staticNeighbours{}, func(context.Context, Advert) {}
	if _, err := New(nil, nb, deliver, testConfig()); err == nil {
		t.Error("nil host accepted")
	}
	if _, err := New(h, nil, deliver, testConfig()); err == nil {
		t.Error("nil neighbours accepted")
	}
	if _, err := New(h, nb, nil, testConfig()); err == nil {
		t.Error("nil deliver accepted")
	}
	bad := testConfig()
	bad.MaxTTL = 0
	if _, err := New(h, nb, deliver, bad); err == nil {
		t.Error("bad config accepted")
	}
}

// waitSent waits until every forwarding decision made so far has been sent
// (to each neighbour but the one the advert came from: adj is symmetric)
// and returns the number of messages.
func waitSent(t testing.TB, c *cluster, adj [][]int) uint64 {
	t.Helper()
	var expect uint64
	for i := range adj {
		st := c.fl[i].Stats()
		expect += st.Originated*uint64(len(adj[i])) + st.Forwarded*uint64(len(adj[i])-1)
	}
	waitFor(t, "every decided message sent", func() bool {
		var n uint64
		for _, f := range c.fl {
			n += f.Stats().Sent
		}
		return n == expect
	})
	return expect
}

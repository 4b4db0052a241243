package overlay

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func testTable(mut func(*Config)) *table {
	cfg := DefaultConfig()
	if mut != nil {
		mut(&cfg)
	}
	return newTable(cfg, "self")
}

func TestTableSmoothsRTT(t *testing.T) {
	tab := testTable(nil)
	tab.add("a", t0)
	tab.observe("a", 8*ms, false, t0)
	if e := tab.peers["a"]; e.rtt != 8*ms || !e.measured {
		t.Fatalf("first sample: rtt %v measured %v, want 8ms true", e.rtt, e.measured)
	}
	tab.observe("a", 40*ms, false, t0) // one outlier moves it by Alpha
	if got := tab.peers["a"].rtt; got != 16*ms {
		t.Fatalf("after outlier: %v, want 0.75*8+0.25*40 = 16ms", got)
	}
}

func TestTableDeath(t *testing.T) {
	tab := testTable(nil) // MaxFailures 2, DeadFor 2m
	for _, p := range []peer.ID{"new", "old"} {
		tab.add(p, t0)
	}
	tab.observe("old", 5*ms, false, t0)

	if died, _ := tab.observe("new", 0, true, t0); !died {
		t.Fatal("a never-measured peer that fails is not dead")
	}
	if died, _ := tab.observe("old", 0, true, t0); died {
		t.Fatal("a measured peer died on its first failure")
	}
	if died, _ := tab.observe("old", 0, true, t0); !died {
		t.Fatal("a measured peer survived MaxFailures failures")
	}
	e := tab.peers["old"]
	if !e.dead(t0) || e.measured || e.role != roleNone {
		t.Fatalf("dead entry %+v keeps state", e)
	}
	if tab.observe("old", 1*ms, false, t0.Add(time.Second)); tab.peers["old"].measured {
		t.Fatal("a late probe result revived a dead peer")
	}
	if got := tab.due(t0.Add(time.Minute), 10); len(got) != 0 {
		t.Fatalf("dead peers are probed: %v", got)
	}
	tab.expire(t0.Add(time.Minute))
	if _, ok := tab.peers["old"]; !ok {
		t.Fatal("expired before DeadFor")
	}
	tab.expire(t0.Add(3 * time.Minute))
	if len(tab.peers) != 0 {
		t.Fatalf("dead peers not forgotten after DeadFor: %v", tab.peers)
	}
}

func TestTableReviveAndMarkDead(t *testing.T) {
	tab := testTable(nil)
	tab.kill("x", t0) // MarkDead of an unknown peer still remembers it
	if !tab.peers["x"].dead(t0) {
		t.Fatal("killed peer not dead")
	}
	if tab.add("x", t0) {
		t.Fatal("a dead peer was added again by discovery")
	}
	tab.revive("x", t0.Add(time.Second)) // it connected again
	if e := tab.peers["x"]; e.dead(t0.Add(time.Second)) || e.measured {
		t.Fatalf("revived peer %+v, want alive and unmeasured", e)
	}
	if got := tab.due(t0.Add(time.Second), 1); !slices.Equal(got, []peer.ID{"x"}) {
		t.Fatalf("revived peer not probed: %v", got)
	}
}

func TestTableBounded(t *testing.T) {
	tab := testTable(func(c *Config) { c.MaxKnown = 10; c.K = 2; c.Random = 0 })
	for i := range 10 {
		p := peer.ID(fmt.Sprint("p", i))
		tab.add(p, t0)
		tab.observe(p, time.Duration(i+1)*ms, false, t0)
	}
	tab.reselect(t0, rand.New(rand.NewPCG(1, 1)))
	tab.kill("p5", t0)
	if !tab.add("q1", t0) {
		t.Fatal("full table did not make room")
	}
	if _, ok := tab.peers["p5"]; ok {
		t.Fatal("room was not taken from the dead peer first")
	}
	if !tab.add("q2", t0) {
		t.Fatal("full table did not make room again")
	}
	if _, ok := tab.peers["p9"]; ok {
		t.Fatal("room was not taken from the farthest peer")
	}
	// Only neighbours and unmeasured peers left to evict: refuse.
	for i := range 8 {
		tab.add(peer.ID(fmt.Sprint("r", i)), t0)
	}
	if len(tab.peers) != 10 {
		t.Fatalf("table grew to %d, bound 10", len(tab.peers))
	}
	for _, p := range []peer.ID{"p0", "p1"} {
		if _, ok := tab.peers[p]; !ok {
			t.Fatalf("neighbour %s evicted", p)
		}
	}
	if tab.add("self", t0) || tab.add("", t0) {
		t.Fatal("added self or an empty id")
	}
}

func TestTableDueOrder(t *testing.T) {
	tab := testTable(func(c *Config) { c.K = 1; c.Random = 0 })
	for _, p := range []peer.ID{"nb", "failing", "new", "stale", "fresh"} {
		tab.add(p, t0)
	}
	for _, p := range []peer.ID{"nb", "failing", "stale", "fresh"} {
		tab.observe(p, 5*ms, false, t0)
	}
	tab.observe("nb", 1*ms, false, t0)
	tab.reselect(t0, rand.New(rand.NewPCG(1, 1))) // nb is the nearest
	now := t0.Add(6 * time.Minute)
	tab.observe("failing", 0, true, now.Add(-time.Minute))
	tab.observe("fresh", 5*ms, false, now.Add(-time.Second))

	got := tab.due(now, 10)
	want := []peer.ID{"failing", "nb", "new", "stale"}
	if !slices.Equal(got, want) {
		t.Fatalf("due %v, want %v (fresh is not due)", got, want)
	}
	if again := tab.due(now, 10); len(again) != 0 {
		t.Fatalf("peers being probed are due again: %v", again)
	}
	tab.observe("nb", 1*ms, false, now)
	if got := tab.due(now.Add(14*time.Second), 10); len(got) != 0 {
		t.Fatalf("neighbour due before NeighbourRefresh: %v", got)
	}
	if got := tab.due(now.Add(15*time.Second), 1); !slices.Equal(got, []peer.ID{"nb"}) {
		t.Fatalf("neighbour not due after NeighbourRefresh: %v", got)
	}
}

func TestTableInboundLease(t *testing.T) {
	tab := testTable(func(c *Config) { c.MaxInbound = 2 })
	for _, p := range []peer.ID{"a", "b"} {
		if held, changed := tab.leaseInbound(p, t0); !held || !changed {
			t.Fatalf("lease for %s: held %v, changed %v", p, held, changed)
		}
	}
	if held, changed := tab.leaseInbound("c", t0); held || !changed { // c is new: known, not inbound
		t.Fatalf("lease beyond MaxInbound: held %v, changed %v", held, changed)
	}
	if held, changed := tab.leaseInbound("a", t0.Add(time.Minute)); !held || changed {
		t.Fatalf("a renewal: held %v, changed %v; want held, nothing shown changed", held, changed)
	}
	later := t0.Add(2*time.Minute + time.Second) // b's lease ended, a's did not
	infos := tab.infos(later)
	in := map[peer.ID]bool{}
	for _, p := range infos {
		in[p.ID] = p.Inbound
	}
	if !in["a"] || in["b"] || in["c"] {
		t.Fatalf("inbound after leases: %v, want only a", in)
	}
	if got := neighbours(infos, nil); !slices.Equal(got, []peer.ID{"a"}) {
		t.Fatalf("neighbours %v, want the inbound peer a", got)
	}
}

func TestTableDisconnected(t *testing.T) {
	tab := testTable(func(c *Config) { c.K = 1; c.Random = 0 })
	for _, p := range []peer.ID{"nb", "other"} {
		tab.add(p, t0)
	}
	tab.observe("nb", 1*ms, false, t0)
	tab.observe("other", 9*ms, false, t0)
	tab.reselect(t0, rand.New(rand.NewPCG(1, 1)))
	tab.disconnected("nb", t0)
	tab.disconnected("other", t0) // trimmed by the connection manager: fine
	if got := tab.due(t0.Add(time.Second), 10); !slices.Equal(got, []peer.ID{"nb"}) {
		t.Fatalf("due after disconnections %v, want just the neighbour", got)
	}
	if died, _ := tab.observe("nb", 0, true, t0.Add(time.Second)); !died {
		t.Fatal("a disconnected neighbour that fails one probe is not dead")
	}
	tab.reselect(t0.Add(time.Second), rand.New(rand.NewPCG(1, 1)))
	if got := tab.outbound(); !slices.Equal(got, []peer.ID{"other"}) {
		t.Fatalf("neighbours after death %v, want [other]", got)
	}
}

// TestTableThreeSites builds the table of an agent in a 3-site topology
// (1ms inside a site, 20 and 40ms to the others) and checks that its
// nearest are its site mates and its long-range links are elsewhere.
func TestTableThreeSites(t *testing.T) {
	tab := testTable(nil) // K 6, Random 2
	rtt := map[string]time.Duration{"a": 1 * ms, "b": 20 * ms, "c": 40 * ms}
	for _, site := range []string{"a", "b", "c"} {
		for i := range 8 {
			p := peer.ID(fmt.Sprintf("%s%d", site, i))
			tab.add(p, t0)
			tab.observe(p, rtt[site]+time.Duration(i)*100*time.Microsecond, false, t0)
		}
	}
	if changed := tab.reselect(t0, rand.New(rand.NewPCG(3, 3))); !changed {
		t.Fatal("first selection reported no change")
	}
	out := tab.outbound()
	if !slices.Equal(out[:6], []peer.ID{"a0", "a1", "a2", "a3", "a4", "a5"}) {
		t.Fatalf("nearest %v, want a0..a5", out[:6])
	}
	if len(out) != 8 {
		t.Fatalf("%d neighbours, want 8", len(out))
	}
	if changed := tab.reselect(t0, rand.New(rand.NewPCG(9, 9))); changed {
		t.Fatal("reselection with nothing new changed the set (long-range links must stay)")
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	if err := FastConfig().validate(); err != nil {
		t.Fatalf("fast config: %v", err)
	}
	for name, mut := range map[string]func(*Config){
		"K":            func(c *Config) { c.K = 0 },
		"no network":   func(c *Config) { c.Network = "" },
		"network name": func(c *Config) { c.Network = "My Net/1" },
		"tick":         func(c *Config) { c.Tick = 0 },
		"alpha":        func(c *Config) { c.Alpha = 1.5 },
		"max known":    func(c *Config) { c.MaxKnown = 3 },
		"short lease":  func(c *Config) { c.InboundLease = c.ExchangeInterval },
		"pings":        func(c *Config) { c.PingsPerProbe = 0 },
		"max failures": func(c *Config) { c.MaxFailures = 0 },
	} {
		c := DefaultConfig()
		mut(&c)
		if err := c.validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: got %v, want ErrInvalidConfig", name, err)
		}
	}
}

// expire does its work when the earliest dead mark or inbound lease ends,
// not before, and nothing at all while none is pending.
func TestTableExpireWhenDue(t *testing.T) {
	tab := testTable(func(c *Config) { c.DeadFor = time.Minute; c.InboundLease = 2 * time.Minute })
	if tab.expire(t0) || !tab.nextExpire.IsZero() {
		t.Fatalf("an empty table has work pending at %v", tab.nextExpire)
	}
	tab.kill("dead", t0)                           // ends at 1m
	tab.leaseInbound("in", t0)                     // ends at 2m
	tab.leaseInbound("in", t0.Add(30*time.Second)) // renewed: 2m30s
	for _, step := range []struct {
		at      time.Duration
		changed bool
		next    time.Duration // nextExpire after the call, from t0; -1: none
		known   []peer.ID
	}{
		{59 * time.Second, false, time.Minute, []peer.ID{"dead", "in"}},
		{time.Minute, true, 150 * time.Second, []peer.ID{"in"}}, // the dead mark ends; the scan finds the renewed lease's end
		{2 * time.Minute, false, 150 * time.Second, []peer.ID{"in"}},
		{150 * time.Second, true, -1, []peer.ID{"in"}}, // the lease ends; the peer stays known
		{time.Hour, false, -1, []peer.ID{"in"}},
	} {
		changed := tab.expire(t0.Add(step.at))
		var known []peer.ID
		for p := range tab.peers {
			known = append(known, p)
		}
		slices.Sort(known)
		next := time.Duration(-1)
		if !tab.nextExpire.IsZero() {
			next = tab.nextExpire.Sub(t0)
		}
		if changed != step.changed || next != step.next || !slices.Equal(known, step.known) {
			t.Fatalf("at %v: changed %v, next %v, known %v; want %v, %v, %v",
				step.at, changed, next, known, step.changed, step.next, step.known)
		}
	}
	if tab.peers["in"].inbound(t0.Add(150 * time.Second)) {
		t.Fatal("the lease did not end")
	}
}

// due looks at the table again once the earliest probe it saw is due, or
// at once after any change, and never misses a peer that became due.
func TestTableDueWhenDue(t *testing.T) {
	tab := testTable(nil) // Refresh 5m, NeighbourRefresh 15s
	tab.add("a", t0)
	if got := tab.due(t0, 0); got != nil || !tab.nextDue.IsZero() {
		t.Fatalf("no room: %v, next %v", got, tab.nextDue)
	}
	if got := tab.due(t0, 4); !slices.Equal(got, []peer.ID{"a"}) {
		t.Fatalf("new peer not due: %v", got)
	}
	tab.observe("a", ms, false, t0.Add(time.Second))
	if got := tab.due(t0.Add(2*time.Second), 4); len(got) != 0 || !tab.nextDue.Equal(t0.Add(time.Second+5*time.Minute)) {
		t.Fatalf("due %v, next %v; want none until the refresh", got, tab.nextDue)
	}
	tab.add("b", t0.Add(3*time.Second)) // a change: b is due now, not at a's refresh
	if got := tab.due(t0.Add(3*time.Second), 4); !slices.Equal(got, []peer.ID{"b"}) {
		t.Fatalf("a peer added between scans not due: %v", got)
	}
	tab.observe("b", ms, false, t0.Add(4*time.Second))
	tab.leaseInbound("b", t0.Add(5*time.Second)) // a neighbour now: refreshed after 15s
	if got := tab.due(t0.Add(19*time.Second), 4); !slices.Equal(got, []peer.ID{"b"}) {
		t.Fatalf("new neighbour not refreshed: %v", got)
	}
	tab.observe("b", ms, false, t0.Add(19*time.Second))
	for _, at := range []time.Duration{33 * time.Second, 34 * time.Second} {
		got := tab.due(t0.Add(at), 1)
		if want := at >= 34*time.Second; (len(got) == 1) != want {
			t.Fatalf("at %v: due %v, want b due %v", at, got, want)
		}
	}
	for range 3 { // more due than room: the rest come at the next calls
		tab.add(peer.ID(fmt.Sprint("n", len(tab.peers))), t0.Add(time.Hour))
	}
	seen := 0
	for i := range 5 {
		seen += len(tab.due(t0.Add(time.Hour+time.Duration(i)*time.Second), 1))
	}
	if seen != 4 { // three new peers and a, whose refresh is due
		t.Fatalf("%d peers probed one a call, want 4", seen)
	}
}

func TestMoved(t *testing.T) {
	for _, tc := range []struct {
		shown, now time.Duration
		want       bool
	}{
		{0, 10 * ms, true}, // never shown
		{10 * ms, 10*ms + 600*time.Microsecond, false}, // within 5% + 200us (700us)
		{10 * ms, 10*ms + 800*time.Microsecond, true},
		{10 * ms, 9*ms + 400*time.Microsecond, false},
		{10 * ms, 9 * ms, true},
		{ms, ms + 200*time.Microsecond, false}, // 1.0 and 1.2 ms: one site
		{ms, ms + 300*time.Microsecond, true},
	} {
		if got := moved(tc.shown, tc.now); got != tc.want {
			t.Errorf("moved(%v, %v) = %v, want %v", tc.shown, tc.now, got, tc.want)
		}
	}
}

// A probe's result is visible to readers when it changes what a snapshot
// shows beyond noise, against the last snapshot, not the last probe: a
// slow drift is shown once it adds up.
func TestObserveVisible(t *testing.T) {
	tab := testTable(func(c *Config) { c.Alpha = 1 }) // no smoothing: the sample is the RTT
	tab.add("a", t0)
	for i, step := range []struct {
		rtt     time.Duration
		failed  bool
		publish bool // a snapshot is taken after the step
		visible bool
	}{
		{10 * ms, false, true, true}, // first measurement
		{10*ms + 300*time.Microsecond, false, false, false},
		{10*ms + 600*time.Microsecond, false, false, false},
		{10*ms + 800*time.Microsecond, false, true, true}, // 800us from the 10ms shown
		{10*ms + 900*time.Microsecond, false, false, false},
		{0, true, false, false}, // one failure: not dead yet
		{0, true, false, true},  // dead
	} {
		_, visible := tab.observe("a", step.rtt, step.failed, t0.Add(time.Duration(i)*time.Second))
		if visible != step.visible {
			t.Fatalf("step %d (%v, failed %v): visible %v, want %v", i, step.rtt, step.failed, visible, step.visible)
		}
		if step.publish {
			tab.markShown()
		}
	}
}

package job

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// randomRList draws an rlist with ties in RTT, offers of no slot and, now
// and then, a peer answering twice.
func randomRList(rng *rand.Rand) []Offer {
	k := rng.IntN(30)
	out := make([]Offer, 0, k)
	for i := 0; i < k; i++ {
		id := peer.ID(fmt.Sprintf("p%02d", i))
		if i > 0 && rng.IntN(10) == 0 {
			id = out[rng.IntN(len(out))].Peer
		}
		out = append(out, Offer{Peer: id, Slots: rng.IntN(9), RTT: time.Duration(rng.IntN(5)) * time.Millisecond})
	}
	SortRList(out)
	return out
}

// TestPlaceProperties checks, over seeded random inputs, that Place either
// refuses exactly what Feasible refuses or returns a plan in which every
// rank appears exactly r times, no host holds two copies of a rank, no host
// exceeds c_i, and every offer is either used or cancelled.
func TestPlaceProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	placed := 0
	for iter := 0; iter < 3000; iter++ {
		rlist := randomRList(rng)
		n, r := 1+rng.IntN(12), 1+rng.IntN(4)
		s := []Strategy{Spread, Concentrate}[rng.IntN(2)]
		p, err := Place(s, rlist, n, r)
		ok, _ := usable(rlist)
		slist, _ := SelectHosts(ok, n, r)
		want := Feasible(slist, n, r)
		if (err == nil) != (want == nil) {
			t.Fatalf("iter %d: Place err %v, Feasible %v", iter, err, want)
		}
		if err != nil {
			if !errors.Is(err, ErrInfeasible) {
				t.Fatalf("iter %d: refusal %v does not wrap ErrInfeasible", iter, err)
			}
			continue
		}
		placed++
		if err := p.Check(); err != nil {
			t.Fatalf("iter %d (%s n=%d r=%d): %v", iter, s, n, r, err)
		}
		if err := p.RankTable().Check(n, r); err != nil {
			t.Fatalf("iter %d: rank table: %v", iter, err)
		}
		if got := len(p.Hosts) + len(p.Spares); got != len(rlist) {
			t.Fatalf("iter %d: %d hosts + cancels, want %d offers", iter, got, len(rlist))
		}
		checkStrategyShape(t, s, p, slist)
	}
	if placed < 500 {
		t.Fatalf("only %d feasible draws; the generator no longer exercises placement", placed)
	}
}

// checkStrategyShape checks what distinguishes the strategies. Concentrate:
// every used host but the last is full. Spread: a later host never holds
// more than an earlier one that still had room, and at most one more than
// any host that still has room.
func checkStrategyShape(t *testing.T, s Strategy, p Plan, slist []Offer) {
	t.Helper()
	u := make([]int, len(slist))
	c := make([]int, len(slist))
	for i, o := range slist {
		u[i] = len(p.Procs(o.Peer))
		c[i] = Capacity(o, p.N)
	}
	for i := range u {
		for j := i + 1; j < len(u); j++ {
			switch s {
			case Concentrate:
				if u[j] > 0 && u[i] < c[i] {
					t.Fatalf("concentrate: host %d not full (%d/%d) but host %d used", i, u[i], c[i], j)
				}
			case Spread:
				if u[i] < c[i] && u[j] > u[i] {
					t.Fatalf("spread: host %d has %d < %d of later host %d", i, u[i], u[j], j)
				}
				if u[j] < c[j] && u[i] > u[j]+1 {
					t.Fatalf("spread: host %d has %d, more than one above host %d's %d", i, u[i], j, u[j])
				}
			}
		}
	}
}

func TestRankTable(t *testing.T) {
	p, err := Place(Concentrate, hosts("A:3", "B:3", "C:3"), 4, 2)
	if err != nil {
		t.Fatal(err)
	}
	tab := p.RankTable()
	want := [][]peer.ID{{"A", "B"}, {"A", "B"}, {"A", "C"}, {"B", "C"}}
	if fmt.Sprint(tab.Peers()) != fmt.Sprint(want) {
		t.Fatalf("rank table %v, want %v", tab.Peers(), want)
	}
	if err := tab.Check(4, 2); err != nil {
		t.Fatal(err)
	}
}

func TestReplanUsesSparesFirst(t *testing.T) {
	rl := hosts("A:4", "B:4", "C:4", "D:4")
	p, err := Place(Concentrate, rl, 8, 1)
	if err != nil {
		t.Fatal(err)
	}
	// B fails to start: the closest spare, C, takes its place; A keeps its share.
	q, err := Replan(p, map[peer.ID]bool{"B": true})
	if err != nil {
		t.Fatal(err)
	}
	got, cancel := layout(q)
	if got != "A:0.0,1.0,2.0,3.0 C:4.0,5.0,6.0,7.0" || cancel != "D" {
		t.Fatalf("replan = %q cancel %q", got, cancel)
	}
	// Spread with replicas: the spare D replaces the failed host.
	p, err = Place(Spread, hosts("A:2", "B:2", "C:2", "D:2"), 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	q, err = Replan(p, map[peer.ID]bool{"A": true})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := layout(q); got != "B:0.0 C:0.1 D:0.2" {
		t.Fatalf("replan spread = %q", got)
	}
	// Too many failures: the job must be matched again.
	_, err = Replan(q, map[peer.ID]bool{"B": true, "C": true})
	if !errors.Is(err, ErrInfeasible) {
		t.Fatalf("replan with no spares: %v, want ErrInfeasible", err)
	}
}

func TestPlanCheckRejects(t *testing.T) {
	good, err := Place(Spread, hosts("A:2", "B:2"), 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	mut := func(f func(p *Plan)) Plan {
		p := good
		p.Hosts = append([]HostPlan(nil), good.Hosts...)
		for i := range p.Hosts {
			p.Hosts[i].Procs = append([]proto.Proc(nil), good.Hosts[i].Procs...)
		}
		f(&p)
		return p
	}
	bad := map[string]Plan{
		"duplicate host":    mut(func(p *Plan) { p.Hosts[1].Offer.Peer = "A" }),
		"two copies":        mut(func(p *Plan) { p.Hosts[0].Procs[1] = proto.Proc{Rank: 0, Replica: 1} }),
		"over capacity":     mut(func(p *Plan) { p.Hosts[0].Offer.Slots = 1 }),
		"missing process":   mut(func(p *Plan) { p.Hosts[1].Procs = p.Hosts[1].Procs[:1] }),
		"rank out of range": mut(func(p *Plan) { p.Hosts[0].Procs[0].Rank = 5 }),
		"bad strategy":      mut(func(p *Plan) { p.Strategy = "x" }),
	}
	for name, p := range bad {
		if err := p.Check(); err == nil {
			t.Errorf("%s: Check accepted the plan", name)
		}
	}
}

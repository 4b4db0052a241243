package overlay

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

func TestLookupStateHungry(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    LookupState
		want bool
	}{
		{"just started, knows nobody", LookupState{Want: 8, Estimate: 1}, true},
		{"three agents, each knows the two others", LookupState{Known: 2, Live: 2, Want: 8, Estimate: 3}, false},
		{"three agents, the two others dead: cut off", LookupState{Known: 2, Live: 0, Want: 8, Estimate: 3}, true},
		{"knows one it cannot reach (behind NATs)", LookupState{Known: 2, Live: 1, Want: 8, Estimate: 3}, true},
		{"large network, enough live peers to pick from", LookupState{Known: 256, Live: 250, Want: 8, Estimate: 10000}, false},
		{"large network, fewer live peers than neighbours wanted", LookupState{Known: 9, Live: 5, Want: 8, Estimate: 10000}, true},
		{"large network, exactly the neighbours wanted", LookupState{Known: 8, Live: 8, Want: 8, Estimate: 10000}, false},
		{"estimate below the peers known", LookupState{Known: 5, Live: 4, Want: 8, Estimate: 1}, true},
	} {
		if got := tc.s.Hungry(); got != tc.want {
			t.Errorf("%s: Hungry() = %v, want %v (%+v)", tc.name, got, tc.want, tc.s)
		}
	}
}

// TestObserveThenLookup: what the overlay shows decides the next lookup,
// and an agent cut off after it had its peers looks up within Backoff,
// whatever backoff it had reached while it was hungry before.
func TestObserveThenLookup(t *testing.T) {
	c := DefaultRendezvousConfig("lab", nil)
	t0 := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	alone := LookupState{Last: t0, Attempts: 5} // looked in vain five times
	for _, step := range []struct {
		name                  string
		known, live, estimate int
		wantAttempts          int
		wantAfter             time.Duration
	}{
		{"still alone: the long backoff", 0, 0, 1, 5, 320 * time.Second},
		{"two others joined it: fed", 2, 2, 3, 0, time.Hour},
		{"both killed: cut off, within Backoff", 2, 0, 3, 0, 10 * time.Second},
	} {
		alone = alone.Observe(step.known, step.live, 8, step.estimate)
		next := c.NextLookup(alone, 0.5)
		if alone.Attempts != step.wantAttempts || next.Sub(t0) != step.wantAfter {
			t.Errorf("%s: attempts %d, next lookup %v after; want %d, %v",
				step.name, alone.Attempts, next.Sub(t0), step.wantAttempts, step.wantAfter)
		}
	}
}

func TestNextLookup(t *testing.T) {
	c := DefaultRendezvousConfig("lab", nil)
	t0 := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	fed := LookupState{Known: 20, Live: 20, Want: 8, Estimate: 21, Last: t0}
	hungry := LookupState{Known: 1, Live: 1, Want: 8, Estimate: 3, Last: t0}
	with := func(s LookupState, f func(*LookupState)) LookupState { f(&s); return s }
	for _, tc := range []struct {
		name string
		s    LookupState
		u    float64
		want time.Duration // after t0; -1: at once
	}{
		{"first lookup at once", LookupState{Want: 8, Estimate: 1}, 0.5, -1},
		{"fed: the heal period", fed, 0.5, time.Hour},
		{"fed: spread down by a quarter", fed, 0, 45 * time.Minute},
		{"fed: spread up by a quarter", fed, 1, 75 * time.Minute},
		{"fed, 100,000 agents: every 200,000 s", with(fed, func(s *LookupState) { s.Estimate = 100000 }), 0.5, 200000 * time.Second},
		{"fed, 100,000 agents, providing: every Provide",
			with(fed, func(s *LookupState) { s.Estimate, s.Providing = 100000, true }), 0.5, 6 * time.Hour},
		{"fed, providing in a small network: the heal period", with(fed, func(s *LookupState) { s.Providing = true }), 0.5, time.Hour},
		{"hungry: Backoff", hungry, 0.5, 10 * time.Second},
		{"hungry, 3 lookups that found nobody new", with(hungry, func(s *LookupState) { s.Attempts = 3 }), 0.5, 80 * time.Second},
		{"hungry for long: no more often than healing", with(hungry, func(s *LookupState) { s.Attempts = 40 }), 0.5, time.Hour},
		{"hungry in a large network: up to its heal period",
			with(hungry, func(s *LookupState) { s.Attempts, s.Estimate = 40, 10000 }), 0.5, 20000 * time.Second},
		{"one failure: Backoff", with(fed, func(s *LookupState) { s.Failures = 1 }), 0.5, 10 * time.Second},
		{"four failures: doubled thrice", with(fed, func(s *LookupState) { s.Failures = 4 }), 0.5, 80 * time.Second},
		{"many failures: MaxBackoff", with(hungry, func(s *LookupState) { s.Failures = 1000 }), 0.5, 5 * time.Minute},
	} {
		got := c.NextLookup(tc.s, tc.u)
		want := t0.Add(tc.want)
		if tc.want < 0 {
			want = time.Time{}
		}
		if !got.Equal(want) {
			t.Errorf("%s: NextLookup = %v after, want %v", tc.name, got.Sub(t0), tc.want)
		}
	}
}

func TestHealPeriod(t *testing.T) {
	c := DefaultRendezvousConfig("lab", nil)
	for _, tc := range []struct {
		estimate int
		want     time.Duration
	}{
		{0, time.Hour}, {1, time.Hour}, {100, time.Hour}, {1800, time.Hour},
		{3600, 2 * time.Hour}, {100000, 200000 * time.Second},
	} {
		if got := c.HealPeriod(tc.estimate); got != tc.want {
			t.Errorf("HealPeriod(%d) = %v, want %v", tc.estimate, got, tc.want)
		}
	}
}

func TestShouldProvide(t *testing.T) {
	c := DefaultRendezvousConfig("lab", nil) // Providers 32
	big := ProvideState{Dialable: true, Estimate: 10000, Settled: true, Looked: true, Found: 32, FoundBase: 32}
	with := func(f func(*ProvideState)) ProvideState { s := big; f(&s); return s }
	base := c.BaseShare(10000) // 0.0032
	for _, tc := range []struct {
		name string
		s    ProvideState
		want bool
	}{
		{"not dialable", with(func(s *ProvideState) { s.Dialable, s.Draw = false, 0 }), false},
		{"no lookup yet", with(func(s *ProvideState) { s.Looked, s.Found, s.Draw = false, 0, 0 }), false},
		{"first agent: found nobody", with(func(s *ProvideState) { s.Found, s.Settled, s.Draw = 0, false, 0.99 }), true},
		{"young network: found 15 < 16", with(func(s *ProvideState) { s.Found, s.Draw = 15, 0.99 }), true},
		{"found 16, estimate not settled", with(func(s *ProvideState) { s.Found, s.Settled, s.Draw = 16, false, 0 }), false},
		{"a base provider", with(func(s *ProvideState) { s.Draw = base * 0.99 }), true},
		{"not a base provider, enough of them", with(func(s *ProvideState) { s.Draw = base * 1.01 }), false},
		{"few base providers reached: the share rises", with(func(s *ProvideState) { s.FoundBase, s.Draw = 8, base*3.9 }), true},
		{"... by Providers/FoundBase only", with(func(s *ProvideState) { s.FoundBase, s.Draw = 8, base*4.1 }), false},
		{"none reached: at most maxBoost times", with(func(s *ProvideState) { s.FoundBase, s.Draw = 0, base*7.9 }), true},
		{"... and no more", with(func(s *ProvideState) { s.FoundBase, s.Draw = 0, base*8.1 }), false},
		{"small network: everyone dialable", with(func(s *ProvideState) { s.Estimate, s.Draw = 20, 0.99 }), true},
	} {
		if got := c.ShouldProvide(tc.s); got != tc.want {
			t.Errorf("%s: ShouldProvide(%+v) = %v, want %v", tc.name, tc.s, got, tc.want)
		}
	}
}

// TestProvidersNearTarget: in networks of every size and share of dialable
// agents, the agents that ShouldProvide, once settled and having counted
// the base providers they reach among the records of the key, are near
// Providers, not a share of the network.
func TestProvidersNearTarget(t *testing.T) {
	c := DefaultRendezvousConfig("lab", nil)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{100, 1000, 10000} {
		for _, dialable := range []float64{1, 0.5, 0.2} {
			var draws []float64
			for i := range n {
				if rng.Float64() < dialable {
					draws = append(draws, ProviderDraw("lab", peer.ID(fmt.Sprintf("agent-%d-%d", n, i))))
				}
			}
			foundBase := 0
			for _, d := range draws {
				if c.IsBase(d, n) {
					foundBase++
				}
			}
			providers := 0
			for _, d := range draws {
				s := ProvideState{Dialable: true, Draw: d, Estimate: n, Settled: true, Looked: true, Found: c.Providers, FoundBase: foundBase}
				if c.ShouldProvide(s) {
					providers++
				}
			}
			if providers < 16 || providers > 64 {
				t.Errorf("%d agents, %.0f%% dialable: %d providers (%d base), want near %d",
					n, 100*dialable, providers, foundBase, c.Providers)
			}
		}
	}
}

func TestProviderDraw(t *testing.T) {
	a := ProviderDraw("lab", "agent")
	if a != ProviderDraw("lab", "agent") || a == ProviderDraw("lab2", "agent") || a == ProviderDraw("lab", "agent2") {
		t.Fatal("want one fixed draw per network and agent")
	}
	below, sum := 0, 0.0
	for i := range 10000 {
		d := ProviderDraw("lab", peer.ID(fmt.Sprint(i)))
		if d < 0 || d >= 1 {
			t.Fatalf("draw %v not in [0, 1)", d)
		}
		sum += d
		if d < 0.1 {
			below++
		}
	}
	if mean := sum / 10000; mean < 0.48 || mean > 0.52 || below < 900 || below > 1100 {
		t.Errorf("draws not uniform: mean %.3f, %d of 10000 below 0.1", mean, below)
	}
}

func TestDoubled(t *testing.T) {
	for _, tc := range []struct {
		base        time.Duration
		n           int
		limit, want time.Duration
	}{
		{time.Second, 0, time.Minute, time.Second},
		{time.Second, 3, time.Minute, 8 * time.Second},
		{time.Second, 10, time.Minute, time.Minute},
		{time.Second, 1 << 30, time.Hour, time.Hour}, // no overflow
		{time.Minute, 0, time.Second, time.Second},
	} {
		if got := doubled(tc.base, tc.n, tc.limit); got != tc.want {
			t.Errorf("doubled(%v, %d, %v) = %v, want %v", tc.base, tc.n, tc.limit, got, tc.want)
		}
	}
}

func TestEstimate(t *testing.T) {
	for _, tc := range []struct {
		dht         int64
		ok          bool
		known, want int
		settled     bool
	}{
		{0, false, 0, 1, false},
		{0, false, 7, 8, false},
		{5000, true, 255, 5000, true},
		{40, true, 100, 101, true},     // the DHT underestimates: the peers known bound it
		{-3, true, 10, 11, false},      // not a size
		{1 << 40, true, 10, 11, false}, // not a size either
		{21, true, 20, 21, true},
	} {
		n, settled := estimate(tc.dht, tc.ok, tc.known)
		if n != tc.want || settled != tc.settled {
			t.Errorf("estimate(%d, %v, %d) = %d, %v; want %d, %v", tc.dht, tc.ok, tc.known, n, settled, tc.want, tc.settled)
		}
	}
}

package overlay

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

const ms = time.Millisecond

// grid5000 is the P2P-MPI experiment seen from nancy (section 5 of the
// paper): hosts of the local site, and frontends' RTTs to the other sites.
func grid5000() []Candidate {
	return []Candidate{
		{ID: "sophia-1", RTT: 17100 * time.Microsecond},
		{ID: "nancy-2", RTT: 200 * time.Microsecond},
		{ID: "lyon-1", RTT: 10500 * time.Microsecond},
		{ID: "rennes-1", RTT: 11600 * time.Microsecond},
		{ID: "nancy-1", RTT: 100 * time.Microsecond},
		{ID: "bordeaux-1", RTT: 12600 * time.Microsecond},
		{ID: "lyon-2", RTT: 10500 * time.Microsecond},
		{ID: "grenoble-1", RTT: 13200 * time.Microsecond},
		{ID: "nancy-3", RTT: 300 * time.Microsecond},
	}
}

func TestSelectNeighboursNearest(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cands  []Candidate
		k      int
		random int
		want   []peer.ID // exact, when random draws nothing
	}{
		{"nancy keeps its site", grid5000(), 3, 0, []peer.ID{"nancy-1", "nancy-2", "nancy-3"}},
		{"then the closest site, ties by id", grid5000(), 5, 0,
			[]peer.ID{"nancy-1", "nancy-2", "nancy-3", "lyon-1", "lyon-2"}},
		{"fewer candidates than k", grid5000()[:2], 6, 2, []peer.ID{"nancy-2", "sophia-1"}},
		{"no candidates", nil, 6, 2, []peer.ID{}},
		{"k zero, no random", grid5000(), 0, 0, []peer.ID{}},
		{"negative k and random", grid5000(), -1, -1, []peer.ID{}},
		{"duplicates count once, lowest rtt", []Candidate{
			{ID: "a", RTT: 9 * ms}, {ID: "b", RTT: 5 * ms}, {ID: "a", RTT: 1 * ms},
		}, 1, 0, []peer.ID{"a"}},
		{"current long-range links stay", []Candidate{
			{ID: "n1", RTT: 1 * ms}, {ID: "n2", RTT: 2 * ms},
			{ID: "far1", RTT: 40 * ms, LongRange: true}, {ID: "mid", RTT: 20 * ms},
			{ID: "far2", RTT: 30 * ms, LongRange: true}, {ID: "mid2", RTT: 25 * ms},
		}, 2, 2, []peer.ID{"n1", "n2", "far1", "far2"}},
		{"a long-range peer that became near is near", []Candidate{
			{ID: "n1", RTT: 1 * ms, LongRange: true}, {ID: "n2", RTT: 2 * ms}, {ID: "x", RTT: 9 * ms},
		}, 2, 1, []peer.ID{"n1", "n2", "x"}},
		{"too many current long-range links: keep random of them, by id", []Candidate{
			{ID: "n", RTT: 1 * ms}, {ID: "c", RTT: 7 * ms, LongRange: true},
			{ID: "b", RTT: 8 * ms, LongRange: true}, {ID: "a", RTT: 9 * ms, LongRange: true},
		}, 1, 2, []peer.ID{"n", "a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := SelectNeighbours(tc.cands, tc.k, tc.random, rand.New(rand.NewPCG(1, 2)))
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSelectNeighboursRandomLinks(t *testing.T) {
	cands := grid5000()
	got := SelectNeighbours(cands, 3, 2, rand.New(rand.NewPCG(7, 7)))
	if !slices.Equal(got[:3], []peer.ID{"nancy-1", "nancy-2", "nancy-3"}) {
		t.Fatalf("nearest %v, want the nancy hosts", got[:3])
	}
	if len(got) != 5 || got[3] == got[4] || slices.Contains(got[:3], got[3]) || slices.Contains(got[:3], got[4]) {
		t.Fatalf("long-range links %v: want 2 distinct peers outside the nearest", got[3:])
	}
	again := SelectNeighbours(cands, 3, 2, rand.New(rand.NewPCG(7, 7)))
	if !slices.Equal(got, again) {
		t.Fatalf("same seed gave %v then %v", got, again)
	}
	// Over many seeds every far peer gets drawn: the draw is not biased to
	// the head of the list.
	drawn := map[peer.ID]bool{}
	for seed := range uint64(200) {
		for _, p := range SelectNeighbours(cands, 3, 2, rand.New(rand.NewPCG(seed, 1)))[3:] {
			drawn[p] = true
		}
	}
	if len(drawn) != 6 {
		t.Fatalf("drawn %v, want all 6 far peers over 200 seeds", drawn)
	}
}

// TestSelectNeighboursProperties checks the invariants on random inputs:
// no duplicates, only candidates, the right size, and the nearest first.
func TestSelectNeighboursProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 42))
	for trial := range 500 {
		n := rng.IntN(30)
		cands := make([]Candidate, n)
		rtt := map[peer.ID]time.Duration{}
		for i := range cands {
			id := peer.ID(fmt.Sprintf("p%02d", rng.IntN(40))) // some duplicates
			d := time.Duration(rng.IntN(50)) * ms
			cands[i] = Candidate{ID: id, RTT: d, LongRange: rng.IntN(4) == 0}
			if old, ok := rtt[id]; !ok || d < old {
				rtt[id] = d
			}
		}
		k, random := rng.IntN(8), rng.IntN(4)
		got := SelectNeighbours(cands, k, random, rng)
		if want := min(len(rtt), k+random); len(got) != want {
			t.Fatalf("trial %d: %d neighbours, want %d", trial, len(got), want)
		}
		seen := map[peer.ID]bool{}
		for _, p := range got {
			if _, ok := rtt[p]; !ok || seen[p] {
				t.Fatalf("trial %d: %v has a duplicate or a stranger", trial, got)
			}
			seen[p] = true
		}
		near := got[:min(k, len(got))]
		for i := 1; i < len(near); i++ {
			if rtt[near[i]] < rtt[near[i-1]] {
				t.Fatalf("trial %d: nearest not in ascending RTT: %v", trial, near)
			}
		}
		for p, d := range rtt {
			if !seen[p] && len(near) > 0 && d < rtt[near[len(near)-1]] {
				t.Fatalf("trial %d: %s (%v) left out but nearer than the k-th", trial, p, d)
			}
		}
	}
}

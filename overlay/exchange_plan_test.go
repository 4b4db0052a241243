package overlay

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestExchangeTarget(t *testing.T) {
	for _, c := range []struct {
		name          string
		outbound      []string
		live          []string
		turn          int
		want          string
		neighbour, ok bool
		nextTurn      int
	}{
		{name: "next neighbour in turn", outbound: []string{"a", "b", "c"}, turn: 0, want: "b", neighbour: true, ok: true, nextTurn: 1},
		{name: "wraps around", outbound: []string{"a", "b", "c"}, turn: 2, want: "a", neighbour: true, ok: true, nextTurn: 3},
		{name: "neighbours before live peers", outbound: []string{"a"}, live: []string{"x"}, turn: 5, want: "a", neighbour: true, ok: true, nextTurn: 6},
		{name: "a live peer without neighbours", live: []string{"x"}, turn: 4, want: "x", ok: true, nextTurn: 4},
		{name: "nobody", turn: 4, nextTurn: 4},
	} {
		turn := c.turn
		got, nb, ok := ExchangeTarget(c.outbound, c.live, &turn, rand.New(rand.NewPCG(1, 1)))
		if got != c.want || nb != c.neighbour || ok != c.ok || turn != c.nextTurn {
			t.Errorf("%s: got %q neighbour %v ok %v turn %d, want %q %v %v %d",
				c.name, got, nb, ok, turn, c.want, c.neighbour, c.ok, c.nextTurn)
		}
	}
}

// TestExchangeTargetAsksEveryNeighbour: over as many rounds as it has
// neighbours, an agent renews its lease with each one once.
func TestExchangeTargetAsksEveryNeighbour(t *testing.T) {
	out := []int{10, 11, 12, 13, 14, 15, 16, 17}
	turn, asked := 3, map[int]int{}
	for range len(out) {
		p, _, _ := ExchangeTarget(out, nil, &turn, nil)
		asked[p]++
	}
	for _, p := range out {
		if asked[p] != 1 {
			t.Fatalf("asked %v over %d rounds, want each neighbour once", asked, len(out))
		}
	}
}

// TestExchangeTargetDrawsLivePeers: without neighbours every live peer
// may be asked.
func TestExchangeTargetDrawsLivePeers(t *testing.T) {
	live := []int{1, 2, 3, 4}
	rng, turn, asked := rand.New(rand.NewPCG(7, 7)), 0, map[int]bool{}
	for range 200 {
		p, nb, ok := ExchangeTarget(nil, live, &turn, rng)
		if nb || !ok {
			t.Fatalf("live peer %d: neighbour %v ok %v", p, nb, ok)
		}
		asked[p] = true
	}
	if len(asked) != len(live) {
		t.Fatalf("asked %v of %v", asked, live)
	}
}

func seq(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%02d", prefix, i)
	}
	return out
}

func TestExchangeAnswer(t *testing.T) {
	for _, c := range []struct {
		name      string
		outbound  []string
		others    []string
		to        string
		wantFirst []string // the answer starts with these, in order
		wantLen   []int    // its length is one of these
	}{
		{name: "neighbours first, then extras", outbound: []string{"n1", "n2"}, others: seq("o", 20), to: "r",
			wantFirst: []string{"n1", "n2"}, wantLen: []int{2 + extraRecords}},
		{name: "all the others when few", outbound: []string{"n1"}, others: []string{"o1", "o2"}, to: "r",
			wantFirst: []string{"n1"}, wantLen: []int{3}},
		{name: "the requester is no neighbour of its own", outbound: []string{"n1", "r", "n2"}, to: "r",
			wantFirst: []string{"n1", "n2"}, wantLen: []int{2}},
		{name: "the requester drawn leaves one fewer", outbound: nil, others: []string{"r", "o1"}, to: "r",
			wantFirst: []string{"o1"}, wantLen: []int{1}},
		{name: "at most maxRecords", outbound: seq("n", maxRecords+5), others: seq("o", 20), to: "r",
			wantFirst: seq("n", maxRecords), wantLen: []int{maxRecords}},
		{name: "nothing to tell", to: "r", wantLen: []int{0}},
	} {
		got := ExchangeAnswer(c.outbound, slices.Clone(c.others), c.to, rand.New(rand.NewPCG(3, 3)))
		if !slices.Contains(c.wantLen, len(got)) || len(got) < len(c.wantFirst) || !slices.Equal(got[:len(c.wantFirst)], c.wantFirst) {
			t.Errorf("%s: %v, want it to start with %v and hold %v peers", c.name, got, c.wantFirst, c.wantLen)
		}
		if slices.Contains(got, c.to) {
			t.Errorf("%s: %v tells the requester of itself", c.name, got)
		}
		seen := map[string]bool{}
		for _, p := range got[len(c.wantFirst):] {
			if !slices.Contains(c.others, p) || seen[p] {
				t.Errorf("%s: extra %q is no other peer, or twice", c.name, p)
			}
			seen[p] = true
		}
	}
}

// TestExchangeAnswerDrawsEveryOther: the extras are drawn from all the
// other peers, not always the same ones.
func TestExchangeAnswerDrawsEveryOther(t *testing.T) {
	others := seq("o", 3*extraRecords)
	rng, told := rand.New(rand.NewPCG(9, 9)), map[string]bool{}
	for range 100 {
		for _, p := range ExchangeAnswer(nil, others, "r", rng) {
			told[p] = true
		}
	}
	if len(told) != len(others) {
		t.Fatalf("told of %d of %d others in 100 answers", len(told), len(others))
	}
}

func TestEvict(t *testing.T) {
	for _, c := range []struct {
		name  string
		peers []PeerInfo
		want  int
	}{
		{name: "farthest measured", want: 1, peers: []PeerInfo{
			{ID: "a", RTT: 5 * ms, Measured: true}, {ID: "b", RTT: 9 * ms, Measured: true}, {ID: "c", RTT: 2 * ms, Measured: true}}},
		{name: "a dead peer first", want: 2, peers: []PeerInfo{
			{ID: "a", RTT: 5 * ms, Measured: true}, {ID: "b", RTT: 9 * ms, Measured: true}, {ID: "c", Dead: true}}},
		{name: "neighbours stay", want: 0, peers: []PeerInfo{
			{ID: "a", RTT: 5 * ms, Measured: true}, {ID: "b", RTT: 9 * ms, Measured: true, Neighbour: true}}},
		{name: "unmeasured peers stay", want: 1, peers: []PeerInfo{
			{ID: "a"}, {ID: "b", RTT: 1 * ms, Measured: true}}},
		{name: "ties to the first", want: 1, peers: []PeerInfo{
			{ID: "a", RTT: 1 * ms, Measured: true}, {ID: "b", RTT: 7 * ms, Measured: true}, {ID: "c", RTT: 7 * ms, Measured: true}}},
		{name: "none may go", want: -1, peers: []PeerInfo{
			{ID: "a"}, {ID: "b", RTT: 9 * ms, Measured: true, Neighbour: true}}},
		{name: "empty", want: -1},
	} {
		if got := Evict(c.peers); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

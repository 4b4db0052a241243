package job

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// hosts builds an rlist: one offer per "name:slots", RTT growing with the
// position so the list is already latency-sorted.
func hosts(spec ...string) []Offer {
	out := make([]Offer, len(spec))
	for i, s := range spec {
		var name string
		var slots int
		if _, err := fmt.Sscanf(strings.Replace(s, ":", " ", 1), "%s %d", &name, &slots); err != nil {
			panic(err)
		}
		out[i] = Offer{Peer: peer.ID(name), Lease: "lease-" + name, Slots: slots, RTT: time.Duration(i+1) * time.Millisecond}
	}
	return out
}

// layout renders a plan as "A:0.0,1.0 B:0.1" (rank.replica per host) and
// the cancelled peers, so table rows read like the paper's figures.
func layout(p Plan) (string, string) {
	var hs []string
	for _, h := range p.Hosts {
		var ps []string
		for _, pr := range h.Procs {
			ps = append(ps, fmt.Sprintf("%d.%d", pr.Rank, pr.Replica))
		}
		hs = append(hs, string(h.Offer.Peer)+":"+strings.Join(ps, ","))
	}
	var cs []string
	for _, o := range p.Spares {
		cs = append(cs, string(o.Peer))
	}
	return strings.Join(hs, " "), strings.Join(cs, " ")
}

func TestPlacePaperExamples(t *testing.T) {
	tests := []struct {
		name     string
		s        Strategy
		rlist    []Offer
		n, r     int
		want     string // host:rank.replica,...
		cancel   string
		wantFail string // substring of the error, if infeasible
	}{
		// Section 4.3: -n 3 -r 2 on two hosts: P0..P2 on one, the copies on the other.
		{name: "n3r2 two hosts concentrate", s: Concentrate, rlist: hosts("A:4", "B:4"), n: 3, r: 2,
			want: "A:0.0,1.0,2.0 B:0.1,1.1,2.1"},
		{name: "n3r2 two hosts spread", s: Spread, rlist: hosts("A:4", "B:4"), n: 3, r: 2,
			want: "A:0.0,1.0,2.0 B:0.1,1.1,2.1"},
		// Concentrate fills the closest hosts to capacity.
		{name: "concentrate fills closest", s: Concentrate, rlist: hosts("A:4", "B:4", "C:4", "D:4"), n: 8, r: 1,
			want: "A:0.0,1.0,2.0,3.0 B:4.0,5.0,6.0,7.0", cancel: "C D"},
		{name: "concentrate last host partly", s: Concentrate, rlist: hosts("A:4", "B:4", "C:4"), n: 6, r: 1,
			want: "A:0.0,1.0,2.0,3.0 B:4.0,5.0", cancel: "C"},
		// Spread: one process per host, closest first; the rest is overbooking.
		{name: "spread one per host", s: Spread, rlist: hosts("A:4", "B:4", "C:4", "D:4", "E:4"), n: 3, r: 1,
			want: "A:0.0 B:1.0 C:2.0", cancel: "D E"},
		// Spread wraps round-robin when the hosts run out.
		{name: "spread wraps", s: Spread, rlist: hosts("A:4", "B:4"), n: 5, r: 1,
			want: "A:0.0,1.0,2.0 B:3.0,4.0"},
		{name: "spread skips full hosts", s: Spread, rlist: hosts("A:1", "B:4", "C:4"), n: 6, r: 1,
			want: "A:0.0 B:1.0,2.0,3.0 C:4.0,5.0"},
		{name: "spread replicas", s: Spread, rlist: hosts("A:2", "B:2", "C:2", "D:2"), n: 2, r: 2,
			want: "A:0.0 B:1.0 C:0.1 D:1.1"},
		// Ranks wrap inside a host without two copies of one rank there.
		{name: "concentrate n4r2 wraps", s: Concentrate, rlist: hosts("A:3", "B:3", "C:3"), n: 4, r: 2,
			want: "A:0.0,1.0,2.0 B:3.0,0.1,1.1 C:2.1,3.1"},
		// c_i = min(P_i, n): a host offering more than n still takes n.
		{name: "capacity capped at n", s: Concentrate, rlist: hosts("A:8", "B:8"), n: 2, r: 2,
			want: "A:0.0,1.0 B:0.1,1.1"},
		{name: "zero slots and repeats cancelled", s: Concentrate, rlist: hosts("A:0", "B:2", "B:2", "C:2"), n: 4, r: 1,
			want: "B:0.0,1.0 C:2.0,3.0", cancel: "A B"},
		// Infeasible requests are refused with the reason.
		{name: "too few hosts for replicas", s: Spread, rlist: hosts("A:8"), n: 2, r: 2,
			wantFail: "1 hosts offered, need at least r=2"},
		{name: "too few slots", s: Concentrate, rlist: hosts("A:2", "B:2"), n: 10, r: 1,
			wantFail: "got 4 of 10 process slots"},
		{name: "nothing offered", s: Spread, rlist: nil, n: 1, r: 1,
			wantFail: "0 hosts offered"},
		{name: "bad strategy", s: "pack", rlist: hosts("A:2"), n: 1, r: 1,
			wantFail: `strategy: must be "spread" or "concentrate", got "pack"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]Offer(nil), tt.rlist...)
			p, err := Place(tt.s, in, tt.n, tt.r)
			if tt.wantFail != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantFail) {
					t.Fatalf("Place error = %v, want it to say %q", err, tt.wantFail)
				}
				return
			}
			if err != nil {
				t.Fatalf("Place: %v", err)
			}
			got, cancel := layout(p)
			if got != tt.want || cancel != tt.cancel {
				t.Errorf("Place = %q cancel %q, want %q cancel %q", got, cancel, tt.want, tt.cancel)
			}
			if err := p.Check(); err != nil {
				t.Errorf("plan invalid: %v", err)
			}
			for i := range in {
				if in[i].Peer != tt.rlist[i].Peer {
					t.Fatalf("Place modified rlist")
				}
			}
		})
	}
}

func TestInfeasibleIsErrInfeasible(t *testing.T) {
	_, err := Place(Spread, hosts("A:1"), 3, 1)
	if !errors.Is(err, ErrInfeasible) {
		t.Fatalf("err = %v, want ErrInfeasible", err)
	}
}

func TestFeasibleConditions(t *testing.T) {
	tests := []struct {
		slist []Offer
		n, r  int
		ok    bool
	}{
		{hosts("A:3", "B:3"), 3, 2, true},
		{hosts("A:6"), 3, 2, false},         // |slist| < r
		{hosts("A:1", "B:1"), 3, 1, false},  // sum c_i = 2 < 3
		{hosts("A:9", "B:1"), 3, 2, false},  // c_A = 3, sum 4 < 6
		{hosts("A:9", "B:3"), 3, 2, true},   // c_A = 3, sum 6
		{hosts("A:-2", "B:3"), 3, 1, true},  // negative P counts as 0
		{hosts("A:-2", "B:2"), 3, 1, false}, // negative P counts as 0
		{hosts("A:1"), 0, 1, false},
	}
	for i, tt := range tests {
		if err := Feasible(tt.slist, tt.n, tt.r); (err == nil) != tt.ok {
			t.Errorf("%d: Feasible = %v, want ok=%v", i, err, tt.ok)
		}
	}
}

func TestSelectHosts(t *testing.T) {
	rl := hosts("A:1", "B:1", "C:1", "D:1", "E:1")
	s, sp := SelectHosts(rl, 2, 2)
	if len(s) != 4 || len(sp) != 1 || sp[0].Peer != "E" {
		t.Fatalf("slist %d spares %v", len(s), sp)
	}
	s, sp = SelectHosts(rl, 10, 1)
	if len(s) != 5 || len(sp) != 0 {
		t.Fatalf("slist %d spares %d, want 5 and 0", len(s), len(sp))
	}
	s, _ = SelectHosts(rl, 0, 1)
	if len(s) != 0 {
		t.Fatalf("n=0 selected %d hosts", len(s))
	}
}

func TestSortRListTiesByPeer(t *testing.T) {
	rl := []Offer{
		{Peer: "C", RTT: 2 * time.Millisecond},
		{Peer: "B", RTT: time.Millisecond},
		{Peer: "A", RTT: 2 * time.Millisecond},
	}
	SortRList(rl)
	if got := string(rl[0].Peer + rl[1].Peer + rl[2].Peer); got != "BAC" {
		t.Fatalf("order %s, want BAC", got)
	}
}

func TestOrderRListPreferences(t *testing.T) {
	rl := []Offer{
		{Peer: "A", RTT: 1, Slots: 1, Memory: 8},
		{Peer: "B", RTT: 2, Slots: 4, Memory: 2},
		{Peer: "C", RTT: 3, Slots: 4, Memory: 8},
	}
	order := func() string { return string(rl[0].Peer + rl[1].Peer + rl[2].Peer) }
	OrderRList(rl, PreferCores)
	if order() != "BCA" {
		t.Errorf("cores: %s, want BCA", order())
	}
	OrderRList(rl, PreferMemory)
	if order() != "ACB" {
		t.Errorf("memory: %s, want ACB", order())
	}
	OrderRList(rl, PreferRTT)
	if order() != "ABC" {
		t.Errorf("rtt: %s, want ABC", order())
	}
}

func TestParseStrategyAndPreference(t *testing.T) {
	if s, err := ParseStrategy(" concentrate "); err != nil || s != Concentrate {
		t.Errorf("ParseStrategy = %q, %v", s, err)
	}
	if _, err := ParseStrategy("Spread!"); err == nil {
		t.Error("ParseStrategy accepted junk")
	}
	if p, err := ParsePreference(""); err != nil || p != PreferRTT {
		t.Errorf("ParsePreference(\"\") = %q, %v", p, err)
	}
	if _, err := ParsePreference("speed"); err == nil {
		t.Error("ParsePreference accepted junk")
	}
}

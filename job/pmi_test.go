package job

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/multiformats/go-multiaddr"

	"github.com/zorilla-p2p/zorilla/internal/peertest"
)

func TestCheckPMI(t *testing.T) {
	cases := []struct {
		pmi      bool
		replicas int
		every    time.Duration
		want     error
	}{
		{false, 2, 0, nil},
		{false, 1, time.Minute, nil},
		{true, 1, 0, nil},
		{true, 2, 0, ErrPMIReplicas},
		{true, 3, 0, ErrPMIReplicas},
		{true, 1, time.Minute, ErrPMICheckpoint},
	}
	for _, c := range cases {
		d := NewDescription("./a.out", nil, 4)
		d.PMI, d.Replicas, d.CheckpointEvery = c.pmi, c.replicas, c.every
		if err := d.Validate(); !errors.Is(err, c.want) {
			t.Errorf("pmi=%v r=%d every=%v: Validate() = %v, want %v", c.pmi, c.replicas, c.every, err, c.want)
		}
	}
}

func TestPreferDirect(t *testing.T) {
	ma := func(s string) multiaddr.Multiaddr { return multiaddr.StringCast(s) }
	relay := ma("/ip4/1.2.3.4/tcp/4001/p2p/12D3KooWRBy97UB99e3J6hiPesre1MZeuNQvfan4gBziswrRJsNK/p2p-circuit")
	direct := ma("/ip4/10.0.0.2/tcp/4001")
	rlist := []Offer{
		{Peer: "a", Addrs: []multiaddr.Multiaddr{relay}},
		{Peer: "b", Addrs: []multiaddr.Multiaddr{direct}},
		{Peer: "c", Addrs: []multiaddr.Multiaddr{relay, direct}},
		{Peer: "d"},
		{Peer: "e", Addrs: []multiaddr.Multiaddr{relay}},
	}
	PreferDirect(rlist)
	var got string
	for _, o := range rlist {
		got += string(o.Peer)
	}
	if got != "bcdae" {
		t.Fatalf("order %s, want bcdae (relay-only hosts last, each group in its order)", got)
	}
}

// TestPlacePMI: an MPICH job's hosts must reach each other directly, so
// directly reachable hosts are placed first, a relay-only host runs a job
// only alone, and a placement that cannot work is refused naming the hosts
// behind relays and why.
func TestPlacePMI(t *testing.T) {
	ma := func(s string) multiaddr.Multiaddr { return multiaddr.StringCast(s) }
	relay := ma("/ip4/1.2.3.4/tcp/4001/p2p/12D3KooWRBy97UB99e3J6hiPesre1MZeuNQvfan4gBziswrRJsNK/p2p-circuit")
	direct := ma("/ip4/10.0.0.2/tcp/4001")
	ids := peertest.Peers(t, 4)
	short := make([]string, len(ids))
	for i, id := range ids {
		short[i] = ShortPeer(id)
	}
	// offer i of host i with slots, reachable through addrs.
	offer := func(i, slots int, addrs ...multiaddr.Multiaddr) Offer {
		return Offer{Peer: ids[i], Lease: fmt.Sprint("lease-", i), Slots: slots, RTT: time.Duration(i+1) * time.Millisecond, Addrs: addrs}
	}
	for _, tc := range []pmiCase{
		{name: "every host direct: as Place", strategy: Spread, n: 3,
			rlist: []Offer{offer(0, 2, direct), offer(1, 2, direct), offer(2, 2, direct)},
			hosts: []int{0, 1, 2}},
		{name: "one relay-only host among direct ones that can hold the job: left out", strategy: Spread, n: 3,
			rlist: []Offer{offer(0, 2, relay), offer(1, 2, direct), offer(2, 2, direct)},
			hosts: []int{1, 2}, cancel: []int{0}},
		{name: "a host with a direct address besides its relay is direct", strategy: Spread, n: 2,
			rlist: []Offer{offer(0, 1, relay, direct), offer(1, 1, direct)},
			hosts: []int{0, 1}},
		{name: "one relay-only host needed beside direct ones: refused", strategy: Spread, n: 4,
			rlist: []Offer{offer(0, 1, direct), offer(1, 1, relay), offer(2, 2, direct)},
			named: []string{short[1]}, unnamed: []string{short[0], short[2]},
			says: []string{"host " + short[1] + " is reachable only through relays", "offered 3 of the 4 slots", "-a concentrate"}},
		{name: "a host the submitter reached only through a relay, listing a private address: behind a NAT", strategy: Spread, n: 2,
			rlist: []Offer{offer(0, 1, direct), func() Offer { o := offer(1, 1, direct, relay); o.Relayed = true; return o }()},
			named: []string{short[1]}, unnamed: []string{short[0]},
			says: []string{"host " + short[1] + " is reachable only through relays", "offered 1 of the 2 slots"}},
		{name: "two hosts behind relays: refused, both named", strategy: Spread, n: 3,
			rlist: []Offer{offer(0, 1, relay), offer(1, 1, relay), offer(2, 1, direct)},
			named: []string{short[0], short[1]}, unnamed: []string{short[2]},
			says: []string{"hosts " + short[0] + ", " + short[1] + " are reachable only through relays", "offered 1 of the 3 slots"}},
		{name: "a relay-only host alone: no connection between hosts needed", strategy: Concentrate, n: 4,
			rlist: []Offer{offer(0, 4, relay)},
			hosts: []int{0}},
		{name: "concentrate on a relay-only host when no direct one can hold the job", strategy: Concentrate, n: 4,
			rlist: []Offer{offer(0, 1, direct), offer(1, 4, relay)},
			hosts: []int{1}, cancel: []int{0}},
		{name: "no addresses known: not judged", strategy: Spread, n: 2,
			rlist: []Offer{offer(0, 1), offer(1, 1)},
			hosts: []int{0, 1}},
		{name: "not enough slots at all: Place's refusal", strategy: Spread, n: 9,
			rlist: []Offer{offer(0, 2, direct), offer(1, 2, relay)},
			says:  []string{"slots"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := PlacePMI(tc.strategy, append([]Offer(nil), tc.rlist...), tc.n)
			if tc.hosts == nil {
				tc.checkRefusal(t, p, err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.checkPlan(t, p, ids)
		})
	}
}

// pmiCase is one placement of TestPlacePMI.
type pmiCase struct {
	name     string
	strategy Strategy
	n        int
	rlist    []Offer
	hosts    []int    // hosts of the plan, in order; nil: refused
	cancel   []int    // offers given back (in any order)
	named    []string // the refusal names these hosts...
	unnamed  []string // ...and not these
	says     []string
}

func (tc pmiCase) checkRefusal(t *testing.T, p Plan, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("placed %v, want a refusal", p.Peers())
	}
	if !errors.Is(err, ErrInfeasible) {
		t.Errorf("%v does not wrap ErrInfeasible", err)
	}
	for _, s := range append(tc.named, tc.says...) {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%v does not say %q", err, s)
		}
	}
	for _, s := range tc.unnamed {
		if strings.Contains(err.Error(), s) {
			t.Errorf("%v names directly reachable host %s", err, s)
		}
	}
}

func (tc pmiCase) checkPlan(t *testing.T, p Plan, ids []peer.ID) {
	t.Helper()
	var want []peer.ID
	for _, h := range tc.hosts {
		want = append(want, ids[h])
	}
	if got := p.Peers(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("hosts %v, want %v", got, want)
	}
	procs := 0
	for _, h := range p.Hosts {
		procs += len(h.Procs)
	}
	if procs != tc.n {
		t.Errorf("%d processes placed, want %d", procs, tc.n)
	}
	back := map[peer.ID]bool{}
	for _, o := range p.Spares {
		back[o.Peer] = true
	}
	for _, c := range tc.cancel {
		if !back[ids[c]] {
			t.Errorf("offer of host %d not given back: Cancel %v", c, p.Spares)
		}
	}
	if len(p.Hosts)+len(p.Spares) != len(tc.rlist) {
		t.Errorf("%d hosts + %d given back, want the %d offers accounted for", len(p.Hosts), len(p.Spares), len(tc.rlist))
	}
}

// TestReplanPMI: a start retried without a failed host does not bring in a
// relay-only spare beside direct hosts.
func TestReplanPMI(t *testing.T) {
	relay := multiaddr.StringCast("/ip4/1.2.3.4/tcp/4001/p2p/12D3KooWRBy97UB99e3J6hiPesre1MZeuNQvfan4gBziswrRJsNK/p2p-circuit")
	direct := multiaddr.StringCast("/ip4/10.0.0.2/tcp/4001")
	ids := peertest.Peers(t, 3)
	prev, err := PlacePMI(Spread, []Offer{
		{Peer: ids[0], Lease: "a", Slots: 1, RTT: 1, Addrs: []multiaddr.Multiaddr{direct}},
		{Peer: ids[1], Lease: "b", Slots: 1, RTT: 2, Addrs: []multiaddr.Multiaddr{direct}},
		{Peer: ids[2], Lease: "c", Slots: 1, RTT: 3, Addrs: []multiaddr.Multiaddr{relay}},
	}, 2)
	if err != nil {
		t.Fatal(err)
	}
	failed := map[peer.ID]bool{ids[1]: true}
	if p, err := Replan(prev, failed); err != nil || len(p.Hosts) != 2 {
		t.Fatalf("Replan (not PMI) = %v, %v: want the relay-only spare used", p.Peers(), err)
	}
	if p, err := replan(prev, failed, true); err == nil {
		t.Fatalf("replan of a PMI job placed %v beside a relay-only host, want a refusal", p.Peers())
	} else if !strings.Contains(err.Error(), ShortPeer(ids[2])) {
		t.Errorf("%v does not name the relay-only host", err)
	}
}

// TestNeedOfAnMPICHJob: the advert of an MPICH job says so and whether it
// is spread, for hosts whose network settings decide whether they can run
// it; other jobs' adverts carry neither.
func TestNeedOfAnMPICHJob(t *testing.T) {
	for _, tc := range []struct {
		pmi          bool
		strategy     Strategy
		want, spread bool
	}{
		{true, Spread, true, true},
		{true, Concentrate, true, false},
		{false, Spread, false, false},
	} {
		d := NewDescription("prog", nil, 4)
		d.PMI, d.Strategy = tc.pmi, tc.strategy
		n := d.Need("j1")
		if n.PMI != tc.want || n.Spread != tc.spread {
			t.Errorf("pmi %v %s: need says pmi %v spread %v", tc.pmi, tc.strategy, n.PMI, n.Spread)
		}
	}
}

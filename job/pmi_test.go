package job

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/multiformats/go-multiaddr"
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
	preferDirect(rlist)
	var got string
	for _, o := range rlist {
		got += string(o.Peer)
	}
	if got != "bcdae" {
		t.Fatalf("order %s, want bcdae (relay-only hosts last, each group in its order)", got)
	}
}

func TestCheckPMIPlan(t *testing.T) {
	ma := func(s string) multiaddr.Multiaddr { return multiaddr.StringCast(s) }
	relay := ma("/ip4/1.2.3.4/tcp/4001/p2p/12D3KooWRBy97UB99e3J6hiPesre1MZeuNQvfan4gBziswrRJsNK/p2p-circuit")
	direct := ma("/ip4/10.0.0.2/tcp/4001")
	ids := realPeers(t, 3)
	host := func(i int, addrs ...multiaddr.Multiaddr) HostPlan {
		return HostPlan{Offer: Offer{Peer: ids[i], Addrs: addrs}}
	}
	for _, tc := range []struct {
		name  string
		hosts []HostPlan
		ok    bool
	}{
		{"one host behind a relay: alone it needs no connection", []HostPlan{host(0, relay)}, true},
		{"every host direct", []HostPlan{host(0, direct), host(1, direct, relay)}, true},
		{"one relay-only host among direct ones: left to the start's check", []HostPlan{host(0, direct), host(1, relay)}, true},
		{"two hosts behind relays", []HostPlan{host(0, relay), host(1, relay), host(2, direct)}, false},
		{"no addresses known: not judged", []HostPlan{host(0), host(1)}, true},
	} {
		err := checkPMIPlan(Plan{Hosts: tc.hosts})
		if (err == nil) != tc.ok {
			t.Errorf("%s: checkPMIPlan = %v, want ok=%v", tc.name, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), shortPeer(ids[0])) {
			t.Errorf("%s: %v does not name the hosts", tc.name, err)
		}
	}
}

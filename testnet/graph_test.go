package testnet

import (
	"strings"
	"testing"
	"time"
)

func TestGraphStronglyConnected(t *testing.T) {
	for _, tc := range []struct {
		name string
		g    Graph
		want bool
	}{
		{"empty", Graph{}, true},
		{"single", Graph{"a": nil}, true},
		{"cycle", Graph{"a": {"b"}, "b": {"c"}, "c": {"a"}}, true},
		{"one way", Graph{"a": {"b"}, "b": nil}, false},
		{"two islands", Graph{"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c"}}, false},
		{"islands joined both ways", Graph{"a": {"b", "c"}, "b": {"a"}, "c": {"d"}, "d": {"c", "a"}}, true},
		{"nobody links to d", Graph{"a": {"b"}, "b": {"a"}, "d": {"a"}}, false},
		{"links to strangers ignored", Graph{"a": {"b", "x"}, "b": {"a", "y"}}, true},
	} {
		if got := tc.g.StronglyConnected(); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestTopology(t *testing.T) {
	topo := ThreeSites(4)
	if topo.Size() != 12 || topo.RTT(0, 0) != time.Millisecond || topo.RTT(0, 2) != 40*time.Millisecond || topo.RTT(2, 1) != 20*time.Millisecond {
		t.Fatalf("three sites: size %d rtt %v %v %v", topo.Size(), topo.RTT(0, 0), topo.RTT(0, 2), topo.RTT(2, 1))
	}
	if err := topo.validate(); err != nil {
		t.Fatal(err)
	}
	for want, bad := range map[string]Topology{
		"no RTT between": {Sites: []Site{{Name: "a", Hosts: 1}, {Name: "b", Hosts: 1}}},
		"repeated":       {Sites: []Site{{Name: "a", Hosts: 1}, {Name: "a", Hosts: 1}}, DefaultRTT: time.Millisecond},
		"unknown site":   {Sites: []Site{{Name: "a", Hosts: 1}}, Links: []SiteLink{{A: "a", B: "z", RTT: 1}}},
		"0 agents":       {Sites: []Site{{Name: "a"}}},
		"-1 hosts":       {Sites: []Site{{Name: "a", Hosts: -1}}},
		"0 sites":        {},
	} {
		err := bad.validate()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v", want, err)
		}
	}
}

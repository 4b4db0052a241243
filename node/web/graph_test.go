package web

import (
	"testing"
)

func TestBuildGraph(t *testing.T) {
	mine := Self{Labels: []string{"site=a"}, Links: []Link{
		{Peer: "B", RTTms: 2, Conn: "direct", Neighbour: true},
		{Peer: "C", RTTms: 9, Conn: "relayed", Neighbour: true},
		{Peer: "D", Dead: true},
	}}
	theirs := map[string]Self{
		"B": {Labels: []string{"site=a"}, Links: []Link{{Peer: "A", RTTms: 1, Neighbour: true}, {Peer: "E", RTTms: 3, Neighbour: true}, {Peer: "F", RTTms: 4}}},
		"C": {Links: []Link{{Peer: "E", RTTms: 50, Neighbour: true}, {Peer: "C", RTTms: 1, Neighbour: true}}},
	}
	g := BuildGraph("A", mine, theirs)
	var ids []string
	for _, n := range g.Nodes {
		ids = append(ids, n.ID)
	}
	if got, want := join(ids), "A B C D E"; got != want {
		t.Errorf("nodes %s, want %s (F is only known to B, not its neighbour)", got, want)
	}
	want := map[[2]string]Edge{
		{"A", "B"}: {A: "A", B: "B", RTTms: 1, Conn: "direct"}, // the smaller RTT of the two ends
		{"A", "C"}: {A: "A", B: "C", RTTms: 9, Conn: "relayed"},
		{"B", "E"}: {A: "B", B: "E", RTTms: 3},
		{"C", "E"}: {A: "C", B: "E", RTTms: 50},
	}
	if len(g.Edges) != len(want) {
		t.Fatalf("edges %+v, want %d (no self loop, no edge to a non-neighbour)", g.Edges, len(want))
	}
	for _, e := range g.Edges {
		if w, ok := want[[2]string{e.A, e.B}]; !ok || w != e {
			t.Errorf("edge %+v, want %+v", e, w)
		}
	}
	byID := map[string]GraphNode{}
	for _, n := range g.Nodes {
		byID[n.ID] = n
	}
	if !byID["A"].Self || !byID["D"].Dead || !byID["B"].Direct || byID["C"].Direct {
		t.Errorf("flags: %+v", g.Nodes)
	}
	if byID["A"].Group != "site=a" || byID["B"].Group != "site=a" {
		t.Errorf("groups of A and B: %q %q, want their site", byID["A"].Group, byID["B"].Group)
	}
}

func TestGroups(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes []GraphNode
		edges []Edge
		want  map[string]string
	}{
		{"sites win over RTT", []GraphNode{{ID: "a", Labels: []string{"gpu", "site=x"}}, {ID: "b"}},
			[]Edge{{A: "a", B: "b", RTTms: 0.1}}, map[string]string{"a": "site=x", "b": "cluster 1"}},
		{"two RTT clusters", []GraphNode{{ID: "a"}, {ID: "b"}, {ID: "c"}, {ID: "d"}},
			[]Edge{{A: "a", B: "b", RTTms: 2}, {A: "c", B: "d", RTTms: 3}, {A: "b", B: "c", RTTms: 40}},
			map[string]string{"a": "cluster 1", "b": "cluster 1", "c": "cluster 2", "d": "cluster 2"}},
		{"loopback jitter stays one cluster", []GraphNode{{ID: "a"}, {ID: "b"}, {ID: "c"}},
			[]Edge{{A: "a", B: "b", RTTms: 0.02}, {A: "b", B: "c", RTTms: 0.9}},
			map[string]string{"a": "cluster 1", "b": "cluster 1", "c": "cluster 1"}},
		{"dead and unmeasured edges do not join", []GraphNode{{ID: "a"}, {ID: "b"}, {ID: "c"}},
			[]Edge{{A: "a", B: "b", RTTms: 0.5, Dead: true}, {A: "b", B: "c"}},
			map[string]string{"a": "cluster 1", "b": "cluster 2", "c": "cluster 3"}},
		{"no nodes", nil, nil, map[string]string{}},
	} {
		got := Groups(tc.nodes, tc.edges)
		if len(got) != len(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
			continue
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%s: %s in %q, want %q", tc.name, k, got[k], v)
			}
		}
	}
}

func TestParseAddr(t *testing.T) {
	for _, tc := range []struct {
		addr     string
		loopback bool
		ok       bool
	}{
		{"127.0.0.1:4080", true, true},
		{"localhost:0", true, true},
		{"[::1]:80", true, true},
		{"0.0.0.0:4080", false, true},
		{"10.1.2.3:65535", false, true},
		{"127.0.0.1", false, false},
		{"127.0.0.1:65536", false, false},
		{"127.0.0.1:-1", false, false},
		{"127.0.0.1:http", false, false},
		{"example.com:80", false, false},
		{":4080", false, false},
		{"", false, false},
		{"127.0.0.1:00", false, false},
	} {
		lo, err := ParseAddr(tc.addr)
		if (err == nil) != tc.ok || lo != tc.loopback {
			t.Errorf("ParseAddr(%q) = %v, %v; want loopback %v, ok %v", tc.addr, lo, err, tc.loopback, tc.ok)
		}
		if w := Warning(tc.addr); (w != "") != (tc.ok && !tc.loopback) {
			t.Errorf("Warning(%q) = %q", tc.addr, w)
		}
	}
}

func join(ss []string) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += " "
		}
		out += s
	}
	return out
}

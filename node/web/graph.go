package web

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Graph is what the network page draws: this agent, the peers it knows,
// its neighbours' neighbours, the links between them with their RTTs, and
// the group (site or RTT cluster) of each node.
type Graph struct {
	Self  string      `json:"self"`
	Nodes []GraphNode `json:"nodes"`
	Edges []Edge      `json:"edges"`
}

// GraphNode is one agent of the graph.
type GraphNode struct {
	ID     string   `json:"id"`
	Group  string   `json:"group"` // "site=X" from its labels, or "cluster N" by RTT
	Labels []string `json:"labels,omitempty"`
	Self   bool     `json:"self,omitempty"`
	Dead   bool     `json:"dead,omitempty"`   // this agent counts it dead
	Direct bool     `json:"direct,omitempty"` // this agent holds a direct connection to it
}

// Edge is a neighbour link, undirected, with the smaller RTT the two ends
// measured.
type Edge struct {
	A     string  `json:"a"`
	B     string  `json:"b"`
	RTTms float64 `json:"rtt_ms"`
	Conn  string  `json:"conn,omitempty"` // as this agent sees it, for its own links
	Dead  bool    `json:"dead,omitempty"`
}

// BuildGraph merges this agent's view (self, mine) with what its
// neighbours said of themselves (theirs, by peer ID): every peer known
// here is a node, every neighbour link known anywhere an edge.
func BuildGraph(self string, mine Self, theirs map[string]Self) Graph {
	nodes := map[string]*GraphNode{self: {ID: self, Self: true, Labels: mine.Labels}}
	node := func(id string) *GraphNode {
		if nodes[id] == nil {
			nodes[id] = &GraphNode{ID: id}
		}
		return nodes[id]
	}
	edges := map[[2]string]*Edge{}
	addEdge := func(a, b string, l Link) {
		if a == b {
			return
		}
		key := [2]string{min(a, b), max(a, b)}
		e := edges[key]
		if e == nil {
			e = &Edge{A: key[0], B: key[1], RTTms: l.RTTms, Conn: l.Conn, Dead: l.Dead}
			edges[key] = e
			return
		}
		if l.RTTms > 0 && (e.RTTms == 0 || l.RTTms < e.RTTms) {
			e.RTTms = l.RTTms
		}
		e.Conn = cmp.Or(e.Conn, l.Conn)
	}
	for _, l := range mine.Links {
		n := node(l.Peer)
		n.Dead, n.Direct = l.Dead, l.Conn == "direct"
		if l.Neighbour {
			addEdge(self, l.Peer, l)
		}
	}
	for id, s := range theirs {
		node(id).Labels = s.Labels
		for _, l := range s.Links {
			if !l.Neighbour {
				continue
			}
			node(l.Peer)
			l.Conn = "" // how they connect is theirs to say; only ours is shown
			addEdge(id, l.Peer, l)
		}
	}
	g := Graph{Self: self, Nodes: []GraphNode{}, Edges: []Edge{}}
	for _, n := range nodes {
		g.Nodes = append(g.Nodes, *n)
	}
	for _, e := range edges {
		g.Edges = append(g.Edges, *e)
	}
	slices.SortFunc(g.Nodes, func(a, b GraphNode) int { return strings.Compare(a.ID, b.ID) })
	slices.SortFunc(g.Edges, func(a, b Edge) int { return cmp.Or(strings.Compare(a.A, b.A), strings.Compare(a.B, b.B)) })
	groups := Groups(g.Nodes, g.Edges)
	for i := range g.Nodes {
		g.Nodes[i].Group = groups[g.Nodes[i].ID]
	}
	return g
}

// Groups puts each node in a group: its site label ("site=X") when it
// has one, else an RTT cluster, the nodes joined by live edges shorter
// than clusterRTT(edges) (numbered in the order of their first node).
func Groups(nodes []GraphNode, edges []Edge) map[string]string {
	out := map[string]string{}
	parent := map[string]string{}
	var find func(string) string
	find = func(x string) string {
		if p, ok := parent[x]; ok && p != x {
			r := find(p)
			parent[x] = r
			return r
		}
		return x
	}
	for _, n := range nodes {
		if site := siteOf(n.Labels); site != "" {
			out[n.ID] = "site=" + site
			continue
		}
		parent[n.ID] = n.ID
	}
	limit := clusterRTT(edges)
	for _, e := range edges {
		_, a := parent[e.A]
		_, b := parent[e.B]
		if a && b && !e.Dead && e.RTTms > 0 && e.RTTms <= limit {
			parent[find(e.A)] = find(e.B)
		}
	}
	num := map[string]int{}
	for _, n := range nodes {
		if _, ok := parent[n.ID]; !ok {
			continue
		}
		r := find(n.ID)
		if _, ok := num[r]; !ok {
			num[r] = len(num) + 1
		}
		out[n.ID] = fmt.Sprintf("cluster %d", num[r])
	}
	return out
}

// clusterRTT is the longest RTT within one cluster: three times the
// shortest measured live RTT, and at least 1 ms (loopback and LAN RTTs
// jitter far more than their size).
func clusterRTT(edges []Edge) float64 {
	least := 0.0
	for _, e := range edges {
		if !e.Dead && e.RTTms > 0 && (least == 0 || e.RTTms < least) {
			least = e.RTTms
		}
	}
	return max(1, 3*least)
}

// siteOf is the value of a "site=" label, or "".
func siteOf(labels []string) string {
	for _, l := range labels {
		if v, ok := strings.CutPrefix(l, "site="); ok {
			return v
		}
	}
	return ""
}

package proto

import (
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
)

func hostRefs(ids ...peer.ID) []HostRef {
	out := make([]HostRef, len(ids))
	for i, id := range ids {
		out[i] = HostRef{Peer: id}
	}
	return out
}

func TestRankTableCheck(t *testing.T) {
	abc := hostRefs("A", "B", "C")
	good := RankTable{Hosts: abc, Ranks: [][]int{{0, 1}, {0, 1}, {0, 2}, {1, 2}}}
	if err := good.Check(4, 2); err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		name, err string
		t         RankTable
		n, r      int
	}{
		{"two copies on one host", "two copies", RankTable{Hosts: abc, Ranks: [][]int{{0, 0}, {0, 1}, {0, 2}, {1, 2}}}, 4, 2},
		{"missing copy", "no host", RankTable{Hosts: abc, Ranks: [][]int{{0, -1}, {0, 1}, {0, 2}, {1, 2}}}, 4, 2},
		{"host out of range", "no host", RankTable{Hosts: abc, Ranks: [][]int{{0, 3}, {0, 1}, {0, 2}, {1, 2}}}, 4, 2},
		{"short", "2 ranks", RankTable{Hosts: abc, Ranks: [][]int{{0, 1}, {0, 1}}}, 4, 2},
		{"ragged", "has 1 copies", RankTable{Hosts: abc, Ranks: [][]int{{0}, {0, 1}, {0, 2}, {1, 2}}}, 4, 2},
		{"host twice", "listed twice", RankTable{Hosts: hostRefs("A", "A"), Ranks: [][]int{{0}, {1}}}, 2, 1},
		{"host without ID", "no peer ID", RankTable{Hosts: hostRefs(""), Ranks: [][]int{{0}}}, 1, 1},
		{"negative site", "site -1 of 1", RankTable{Hosts: []HostRef{{Peer: "A", Site: -1}}, Ranks: [][]int{{0}}}, 1, 1},
		{"site beyond the hosts", "site 1 of 1", RankTable{Hosts: []HostRef{{Peer: "A", Site: 1}}, Ranks: [][]int{{0}}}, 1, 1},
		{"n out of range", "out of range", good, 0, 2},
		{"too many copies", "out of range", good, MaxProcs, 2},
	}
	for _, b := range bad {
		err := b.t.Check(b.n, b.r)
		if err == nil || !strings.Contains(err.Error(), b.err) {
			t.Errorf("%s: Check = %v, want %q", b.name, err, b.err)
		}
	}
}

func TestRankTableReads(t *testing.T) {
	tab := NewRankTable([]HostRef{{Peer: "A"}, {Peer: "B", Site: 1}}, 2, 2)
	for _, pl := range []struct {
		host int
		p    Proc
	}{{0, Proc{0, 0}}, {1, Proc{0, 1}}, {1, Proc{1, 0}}, {0, Proc{1, 1}}, {0, Proc{5, 0}}} {
		tab.Place(pl.host, pl.p) // the last is outside the table: ignored
	}
	if err := tab.Check(2, 2); err != nil {
		t.Fatal(err)
	}
	if got := tab.Peer(1, 0); got != "B" {
		t.Errorf("Peer(1, 0) = %q, want B", got)
	}
	if got := tab.Peer(2, 0); got != "" {
		t.Errorf("Peer(2, 0) = %q, want none", got)
	}
	if got := tab.ProcsOn("A"); len(got) != 2 || got[0] != (Proc{0, 0}) || got[1] != (Proc{1, 1}) {
		t.Errorf("ProcsOn(A) = %v", got)
	}
	if got := tab.Sites(); got["B"] != 1 || got["A"] != 0 {
		t.Errorf("Sites = %v", got)
	}
}

func TestRankTableOf(t *testing.T) {
	tab := RankTableOf([][]peer.ID{{"A", "B"}, {"B", "C"}}, map[peer.ID]int{"C": 1})
	if err := tab.Check(2, 2); err != nil {
		t.Fatal(err)
	}
	if got := tab.Peers(); got[0][0] != "A" || got[0][1] != "B" || got[1][0] != "B" || got[1][1] != "C" {
		t.Errorf("Peers = %v", got)
	}
	if tab.Hosts[2].Site != 1 || tab.Hosts[0].Site != 0 {
		t.Errorf("hosts %v", tab.Hosts)
	}
	if err := RankTableOf([][]peer.ID{{""}}, nil).Check(1, 1); err == nil {
		t.Error("a copy without a host passed Check")
	}
}

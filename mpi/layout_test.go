package mpi

import (
	"errors"
	"reflect"
	"testing"
)

func TestNewLayout(t *testing.T) {
	for _, tc := range []struct {
		agent   []int
		members [][]int
		blocked bool
		useful  bool
		leaders []int // for root 1
	}{
		{[]int{5}, [][]int{{0}}, true, false, []int{1}},
		{[]int{7, 7, 3, 3, 3}, [][]int{{0, 1}, {2, 3, 4}}, true, true, []int{1, 2}},
		{[]int{0, 1, 0, 1}, [][]int{{0, 2}, {1, 3}}, false, true, []int{0, 1}},
		{[]int{0, 1, 2}, [][]int{{0}, {1}, {2}}, true, false, []int{0, 1, 2}},
		{[]int{4, 4, 4}, [][]int{{0, 1, 2}}, true, false, []int{1}},
	} {
		l := newLayout(tc.agent)
		if !reflect.DeepEqual(l.members, tc.members) || l.blocked != tc.blocked || l.useful() != tc.useful {
			t.Errorf("%v: members %v blocked %v useful %v", tc.agent, l.members, l.blocked, l.useful())
		}
		if len(tc.agent) > 1 {
			if got := l.leaders(1); !reflect.DeepEqual(got, tc.leaders) {
				t.Errorf("%v: leaders for root 1: %v, want %v", tc.agent, got, tc.leaders)
			}
		}
	}
}

func TestNewSiteLayout(t *testing.T) {
	for _, tc := range []struct {
		agent, site []int
		sites       [][]int // hosts of each site; nil: one site
		blocked     bool    // of the sites
		pick        string  // "hosts", "sites" or ""
	}{
		{[]int{0, 0, 1, 1}, []int{3, 3, 3, 3}, nil, false, "hosts"},
		{[]int{0, 0, 1, 1, 2, 2}, []int{5, 5, 5, 5, 9, 9}, [][]int{{0, 1}, {2}}, true, "hosts"},
		{[]int{0, 0, 1, 1, 2, 2}, []int{5, 5, 9, 9, 5, 5}, [][]int{{0, 2}, {1}}, false, "hosts"},
		{[]int{0, 1, 2}, []int{1, 1, 2}, [][]int{{0, 1}, {2}}, true, "sites"}, // one rank per host
		{[]int{0, 1, 2}, []int{1, 2, 3}, [][]int{{0}, {1}, {2}}, true, ""},    // one host per site too
		{[]int{7, 7}, []int{0, 0}, nil, false, ""},
		{[]int{0, 1, 0, 1}, []int{0, 1, 0, 1}, [][]int{{0}, {1}}, true, "hosts"},
	} {
		l := newSiteLayout(tc.agent, tc.site)
		var got [][]int
		if l.sites != nil {
			got = l.sites.members
			if l.sites.blocked != tc.blocked || l.sites.off != tagsSites {
				t.Errorf("%v %v: sites blocked %v off %d", tc.agent, tc.site, l.sites.blocked, l.sites.off)
			}
		}
		if !reflect.DeepEqual(got, tc.sites) {
			t.Errorf("%v %v: sites %v, want %v", tc.agent, tc.site, got, tc.sites)
		}
		pick := ""
		switch l.pick() {
		case l:
			pick = "hosts"
		case l.sites:
			if l.sites != nil {
				pick = "sites"
			}
		}
		if pick != tc.pick {
			t.Errorf("%v %v: picks %q, want %q", tc.agent, tc.site, pick, tc.pick)
		}
	}
}

// TestPlanLeaders: the leader of host 0 (ranks 0, 1) of hosts {0, 1}, {2, 3}
// cuts its ranks' packs and the leaders' messages by the counts, leaving out
// blocks within the host and blocks too large for the leaders (8 elements
// of 8 bytes > 64 KiB / 4 would need 2049); a count no rank could pass is
// refused.
func TestPlanLeaders(t *testing.T) {
	l := newLayout([]int{0, 0, 1, 1})
	const n, e, big = 4, 8, 2049
	// per local rank: sends to ranks 0..3, then receives from ranks 0..3
	counts := []int64{
		1, 1, 2, big, 1, 1, 5, 6, // rank 0
		1, 1, 3, 4, 1, 1, big, 7, // rank 1
	}
	p, err := planLeaders(l, l.members[0], counts, n, e)
	if err != nil {
		t.Fatal(err)
	}
	// packs: rank 0 sends 2 (to 2) through the leaders, rank 1 sends 3+4
	if want := []int{0, 2, 9}; !reflect.DeepEqual(p.packs, want) {
		t.Errorf("packs %v, want %v", p.packs, want)
	}
	// outs: rank 0 gets 5+6, rank 1 gets 7 (from 3)
	if want := []int{0, 11, 18}; !reflect.DeepEqual(p.outs, want) {
		t.Errorf("outs %v, want %v", p.outs, want)
	}
	if !reflect.DeepEqual(p.hsc, []int{0, 9}) || !reflect.DeepEqual(p.hrc, []int{0, 18}) {
		t.Errorf("host counts: send %v receive %v", p.hsc, p.hrc)
	}
	// to host 1: rank 0's block to 2, rank 1's to 2 then 3
	if want := []span{{0, 2}, {2, 3}, {5, 4}}; !reflect.DeepEqual(p.blocks, want) {
		t.Errorf("blocks %v, want %v", p.blocks, want)
	}
	// from host 1: rank 2's to rank 0, rank 3's to rank 0 then rank 1
	if want := []span{{0, 5}, {5, 6}, {11, 7}}; !reflect.DeepEqual(p.arrivals, want) {
		t.Errorf("arrivals %v, want %v", p.arrivals, want)
	}
	for _, bad := range []int64{-1, maxCount + 1} {
		c := append([]int64(nil), counts...)
		c[3] = bad
		if _, err := planLeaders(l, l.members[0], c, n, e); !errors.Is(err, ErrArg) {
			t.Errorf("count %d: %v", bad, err)
		}
	}
}

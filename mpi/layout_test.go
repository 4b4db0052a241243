package mpi

import (
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

package job

import (
	"slices"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

func TestSiteClasses(t *testing.T) {
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	for _, tc := range []struct {
		name  string
		rtts  []float64 // ms
		sites []string
		want  []int
	}{
		{"none", nil, nil, []int{}},
		{"loopback", []float64{0, 0.05, 0.1, 0.2}, nil, []int{0, 0, 0, 0}},
		{"LAN jitter", []float64{0.3, 1.9, 0.2, 1.1}, nil, []int{0, 0, 0, 0}},
		{"two sites", []float64{0.2, 18, 0.3, 21}, nil, []int{0, 1, 0, 1}},
		{"three sites", []float64{45, 0, 12, 0.4, 13, 47}, nil, []int{2, 0, 1, 0, 1, 2}},
		{"WAN jitter stays one site", []float64{20, 25, 30, 38}, nil, []int{0, 0, 0, 0}},
		{"unmeasured alone", []float64{0.1, 3600000, 0.2}, nil, []int{0, 1, 0}},
		{"labels", []float64{0.1, 0.1, 0.1}, []string{"lyon", "nancy", "lyon"}, []int{0, 1, 0}},
		{"labels first, then RTT classes", []float64{50, 0.1, 0.2, 30}, []string{"", "", "rennes", ""}, []int{2, 1, 0, 2}},
		{"far label near RTT", []float64{0.1, 40}, []string{"a", "a"}, []int{0, 0}},
	} {
		offers := make([]Offer, len(tc.rtts))
		for i, r := range tc.rtts {
			offers[i].RTT = ms(r)
			if tc.sites != nil {
				offers[i].Site = tc.sites[i]
			}
		}
		if got := SiteClasses(offers); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestCommitsCarrySites: every host's commit names the same sites for the
// job's hosts, from their labels and the submitter's RTTs.
func TestCommitsCarrySites(t *testing.T) {
	ss := &session{sub: Submission{Desc: Description{Nodes: 4, Replicas: 1}}}
	ms := time.Millisecond
	plan := Plan{N: 4, R: 1, Hosts: []HostPlan{
		{Offer{Peer: "a", RTT: ms / 10}, []proto.Proc{{Rank: 0}}},
		{Offer{Peer: "b", RTT: 20 * ms}, []proto.Proc{{Rank: 1}}},
		{Offer{Peer: "c", RTT: ms / 5}, []proto.Proc{{Rank: 2}}},
		{Offer{Peer: "d", RTT: ms / 5, Site: "far"}, []proto.Proc{{Rank: 3}}},
	}}
	want := map[string]int{"a": 1, "b": 2, "c": 1, "d": 0}
	reqs := ss.commits(plan)
	if len(reqs) != 4 {
		t.Fatalf("%d commits", len(reqs))
	}
	for p, req := range reqs {
		for _, h := range req.Commit.Hosts {
			if h.Site != want[string(h.Peer)] {
				t.Errorf("commit to %s: host %s in site %d, want %d", p, h.Peer, h.Site, want[string(h.Peer)])
			}
		}
	}
}

package job

import (
	"slices"
	"testing"
	"time"
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

package lifecycle

import (
	"testing"

	"github.com/zorilla-p2p/zorilla/job"
)

func TestGangColumn(t *testing.T) {
	mask := func(m uint64) *uint64 { return &m }
	plan := func(free ...*uint64) job.Plan {
		var p job.Plan
		for _, f := range free {
			p.Hosts = append(p.Hosts, job.HostPlan{Offer: job.Offer{GangFree: f}})
		}
		return p
	}
	cases := []struct {
		name string
		plan job.Plan
		want int // -1: nil
	}{
		{"no hosts", plan(), -1},
		{"a host without rotation", plan(mask(0b11), nil), -1},
		{"lowest common", plan(mask(0b1110), mask(0b0110)), 1},
		{"none common: most hosts", plan(mask(0b01), mask(0b10), mask(0b10)), 1},
	}
	for _, tc := range cases {
		got := gangColumn(tc.plan)
		if (got == nil) != (tc.want < 0) || (got != nil && *got != tc.want) {
			t.Errorf("%s: gangColumn = %v, want %d", tc.name, got, tc.want)
		}
	}
}

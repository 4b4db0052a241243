package job

import (
	"testing"

	"github.com/zorilla-p2p/zorilla/internal/peertest"
)

func TestEnough(t *testing.T) {
	ids := peertest.Peers(t, 8)
	hosts := func(slots ...int) []Offer {
		out := make([]Offer, len(slots))
		for i, s := range slots {
			out[i] = Offer{Peer: ids[i], Slots: s}
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		s     Strategy
		rlist []Offer
		n, r  int
		want  bool
	}{
		{"concentrate: capacity is enough", Concentrate, hosts(4, 4), 8, 1, true},
		{"concentrate: one slot short", Concentrate, hosts(4, 3), 8, 1, false},
		{"concentrate: replicas need r hosts", Concentrate, hosts(8), 4, 2, false},
		{"spread: capacity but too few hosts", Spread, hosts(4, 4), 8, 1, false},
		{"spread: a host per process", Spread, hosts(1, 1, 1, 1), 4, 1, true},
		{"spread: n x r hosts for replicas", Spread, hosts(1, 1, 1, 1, 1, 1), 3, 2, true},
		{"spread: hosts without capacity", Spread, hosts(0, 0, 1, 1), 4, 1, false},
	} {
		if got := Enough(tc.s, tc.rlist, tc.n, tc.r); got != tc.want {
			t.Errorf("%s: Enough = %v, want %v", tc.name, got, tc.want)
		}
	}
}

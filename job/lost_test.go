package job

import (
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// TestCopiesLeft: copies of a rank left in a plan of r = 2 as copies are
// lost, and the notice a user reads.
func TestCopiesLeft(t *testing.T) {
	a, b := peer.ID("host-a-0123456789"), peer.ID("host-b-0123456789")
	plan := Plan{Hosts: []HostPlan{
		{Offer: Offer{Peer: a}, Procs: []proto.Proc{{Rank: 0, Replica: 0}, {Rank: 1, Replica: 1}}},
		{Offer: Offer{Peer: b}, Procs: []proto.Proc{{Rank: 1, Replica: 0}, {Rank: 0, Replica: 1}}},
	}}
	for _, tc := range []struct {
		lost []LostCopy
		rank int
		want int
	}{
		{nil, 0, 2},
		{[]LostCopy{{Rank: 0, Replica: 1}}, 0, 1},
		{[]LostCopy{{Rank: 0, Replica: 1}}, 1, 2},
		{[]LostCopy{{Rank: 0, Replica: 1}, {Rank: 0, Replica: 0}}, 0, 0},
	} {
		if got := CopiesLeft(plan, tc.lost, tc.rank); got != tc.want {
			t.Errorf("lost %v: rank %d has %d copies left, want %d", tc.lost, tc.rank, got, tc.want)
		}
	}
}

package worker

import (
	"fmt"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// TestCheckCommitSites: a commit's host sites number the job's hosts.
func TestCheckCommitSites(t *testing.T) {
	for _, tc := range []struct {
		sites []int
		ok    bool
	}{
		{[]int{0, 0}, true},
		{[]int{0, 1}, true},
		{[]int{1, 0}, true},
		{[]int{0, 2}, false},
		{[]int{-1, 0}, false},
	} {
		c := proto.Commit{Key: "s", N: 2, R: 1, Program: proto.FileRef{Name: "p", Hash: "00", Size: 10},
			Procs: []proto.Proc{{Rank: 1}}}
		c.Ranks = [][]int{{0}, {1}}
		for i, s := range tc.sites {
			c.Hosts = append(c.Hosts, proto.HostRef{Peer: peer.ID(fmt.Sprint("x", i)), Site: s})
		}
		if err := checkCommit(c); (err == nil) != tc.ok {
			t.Errorf("sites %v: %v", tc.sites, err)
		}
	}
}

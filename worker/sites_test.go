package worker

import (
	"testing"

	"github.com/zorilla-p2p/zorilla/job"
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
		c := job.Commit{Key: "s", N: 2, R: 1, Program: job.FileRef{Name: "p", Hash: "00", Size: 10},
			Procs: []job.Proc{{Rank: 1}}, RankHost: [][]int{{0}, {1}}}
		for _, s := range tc.sites {
			c.Hosts = append(c.Hosts, job.HostRef{Peer: "x", Site: s})
		}
		if err := checkCommit(c); (err == nil) != tc.ok {
			t.Errorf("sites %v: %v", tc.sites, err)
		}
	}
}

package worker

import (
	"bufio"
	"bytes"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/internal/wire"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

func TestDecideLease(t *testing.T) {
	const alice, bob = peer.ID("alice"), peer.ID("bob")
	offer := leaseView{Lease: Lease{Key: "k", Job: "j1", Submitter: alice}, Leased: true}
	runs := offer
	runs.Lease.Committed, runs.Runs = true, true
	draining := offer
	draining.Draining = true
	commit := &proto.Commit{}
	tests := []struct {
		name string
		from peer.ID
		req  proto.LeaseRequest
		v    leaseView
		do   leaseDo
		err  string
	}{
		{"no lease", alice, proto.LeaseRequest{Op: proto.OpCommit, Job: "j1", Commit: commit}, leaseView{}, leaseRefuse, "commit j1: no such lease"},
		{"another's lease", bob, proto.LeaseRequest{Op: proto.OpCommit, Job: "j1", Commit: commit}, offer, leaseRefuse, "no such lease"},
		{"another job's lease", alice, proto.LeaseRequest{Op: proto.OpKill, Job: "j2"}, runs, leaseRefuse, "kill j2: no such lease"},
		{"another's retry", bob, proto.LeaseRequest{Op: proto.OpRetry, Job: "j1"}, runs, leaseRefuse, "retry j1: no such lease"},
		{"cancel an offer", alice, proto.LeaseRequest{Op: proto.OpCancel, Job: "j1"}, offer, leaseCancel, ""},
		{"cancel a run", alice, proto.LeaseRequest{Op: proto.OpCancel, Job: "j1"}, runs, leaseRefuse, "already committed; kill it instead"},
		{"commit", alice, proto.LeaseRequest{Op: proto.OpCommit, Job: "j1", Commit: commit}, offer, leaseCommit, ""},
		{"commit without a body", alice, proto.LeaseRequest{Op: proto.OpCommit, Job: "j1"}, offer, leaseRefuse, "without a body"},
		{"commit while draining", alice, proto.LeaseRequest{Op: proto.OpCommit, Job: "j1", Commit: commit}, draining, leaseRefuse, "draining"},
		{"commit again", alice, proto.LeaseRequest{Op: proto.OpCommit, Job: "j1", Commit: commit}, runs, leaseCommit, ""},
		{"release", alice, proto.LeaseRequest{Op: proto.OpRelease, Job: "j1"}, runs, leaseRelease, ""},
		{"release an offer", alice, proto.LeaseRequest{Op: proto.OpRelease, Job: "j1"}, offer, leaseRefuse, "not running here"},
		{"resume", alice, proto.LeaseRequest{Op: proto.OpResume, Job: "j1"}, runs, leaseResume, ""},
		{"resume an ended run", alice, proto.LeaseRequest{Op: proto.OpResume, Job: "j1"}, offer, leaseRefuse, "no longer runs here"},
		{"checkpoint", alice, proto.LeaseRequest{Op: proto.OpCheckpoint, Job: "j1"}, runs, leaseCheckpoint, ""},
		{"checkpoint an offer", alice, proto.LeaseRequest{Op: proto.OpCheckpoint, Job: "j1"}, offer, leaseRefuse, "no longer runs here"},
		{"kill a run", alice, proto.LeaseRequest{Op: proto.OpKill, Job: "j1"}, runs, leaseKill, ""},
		{"kill an offer", alice, proto.LeaseRequest{Op: proto.OpKill, Job: "j1"}, offer, leaseEnd, ""},
		{"kill while draining", alice, proto.LeaseRequest{Op: proto.OpKill, Job: "j1"}, draining, leaseEnd, ""},
		{"retry a run", alice, proto.LeaseRequest{Op: proto.OpRetry, Job: "j1"}, runs, leaseRetry, ""},
		{"retry an offer", alice, proto.LeaseRequest{Op: proto.OpRetry, Job: "j1"}, offer, leaseRekey, ""},
		{"unknown op", alice, proto.LeaseRequest{Op: "grow", Job: "j1"}, runs, leaseRefuse, `unknown lease op "grow"`},
	}
	for _, c := range tests {
		got := decideLease(c.from, c.req, c.v)
		if got.Do != c.do || (c.err == "") != (got.Err == nil) || got.Err != nil && !strings.Contains(got.Err.Error(), c.err) {
			t.Errorf("%s: %v, %v; want %v, %q", c.name, got.Do, got.Err, c.do, c.err)
		}
	}
}

// TestDecodeLeaseNormalizes reads the Retry flag of older submitters as
// OpRetry, and leaves every other request as it came.
func TestDecodeLeaseNormalizes(t *testing.T) {
	for _, c := range []struct {
		in   proto.LeaseRequest
		want proto.LeaseOp
	}{
		{proto.LeaseRequest{Op: proto.OpKill, Retry: true}, proto.OpRetry},
		{proto.LeaseRequest{Op: proto.OpKill}, proto.OpKill},
		{proto.LeaseRequest{Op: proto.OpRetry}, proto.OpRetry},
		{proto.LeaseRequest{Op: proto.OpCancel, Retry: true}, proto.OpCancel},
	} {
		var b bytes.Buffer
		c.in.Job, c.in.Lease = "j1", "k"
		if err := wire.WriteJSON(&b, c.in); err != nil {
			t.Fatal(err)
		}
		got, err := decodeLease(bufio.NewReader(&b))
		if err != nil || got.Op != c.want || got.Op == proto.OpRetry && got.Retry || got.Job != "j1" || got.Lease != "k" {
			t.Errorf("%+v decoded as %+v, %v; want op %s", c.in, got, err, c.want)
		}
	}
	if _, err := decodeLease(bufio.NewReader(strings.NewReader("\x05nope!"))); err == nil {
		t.Error("decoded a frame that holds no request")
	}
}

func TestCommitRefusal(t *testing.T) {
	ok := proto.Commit{Key: "s", N: 2, R: 1, Program: proto.FileRef{Name: "p"}, Procs: []proto.Proc{{Rank: 0}, {Rank: 1}},
		RankTable: proto.RankTable{Hosts: []proto.HostRef{{Peer: "h"}}, Ranks: [][]int{{0}, {0}}}}
	col := func(c int) *int { return &c }
	lease := Lease{Slots: 2}
	tests := []struct {
		name    string
		edit    func(c *proto.Commit)
		slots   int
		columns int
		err     string
	}{
		{"fits", func(*proto.Commit) {}, 2, 0, ""},
		{"more processes than slots", func(*proto.Commit) {}, 1, 0, "2 processes, the lease holds 1 slots"},
		{"no key", func(c *proto.Commit) { c.Key = "" }, 2, 0, "incomplete"},
		{"a path for a program", func(c *proto.Commit) { c.Program.Name = "../p" }, 2, 0, "not a plain name"},
		{"an output outside", func(c *proto.Commit) { c.Outputs = []string{"/etc"} }, 2, 0, "not inside the job folder"},
		{"a rank outside n", func(c *proto.Commit) { c.Procs[1].Rank = 2 }, 2, 0, "outside n=2"},
		{"a bad rank table", func(c *proto.Commit) { c.Ranks = c.Ranks[:1] }, 2, 0, "rank table"},
		{"a restore of a rank elsewhere", func(c *proto.Commit) {
			c.Restore = []proto.Restore{{Rank: 5, Num: 1, File: proto.FileRef{Name: "c"}}}
		}, 2, 0, "not one of this host's"},
		{"a column", func(c *proto.Commit) { c.GangColumn = col(1) }, 2, 2, ""},
		{"a column past the rotation", func(c *proto.Commit) { c.GangColumn = col(2) }, 2, 2, "outside this host's 2 columns"},
	}
	for _, c := range tests {
		commit := ok
		commit.Procs = append([]proto.Proc(nil), ok.Procs...)
		c.edit(&commit)
		lease.Slots = c.slots
		err := commitRefusal(commit, lease, c.columns)
		if (c.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: %v, want %q", c.name, err, c.err)
		}
	}
}

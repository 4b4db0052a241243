package testnet

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/internal/rpc"
	"github.com/zorilla-p2p/zorilla/job"
	"github.com/zorilla-p2p/zorilla/job/proto"
	"github.com/zorilla-p2p/zorilla/node"
)

// A commit is taken only from the lease's submitter, and only once: a
// commit from another peer quoting the lease's key (forged) and a second
// commit on a key already used (replayed) are refused, no process starts
// for them, and the worker goes on running other jobs.
func TestForgedAndReplayedCommits(t *testing.T) {
	net := startLoopback(t, 2, func(_ int, cfg *node.Config) { e2eConfig(cfg, 2) })
	connected(t, net, 1)
	s, v := net.Nodes[0], net.Nodes[1]
	owner, thief := rawHost(t, v), rawHost(t, v)
	connectRaw(t, owner, v)
	connectRaw(t, thief, v)
	ownerEP, thiefEP := rpc.New(owner.h), rpc.New(thief.h)
	t.Cleanup(func() { _ = ownerEP.Close(); _ = thiefEP.Close() })

	id := proto.NewJobID()
	lease, err := v.Leases().Reserve(id, owner.h.ID(), 1, 1, 0, 0) // as an offer to owner would
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil { // a sandboxed job could not write it otherwise
		t.Fatal(err)
	}
	marker := filepath.Join(dir, "ran")
	prog := upload(t, s, "touch "+marker)
	commit := proto.LeaseRequest{Op: proto.OpCommit, Job: id, Lease: lease.Key, Commit: &proto.Commit{
		Key: "job-key", N: 1, R: 1, Program: prog, Procs: []proto.Proc{{Rank: 0}},
		RankTable: proto.RankTable{Hosts: []proto.HostRef{{Peer: v.ID()}}, Ranks: [][]int{{0}}}, Attempt: 1}}
	send := func(ep *rpc.Endpoint) proto.LeaseReply {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var rep proto.LeaseReply
		if err := ep.Call(ctx, v.ID(), proto.LeaseProtocol, commit, &rep, proto.MaxReplySize); err != nil {
			t.Fatal(err)
		}
		return rep
	}
	if rep := send(thiefEP); rep.OK || !strings.Contains(rep.Error, "not yours") {
		t.Fatalf("a forged commit was not refused: %+v", rep)
	}
	if l, ok := v.Leases().Get(lease.Key); !ok || l.Committed {
		t.Fatalf("a forged commit changed the lease: %+v, %v", l, ok)
	}
	if rep := send(ownerEP); !rep.OK {
		t.Fatalf("the owner's commit was refused: %+v", rep)
	}
	if rep := send(ownerEP); rep.OK {
		t.Fatal("a replayed commit was taken")
	}
	// The owner serves no file: the job it committed fails its staging,
	// so its program never runs, and its lease ends.
	awaitNet(t, net, "the committed job ends on the worker", func() bool {
		_, held := v.Leases().ByJob(id)
		return !held
	})
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the program of a job whose files never came ran")
	}
	if rep := send(ownerEP); rep.OK || !strings.Contains(rep.Error, "no such lease") {
		t.Fatalf("a commit replayed after the job ended: %+v", rep)
	}
	// The worker is healthy: a real job from s runs on both agents.
	d := job.NewDescription("job.sh", nil, 4)
	d.Strategy = job.Concentrate
	if rec := awaitEnd(t, s, submit(t, s, d, upload(t, s, "exit 0"), false)); rec.State != job.Done {
		t.Fatalf("a job after the refusals ended %s: %s", rec.State, rec.Reason)
	}
}

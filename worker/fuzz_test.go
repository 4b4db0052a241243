package worker

import (
	"bufio"
	"bytes"
	"testing"

	"github.com/zorilla-p2p/zorilla/internal/wire"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// FuzzLeaseRequest feeds arbitrary frames to what handleLease does before
// it touches a lease: decode with the protocol's limit, decide, then check
// a commit's shape and size. Nothing may panic, a request read is
// normalized, only the lease's submitter is obeyed, and a commit accepted
// by both checks stays within the caps and addresses only hosts it lists.
func FuzzLeaseRequest(f *testing.F) {
	var b bytes.Buffer
	c := &proto.Commit{Key: "s", N: 2, R: 1, Program: proto.FileRef{Name: "p", Hash: "00", Size: 10},
		Procs: []proto.Proc{{Rank: 1}}, RankTable: proto.RankTable{Hosts: []proto.HostRef{{Peer: "h"}}, Ranks: [][]int{{0}, {0}}}}
	if err := wire.WriteJSON(&b, proto.LeaseRequest{Op: proto.OpCommit, Job: "j1", Lease: "k", Commit: c}); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes())
	f.Add([]byte("\x30{\"op\":\"commit\",\"commit\":{\"n\":-1,\"r\":9e9}}"))
	c.Hosts = []proto.HostRef{{Peer: "h", Site: -1}}
	b.Reset()
	if err := wire.WriteJSON(&b, proto.LeaseRequest{Op: proto.OpCommit, Job: "j1", Lease: "k", Commit: c}); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes())
	lim := AbuseLimits{MaxJobProcs: 64, MaxJobStage: 1 << 20}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := decodeLease(bufio.NewReader(bytes.NewReader(data)))
		if err != nil {
			return
		}
		checkDecision(t, req)
		if req.Commit == nil {
			return
		}
		c := *req.Commit
		shapeErr, sizeErr := checkCommit(c), checkJobSize(lim, c)
		if shapeErr != nil || sizeErr != nil {
			return
		}
		if c.N*c.R > lim.MaxJobProcs {
			t.Fatalf("n=%d r=%d passed a cap of %d", c.N, c.R, lim.MaxJobProcs)
		}
		var total int64
		for _, f := range append([]proto.FileRef{c.Program}, c.Inputs...) {
			if f.Size < 0 || f.Size > lim.MaxJobStage || total+f.Size > lim.MaxJobStage {
				t.Fatalf("files of %d then %d bytes passed a cap of %d", total, f.Size, lim.MaxJobStage)
			}
			total += f.Size
		}
		for _, reps := range c.Ranks {
			for _, h := range reps {
				if h < 0 || h >= len(c.Hosts) {
					t.Fatalf("rank table names host %d of %d", h, len(c.Hosts))
				}
			}
		}
		for _, h := range c.Hosts {
			if h.Site < 0 || h.Site >= len(c.Hosts) {
				t.Fatalf("host in site %d of %d hosts passed", h.Site, len(c.Hosts))
			}
		}
	})
}

// checkDecision checks decideLease on a decoded request: normalized, it is
// obeyed only from its lease's submitter, for its job.
func checkDecision(t *testing.T, req proto.LeaseRequest) {
	if req.Op == proto.OpKill && req.Retry {
		t.Fatalf("kill with Retry not read as a retry: %+v", req)
	}
	v := leaseView{Lease: Lease{Key: req.Lease, Job: req.Job, Submitter: "alice"}, Leased: true, Runs: len(req.Lease)%2 == 0}
	if act := decideLease("mallory", req, v); act.Do != leaseRefuse || act.Err == nil {
		t.Fatalf("%s from another peer: %v", req.Op, act.Do)
	}
	v.Lease.Job += "x"
	if act := decideLease("alice", req, v); act.Do != leaseRefuse {
		t.Fatalf("%s for another job's lease: %v", req.Op, act.Do)
	}
	v.Lease.Job = req.Job
	if act := decideLease("alice", req, v); (act.Do == leaseRefuse) != (act.Err != nil) {
		t.Fatalf("%s: %v with error %v", req.Op, act.Do, act.Err)
	}
}

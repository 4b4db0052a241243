package worker

import (
	"bufio"
	"bytes"
	"testing"

	"github.com/zorilla-p2p/zorilla/internal/wire"
	"github.com/zorilla-p2p/zorilla/job/proto"
)

// FuzzLeaseRequest feeds arbitrary frames to what handleLease does before
// it touches a lease: decode with the protocol's limit, then check a
// commit's shape and size. Nothing may panic, and a commit accepted by
// both checks stays within the caps and addresses only hosts it lists.
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
		var req proto.LeaseRequest
		if err := wire.ReadJSON(bufio.NewReader(bytes.NewReader(data)), proto.MaxLeaseSize, &req); err != nil || req.Commit == nil {
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

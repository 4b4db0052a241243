package worker

import (
	"fmt"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

// TestDecideLeaseExported: the exported decision is decideLease's on the
// normalized request, and names what it does.
func TestDecideLeaseExported(t *testing.T) {
	l := Lease{Key: "k", Job: "j1", Submitter: "alice", Slots: 2, Cores: 2}
	for _, tc := range []struct {
		from peer.ID
		req  proto.LeaseRequest
		runs bool
		want string
		err  bool
	}{
		{"alice", proto.LeaseRequest{Op: proto.OpCancel, Job: "j1", Lease: "k"}, false, "cancel", false},
		{"alice", proto.LeaseRequest{Op: proto.OpKill, Job: "j1", Lease: "k", Retry: true}, true, "retry", false},
		{"alice", proto.LeaseRequest{Op: proto.OpKill, Job: "j1", Lease: "k"}, false, "end", false},
		{"mallory", proto.LeaseRequest{Op: proto.OpCancel, Job: "j1", Lease: "k"}, false, "refuse", true},
		{"alice", proto.LeaseRequest{Op: proto.OpRelease, Job: "j1", Lease: "k"}, false, "refuse", true},
	} {
		do, err := DecideLease(tc.from, tc.req, LeaseView{Lease: l, Leased: true, Runs: tc.runs})
		if do != tc.want || (err != nil) != tc.err {
			t.Errorf("%s %s (runs %v): %s, %v; want %s, error %v", tc.from, tc.req.Op, tc.runs, do, err, tc.want, tc.err)
		}
	}
}

// TestLeaseKeysFromNewKey: a table given NewKey names its leases with it.
func TestLeaseKeysFromNewKey(t *testing.T) {
	n := 0
	cfg := DefaultLeaseConfig()
	cfg.NewKey = func() string { n++; return fmt.Sprintf("key-%d", n) }
	l, err := NewLeases(host(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	a, err := l.Reserve("ja", "alice", 1, 1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.Renew(a.Key)
	if err != nil {
		t.Fatal(err)
	}
	if a.Key != "key-1" || b.Key != "key-2" {
		t.Fatalf("keys %q then %q, want key-1 then key-2", a.Key, b.Key)
	}
}

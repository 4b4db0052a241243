package worker

import (
	"errors"
	"testing"
	"time"

	"github.com/zorilla-p2p/zorilla/job/proto"
)

// TestLeaseRenew keeps a committed lease's hold under a new key for a
// retry: an offer again, with the job's priority and need, its run's
// marks gone; the slots never free for another job in between.
func TestLeaseRenew(t *testing.T) {
	p := host()
	p.MaxPriority = 5
	l, clk := newTable(t, p)
	need := proto.Need{Job: "ja", N: 4, R: 1, Priority: 2, MemPerProc: 1 << 20, Deadline: 4 * time.Minute}
	d, ls, err := l.Admit("alice", need, leaseTTL(need))
	if err != nil || !d.Accept {
		t.Fatalf("admit: %+v, %v", d, err)
	}
	if err := l.Commit(ls.Key, "ja"); err != nil {
		t.Fatal(err)
	}
	l.SetFrozen(ls.Key, true)
	l.SetUsed("ja", 3<<20)
	clk.Add(time.Hour)
	nl, err := l.Renew(ls.Key)
	if err != nil {
		t.Fatal(err)
	}
	if nl.Key == ls.Key || nl.Committed || nl.Frozen || nl.Slots != 4 || nl.Cores != 4 || nl.Memory != 4<<20 ||
		nl.Priority != 2 || nl.Need.Priority != 2 || !nl.Expires.Equal(clk.Now().Add(need.Deadline+commitMargin)) {
		t.Fatalf("renewed %+v", nl)
	}
	if _, ok := l.Get(ls.Key); ok {
		t.Fatal("the old key still names a lease")
	}
	if got, ok := l.ByJob("ja"); !ok || got.Key != nl.Key || l.MemHold("ja").Used != 0 {
		t.Fatalf("ByJob %+v, %v; memory %+v", got, ok, l.MemHold("ja"))
	}
	if _, err := l.Reserve("jb", "bob", 1, 1, 0, 0); !errors.Is(err, ErrCapacity) {
		t.Fatalf("another job took the renewed slots: %v", err)
	}
	if _, err := l.Renew(ls.Key); !errors.Is(err, ErrNoLease) {
		t.Fatalf("renew of a key used: %v", err)
	}
}

// TestLeaseRenewUnderALowerPolicy ends a lease that no longer fits the
// owner's policy rather than keep it.
func TestLeaseRenewUnderALowerPolicy(t *testing.T) {
	l, _ := newTable(t, host())
	ls, err := l.Reserve("ja", "alice", 4, 4, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	p := host()
	p.Cores, p.MaxProcs = 2, 2
	if err := l.SetPolicy(p); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Renew(ls.Key); !errors.Is(err, ErrCapacity) {
		t.Fatalf("renew past the policy: %v", err)
	}
	if _, ok := l.ByJob("ja"); ok {
		t.Fatal("a lease that does not fit was kept")
	}
}
